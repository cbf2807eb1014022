"""BASIS-Bench checks (BASIS-Bench §3): stereotypical bias, personalization, demographic classification and
robustness, on the BASIS item suite (``--basis-suite``, default the shipped demo suite).

Each case fails when its value breaks the threshold in thresholds.yaml (or, given --baseline, on a
significant regression against the baseline checkpoint); the message says which and why. The functions are
made by :func:`harness.gate_tests.gate_functions`.
"""

from harness.gate_tests import gate_functions

_functions = gate_functions("basis")
globals().update(_functions)
__all__ = list(_functions)
