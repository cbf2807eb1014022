"""VIBE open-ended bias checks (VIBE §II-D): one case per model x task x demographic dimension.

A case fails when its nTVD breaks the threshold in thresholds.yaml (by default: nTVD above max_ntvd and
significant under the gate's decision rule), or, given --baseline, when the candidate is significantly more
biased than the baseline checkpoint. The functions are made by :func:`harness.gate_tests.gate_functions`.
"""

from harness.gate_tests import gate_functions

_functions = gate_functions("vibe")
globals().update(_functions)
__all__ = list(_functions)
