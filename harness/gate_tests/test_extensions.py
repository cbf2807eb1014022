"""Checks added by other packages (entry-point group ``lalm_fairness.checks``) that name no shipped gate
module: one test function each, made by :func:`harness.gate_tests.gate_functions`."""

from harness.gate_tests import gate_functions

globals().update(gate_functions("extensions"))
__all__ = list(gate_functions("extensions"))
