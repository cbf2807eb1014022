"""This repository's entry to the gate: the shipped gate module :mod:`harness.gate_tests.test_wer`, collected here."""

from harness.gate_tests.test_wer import test_wer_ratio, test_score_ratio  # noqa: F401
