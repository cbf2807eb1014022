"""The view the ratio checks share: one forest plot per case, and a ratio's headline and margin in words."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from harness.checks.semantic_aware.record import RatioRecord
from harness.checks.view import CheckView
from harness.display.decisions import one_line, other_test
from harness.display.plots import forest_plot, pca_scatter
from harness.display.text import case_anchor, ci_words, decision_text, floor_lines, fmt_number

PAPER_ROW_LABELS = (
    ("vanilla", "Vanilla Estimation"),
    ("regression w/o speaker w/o semantics", "Regression w/o Spk. w/o Sem."),
    ("regression w/ speaker w/o semantics", "Regression w/ Spk. w/o Sem."),
    ("regression w/ speaker w/ semantics", "Spk. Sem.-Aware"),
    ("regression w/o speaker w/ semantics", "Semantic-Aware"),
)
"""Each method row's name in the paper's Tables III-V."""

INTERVAL_WORDS = {
    "linearised t": "linearised t over speakers",
    "bootstrap": "bootstrap",
    "delta": "delta method",
}


def paper_row_label(method: str) -> str:
    """The paper's name of a method row (``regression w/ speaker w/ semantics: Embed-AGG`` -> ``Spk. Sem.-Aware:
    Embed-AGG``)."""
    base, _, embedding = method.partition(": ")
    for name, label in PAPER_ROW_LABELS:
        if base == name:
            return f"{label}: {embedding}" if embedding else label
    return method


def interval_words(row: Mapping[str, Any]) -> str:
    """What a row's interval is, in words."""
    kind = str(row.get("ci_method") or "")
    return INTERVAL_WORDS.get(kind, kind or "–")


def semantic_figures(record: RatioRecord) -> list[Markup]:
    """The paper's Fig. 1 for each embedding of the case: its utterances on the first two principal components,
    coloured by group (inline SVG)."""
    figures = []
    for name, figure in (record.semantics.get("pca") or {}).items():
        figures.append(
            Markup(
                pca_scatter(
                    figure["groups"],
                    title=f"{name}: first two principal components by {record.dimension}",
                    explained=figure.get("explained_variance"),
                )
            )
        )
    return figures


def section_context(records: Sequence[RatioRecord], value_name: str) -> dict[str, Any]:
    """Per case (by id): its forest plot (:func:`harness.display.plots.forest_plot`), the paper's Fig. 1 per
    embedding, anchor and decision (in one line, and in full)."""
    return {
        "cases": [
            {
                "record": record,
                "anchor": case_anchor(record),
                "forest": forest_plot(record, value_name),
                "pca": semantic_figures(record),
                "decision": decision_text(record.decision),
                "decision_line": one_line(record, magnitude_rule(record), digits=3),
                "other_test": other_test(record, magnitude_rule(record), digits=3),
                "floors": floor_lines(record.floors),
                "row_label": paper_row_label,
                "interval_words": interval_words,
            }
            for record in sorted(records, key=lambda record: record.id)
        ]
    }


def magnitude_rule(record: RatioRecord) -> str:
    threshold = record.threshold
    return f"ratio outside [{threshold.lower:g}, {threshold.upper:g}]"


def magnitude_margin(record: RatioRecord, estimate: float) -> float | None:
    """ln distance of the ratio to the nearer bound, over ln(upper)."""
    if estimate <= 0:
        return None
    threshold = record.threshold
    return min(math.log(estimate / threshold.lower), math.log(threshold.upper / estimate)) / (
        math.log(threshold.upper) or 1.0
    )


def deciding_comparison(record: RatioRecord) -> dict[str, Any] | None:
    """The comparison whose judged ratio is the record's value (the failing one first)."""
    comparisons = sorted(record.comparisons, key=lambda c: not c.get("failed"))
    for comparison in comparisons:
        for method in comparison["methods"]:
            if method["method"] == comparison.get("judged_method") and method.get("ratio") == record.value:
                return comparison | {"row": method}
    return None


def legacy_headline(record: RatioRecord, quantity: str) -> dict[str, str]:
    threshold = record.threshold
    comparison = deciding_comparison(record)
    row = (comparison or {}).get("row") or {
        "ci_low": record.ci[0] if record.ci else None,
        "ci_high": record.ci[1] if record.ci else None,
    }
    where = f" ({comparison['comparison']}, {comparison['judged_method']})" if comparison else ""
    bounds = f"[{threshold.lower:g}, {threshold.upper:g}]"
    text = {"ci": "the 95% CI excludes 1", "bounds": f"the ratio lies outside {bounds}"}.get(
        threshold.rule, f"the 95% CI excludes 1 and the ratio lies outside {bounds}"
    )
    return {
        "value": f"{quantity} {fmt_number(record.value, 3)}{where}",
        "threshold": text,
        "uncertainty": ci_words(row, 3),
    }


def legacy_margin(record: RatioRecord) -> float | None:
    """ln distance of the ratio to the nearer bound and of the CI end nearer 1 to 1 (how far the CI must move
    to exclude 1), each over ln(upper), the larger under rule ``both``."""
    threshold, value = record.threshold, record.value
    if value <= 0:
        return None
    scale = math.log(threshold.upper) or 1.0
    bounds = magnitude_margin(record, value)
    low, high = (record.ci or [None, None]) + [None] * (2 - len(record.ci or []))
    interval = math.inf if low is None or high is None or low <= 0 else min(-math.log(low), math.log(high)) / scale
    return {"bounds": bounds, "ci": interval}.get(threshold.rule, max(bounds, interval))


def ratio_view(*, title: str, label: str, template: str, quantity: str) -> CheckView:
    """The view of a ratio check whose value is a ``quantity`` (e.g. "expected-WER ratio")."""
    return CheckView(
        title=title,
        label=label,
        template=template,
        context=lambda records: section_context(records, quantity),
        magnitude_rule=magnitude_rule,
        magnitude_margin=magnitude_margin,
        legacy_headline=lambda record: legacy_headline(record, quantity),
        legacy_margin=legacy_margin,
        estimate_digits=3,
    )
