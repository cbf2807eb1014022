"""What the two semantic-aware checks (``wer_ratio``, ``score_ratio``) share: their record, the spoken replies and
semantic covariates they are fitted on, and their view (semantic-aware mixed-effects paper §III-V)."""
