"""The view of the counterfactual check: per case, the voice effect beside the artifact measure and the perceived
shares, from counterfactual records alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.counterfactual.record import CounterfactualRecord
from harness.checks.view import CheckView
from harness.display.text import case_anchor, fmt_number

BARS = {"max_ntvd": ("nTVD", ""), "max_wer_difference": ("|WER difference|", " points"), "max_stereotype_shift": ("|stereotype share change|", " points")}  # fmt: skip


def case_rows(records: Sequence[CounterfactualRecord]) -> list[dict[str, Any]]:
    """One row per case: model, source, variant, effect, p, artifact, perceived shares, verdict."""
    return [
        {
            "anchor": case_anchor(record),
            "model": record.model,
            "corpus": record.corpus,
            "variant": record.variant,
            "kind": record.kind,
            "effect": record.effect,
            "p": record.p,
            "per_direction": record.per_direction,
            "artifact": (record.artifact or {}).get("value"),
            "perceived": record.perceived,
            "passed": record.passed,
        }
        for record in records
    ]


def section_context(records: Sequence[CounterfactualRecord]) -> dict[str, Any]:
    return {"rows": case_rows(records)}


def magnitude_rule(threshold: Mapping[str, Any]) -> str:
    if threshold.get("rule") == "significance":
        return "any significant effect"
    for key, (measure, unit) in BARS.items():
        if key in threshold:
            return f"{measure} > {threshold[key]:g}{unit}"
    return "its bar"


def magnitude_margin(threshold: Mapping[str, Any], estimate: float) -> float | None:
    """(bar - |estimate|) / bar."""
    bar = next((float(threshold[key]) for key in BARS if key in threshold), None)
    return None if not bar else (bar - abs(estimate)) / bar


def legacy_headline(record: CounterfactualRecord) -> dict[str, str]:
    return {
        "value": f"effect {fmt_number(record.effect, 2)}",
        "threshold": magnitude_rule(record.threshold),
        "uncertainty": "",
    }


def legacy_margin(record: CounterfactualRecord) -> float | None:
    return None if record.effect is None else magnitude_margin(record.threshold, record.effect)


VIEW = CheckView(
    title="Counterfactual voice tests: the same recording in another voice",
    label="counterfactual",
    template="counterfactual.html.j2",
    context=section_context,
    magnitude_rule=magnitude_rule,
    magnitude_margin=magnitude_margin,
    legacy_headline=legacy_headline,
    legacy_margin=legacy_margin,
    estimate_digits=2,
)
