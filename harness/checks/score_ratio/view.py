"""The view of the judge-score-ratio check: the shared ratio view (:mod:`harness.checks.semantic_aware.view`)."""

from harness.checks.semantic_aware.view import ratio_view

VIEW = ratio_view(
    title="Judge-score fairness: ratio of mean judge scores",
    label="judge-score ratio",
    template="score_ratio.html.j2",
    quantity="judge-score ratio",
)
