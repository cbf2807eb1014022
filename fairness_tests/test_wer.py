"""Semantic-aware WER fairness (semantic-aware mixed-effects paper §III-V): one case per model x corpus x
dimension, judged on the expected-WER ratio between groups and its confidence interval."""

import pytest


def test_wer_ratio(wer_ratio_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(wer_ratio_case)
    record_verdict(verdict)
    if not verdict.passed:
        pytest.fail(verdict.message, pytrace=False)
