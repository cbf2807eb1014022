"""Judge-score fairness: the group ratio of mean LLM-judge scores (semantic-aware mixed-effects paper §V)."""
