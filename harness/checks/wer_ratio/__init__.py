"""Semantic-aware WER fairness: the group ratio of expected WER (semantic-aware mixed-effects paper §III-V)."""
