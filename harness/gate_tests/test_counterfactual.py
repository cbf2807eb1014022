"""Counterfactual voice tests (issue 39): one case per model x source x variant (a VIBE task, ``asr``, a BASIS
stereotype set) on the voice transform's dimension. A case fails when changing only the voice (the swap arm, beyond
the identity arm's resynthesis) changes the answers by more than the threshold in thresholds.yaml
(``counterfactual``), significantly under the gate's decision rule. The functions are made by
:func:`harness.gate_tests.gate_functions`.
"""

from harness.gate_tests import gate_functions

_functions = gate_functions("counterfactual")
globals().update(_functions)
__all__ = list(_functions)
