"""Checks added by other packages (entry-point group ``lalm_fairness.checks``) that name no shipped gate
module: one test function each, made by :func:`harness.gate_tests.gate_functions`."""

from harness.gate_tests import gate_functions

_functions = gate_functions("extensions")
globals().update(_functions)
__all__ = list(_functions)
