"""Semantic-aware fairness of recognition and of judged replies (semantic-aware mixed-effects paper
§III-V): one case per model x corpus x dimension, judged on the group ratio of expected WER, or of mean
judge score (with --judge), and its confidence interval."""


def test_wer_ratio(wer_ratio_case, assess):
    assess(wer_ratio_case)


def test_score_ratio(score_ratio_case, assess):
    assess(score_ratio_case)
