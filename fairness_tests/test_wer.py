"""Semantic-aware WER fairness (semantic-aware mixed-effects paper §III-V): one case per model x corpus x
dimension, judged on the expected-WER ratio between groups and its confidence interval."""


def test_wer_ratio(wer_ratio_case, judge):
    judge(wer_ratio_case)
