"""The view of each check: its report section's title, template and the context the template reads.

A view sees only the check's typed records (:mod:`harness.records`, read back from results.json; never the
gate, the pipeline or a model), so a report renders from results.json alone; templates read their attributes. Templates live in ``templates/checks/``; a check without a view has no
section of its own (its cases still appear in the report's table of every case).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.core import MODES, PARETO_MODE, ROBUSTNESS_TASKS
from harness.records import CaseRecord, ModeRecord, PersonalizationRecord
from harness.report import plots, vibe
from harness.report.plots import forest_plot
from harness.report.summary import case_anchor, decision_text, floor_lines, fmt_number, gap_text
from harness.report.vibe import PALETTE

Records = Sequence[CaseRecord]


@dataclasses.dataclass(frozen=True)
class CheckView:
    title: str
    template: str
    context: Callable[[Records], dict[str, Any]]


def ntvd_context(records: Records) -> dict[str, Any]:
    return {
        "cross_corpus": vibe.cross_corpus(records),
        "tables": vibe.table_two(records),
        "stacked": [chart for chart in map(vibe.stacked_shares, vibe.most_biased(records)) if chart],
        "tau_figures": vibe.tau_figures(records),
        "pairs": vibe.example_pairs(records),
        "records": sorted(records, key=lambda record: record.id),
    }


def ratio_context(records: Records, value_name: str) -> dict[str, Any]:
    """Per case (by id): its forest plot (:func:`harness.report.plots.forest_plot`), anchor and decision."""
    return {"cases": [{"record": record, "anchor": case_anchor(record), "forest": forest_plot(record, value_name),
                       "decision": decision_text(record.decision), "floors": floor_lines(record.floors)}
                      for record in sorted(records, key=lambda record: record.id)]}


def icat_context(records: Records) -> dict[str, Any]:
    return {"blocks": table_seven(records, row_keys=MODES, cell="icat"), "effects": effect_rows(records),
            "group_plots": group_plots(records, row_keys=MODES, cell="icat", threshold_key="min_icat", axis_label="ICAT (0–100, 100 = balanced)"),
            "effect_plots": effect_plots(records, "ICAT points"), "unit": "ICAT points"}


def personalization_context(records: Records) -> dict[str, Any]:
    return {
        "blocks": table_seven(records, row_keys=MODES, cell="accuracy"),
        "effects": effect_rows(records),
        "group_plots": group_plots(records, row_keys=MODES, cell="accuracy", threshold_key="min_accuracy", axis_label="accuracy (%)"),
        "effect_plots": effect_plots(records, "percentage points"), "unit": "percentage points",
        "pareto": pareto_plot(records),
    }


def robustness_context(records: Records) -> dict[str, Any]:
    return {"blocks": table_seven(records, row_keys=ROBUSTNESS_TASKS, cell="score"),
            "group_plots": group_plots(records, row_keys=ROBUSTNESS_TASKS, cell="score", threshold_key="min_score",
                                       axis_label="score (0–100; asr: 100 − WER, sqa: accuracy %)", gap=True)}


def classification_context(records: Records) -> dict[str, Any]:
    models = list(dict.fromkeys(r.model for r in records))
    rows = []
    for dimension in dict.fromkeys(r.dimension for r in records):
        by_model = {r.model: r for r in records if r.dimension == dimension}
        labels = list(dict.fromkeys((e["set"], e["label"]) for r in by_model.values() for e in r.per_label))
        for set_name, label in labels:
            cells = []
            for model in models:
                found = [e for e in getattr(by_model.get(model), "per_label", []) if (e["set"], e["label"]) == (set_name, label)]
                cells.append({"value": found[0]["accuracy"] if found else None, "passed": None})
            rows.append({"dimension": dimension, "set": set_name, "label": label, "cells": cells})
        rows.append({"dimension": dimension, "set": "", "label": "mean",
                     "cells": [{"value": by_model[m].value, "passed": by_model[m].passed} if m in by_model
                               else {"value": None, "passed": None} for m in models]})
    plots_by_label = group_plots(records, row_keys=(), cell="accuracy", threshold_key="min_accuracy", axis_label="accuracy (%)",
                                 gap=True, groups="per_label", group_key="label")
    return {"models": models, "rows": rows, "group_plots": plots_by_label}


VIEWS: dict[str, CheckView] = {
    "ntvd": CheckView("VIBE: nTVD by task", "ntvd.html.j2", ntvd_context),
    "wer_ratio": CheckView("Semantic-aware WER fairness: expected-WER ratio", "wer_ratio.html.j2",
                           functools.partial(ratio_context, value_name="expected-WER ratio")),
    "score_ratio": CheckView("Judge-score fairness: ratio of mean judge scores", "score_ratio.html.j2",
                             functools.partial(ratio_context, value_name="judge-score ratio")),
    "icat": CheckView("BASIS-Bench: stereotypical bias (ICAT)", "icat.html.j2", icat_context),
    "personalization": CheckView("BASIS-Bench: personalization", "personalization.html.j2", personalization_context),
    "classification": CheckView("BASIS-Bench: demographic classification", "classification.html.j2", classification_context),
    "robustness": CheckView("BASIS-Bench: demographic robustness (ASR, spoken QA)", "robustness.html.j2", robustness_context),
}
"""Per check name, in report order."""


def effect_rows(records: Sequence[ModeRecord]) -> list[dict[str, Any]]:
    """One row per (dimension, model, effect) from any record of that pair (they share the effects), with
    ``interval``: "a to b", or :data:`harness.report.plots.NOT_ESTIMABLE`."""
    rows, seen = [], set()
    for record in records:
        key = (record.dimension, record.model)
        if key in seen:
            continue
        seen.add(key)
        for name, effect in record.mode_effects["effects"].items():
            rows.append({"dimension": key[0], "model": key[1], "effect": name, **effect,
                         "interval": plots.interval_text(effect), "estimable": plots.interval_estimable(effect)})
    return rows


def effect_plots(records: Sequence[ModeRecord], unit: str) -> list[dict[str, Any]]:
    """Per dimension, a dot-and-interval plot of the §3.4 mode effects (one row per model and effect; line at 0)."""
    figures = []
    for dimension in dict.fromkeys(record.dimension for record in records):
        rows = [{"label": f"{row['model']} · {row['effect'].replace('_', ' ')}", "estimate": {"value": row["estimate"], **row}}
                for row in effect_rows([r for r in records if r.dimension == dimension])]
        figure = plots.dot_interval_plot(rows, axis_label=f"mode effect ({unit}); 0 = no effect", reference=0.0)
        if figure:
            figures.append({"dimension": dimension, "figure": figure})
    return figures


def group_plots(records: Sequence[CaseRecord], *, row_keys: Iterable[str], cell: str, threshold_key: str, axis_label: str,
                gap: bool = False, groups: str = "per_group", group_key: str = "group") -> list[dict[str, Any]]:
    """Per dimension, a dot-and-interval plot with one row per model and variant: a dot per entry of the
    record's ``groups`` list (named by ``group_key``, at its ``cell``), the case's value (a square) with the
    mode's bootstrap interval from the mode effects (with ``gap``: no interval of the value; the best-worst
    group gap and its interval in words) and the quality floor (``threshold_key``, schema 2: never a bias fail)
    as a tick. Axis 0-100."""
    order = {key: position for position, key in enumerate(row_keys)}
    figures = []
    for dimension in dict.fromkeys(record.dimension for record in records):
        subset = sorted((r for r in records if r.dimension == dimension),
                        key=lambda r: (r.model, order.get(r.variant, len(order))))
        rows = []
        for record in subset:
            if gap:
                estimate, text = {"value": record.value}, f"{fmt_number(record.value, 1)}; {gap_text(record.gap)}"
            else:
                per_mode = (getattr(record, "mode_effects", None) or {}).get("per_mode", {}).get(record.variant) or {}
                estimate, text = {"value": record.value, "ci_low": per_mode.get("ci_low"), "ci_high": per_mode.get("ci_high")}, None
                if "estimable" in per_mode:
                    estimate["estimable"] = per_mode["estimable"]
            label = record.model if record.variant is None else f"{record.model} · {record.variant}"
            rows.append({"label": label, "failed": not record.passed, "anchor": case_anchor(record),
                         "dots": [{"label": g[group_key], "value": g.get(cell)} for g in getattr(record, groups)],
                         "estimate": estimate, "text": text, "threshold": record.threshold.get(threshold_key) or None})
        figure = plots.dot_interval_plot(rows, axis_label=axis_label, limits=(0.0, 100.0),
                                         threshold_label=f"{threshold_key}: quality floor (reported, never a bias fail)")
        if figure:
            figures.append({"dimension": dimension, "figure": figure})
    return figures


def pareto_plot(records: Sequence[PersonalizationRecord], width: int = 420, height: int = 300) -> dict[str, Any] | None:
    """Geometry of the speech-implicit personalization (y) vs mean ICAT (x) scatter, both 0-100, with
    each dimension's Pareto frontier (points no other point beats on both axes)."""
    points = [
        {"model": r.model, "dimension": r.dimension, "icat": r.stereotype_icat, "accuracy": r.value, "passed": r.passed}
        for r in records
        if r.variant == PARETO_MODE and r.stereotype_icat is not None and r.value is not None
    ]
    if not points:
        return None
    left, right, top, bottom = 50, 20, 20, 45
    plot_w, plot_h = width - left - right, height - top - bottom
    dimensions = list(dict.fromkeys(p["dimension"] for p in points))
    colours = {d: PALETTE[i % len(PALETTE)] for i, d in enumerate(dimensions)}
    for p in points:
        p["x"] = round(left + p["icat"] / 100 * plot_w, 1)
        p["y"] = round(top + (1 - p["accuracy"] / 100) * plot_h, 1)
        p["colour"] = colours[p["dimension"]]
    frontiers = []
    for dimension in dimensions:
        members = [p for p in points if p["dimension"] == dimension]
        front = [p for p in members if not any(
            q is not p and q["icat"] >= p["icat"] and q["accuracy"] >= p["accuracy"]
            and (q["icat"] > p["icat"] or q["accuracy"] > p["accuracy"]) for q in members)]
        front.sort(key=lambda p: p["icat"])
        frontiers.append({"colour": colours[dimension], "points": " ".join(f"{p['x']},{p['y']}" for p in front)})
    ticks = [{"value": v, "x": round(left + v / 100 * plot_w, 1), "y": round(top + (1 - v / 100) * plot_h, 1)} for v in range(0, 101, 25)]
    legend = [{"dimension": d, "colour": colours[d], "y": top + 14 * i + 8} for i, d in enumerate(dimensions)]
    return {"width": width, "height": height, "left": left, "top": top, "right_x": left + plot_w, "bottom_y": top + plot_h,
            "points": points, "frontiers": frontiers, "ticks": ticks, "legend": legend, "legend_x": left + 8,
            "mode": PARETO_MODE, "mid_x": left + plot_w / 2, "mid_y": top + plot_h / 2}


def table_seven(
    records: Records, *, row_keys: Iterable[str], cell: str, group_key: str = "group"
) -> list[dict[str, Any]]:
    """One block per dimension: columns are models, rows ``(variant, group)`` from each record's
    ``per_group`` list, then a ``mean`` row with the case's value and verdict.

    ``row_keys`` orders the variants (e.g. :data:`MODES`); ``cell`` names the per-group field shown.
    """
    order = {key: position for position, key in enumerate(row_keys)}
    blocks = []
    for dimension in dict.fromkeys(record.dimension for record in records):
        subset = [record for record in records if record.dimension == dimension]
        models = list(dict.fromkeys(record.model for record in subset))
        variants = sorted({record.variant for record in subset}, key=lambda v: order.get(v, len(order)))
        rows = []
        for variant in variants:
            by_model = {record.model: record for record in subset if record.variant == variant}
            groups = list(dict.fromkeys(g[group_key] for record in by_model.values() for g in record.per_group))
            for group in groups:
                cells = []
                for model in models:
                    found = [g for g in getattr(by_model.get(model), "per_group", []) if g[group_key] == group]
                    cells.append({"value": found[0][cell] if found else None, "passed": None})
                rows.append({"variant": variant, "group": group, "cells": cells})
            rows.append({
                "variant": variant, "group": "mean",
                "cells": [{"value": by_model[m].value, "passed": by_model[m].passed} if m in by_model else {"value": None, "passed": None}
                          for m in models],
            })
        blocks.append({"dimension": dimension, "models": models, "rows": rows})
    return blocks
