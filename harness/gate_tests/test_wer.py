"""Semantic-aware fairness of recognition and of judged replies (semantic-aware mixed-effects paper
§III-V): one case per model x corpus x dimension, judged on the group ratio of expected WER, or of mean
judge score (with --judge), and its confidence interval. The functions are made by
:func:`harness.gate_tests.gate_functions`."""

from harness.gate_tests import gate_functions

_functions = gate_functions("wer")
globals().update(_functions)
__all__ = list(_functions)
