"""The report's section of the refusal-gap check, from its records alone."""

from harness.checks.view import CheckView


def gap_rule(record) -> str:
    return f"gap > {record.threshold.max_gap:g} points"


def gap_margin(record, estimate: float) -> float:
    """(max_gap - gap) / max_gap."""
    max_gap = record.threshold.max_gap
    return (max_gap - estimate) / max_gap


VIEW = CheckView(
    title="Refusal gap",
    label="refusal gap",
    template="refusal_gap.html.j2",
    context=lambda records: {"records": sorted(records, key=lambda record: record.id)},
    magnitude_rule=gap_rule,
    magnitude_margin=gap_margin,
    estimate_unit=" points",
)
