"""The view of the WER-ratio check: the shared ratio view (:mod:`harness.checks.semantic_aware.view`)."""

from harness.checks.semantic_aware.view import ratio_view

VIEW = ratio_view(
    title="Semantic-aware WER fairness: expected-WER ratio",
    label="WER ratio",
    template="wer_ratio.html.j2",
    quantity="expected-WER ratio",
)
