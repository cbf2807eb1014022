"""The view of the personalization check: Table 7 of accuracy by group and mode, group and mode-effect plots, and
the Pareto plot of speech-implicit personalization against mean ICAT (BASIS-Bench Fig. 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    basis_view,
    gap_sections,
    legacy_accuracy_headline,
    mode_effect_sections,
)
from harness.checks.personalization.record import PersonalizationRecord
from harness.core.modes import PARETO_MODE, PARETO_MODES, PERSONALIZATION_MODES
from harness.display.plots import PALETTE, text_width

LABEL_STEP = 14
"""The least vertical distance, in pixels, between two labels of the Pareto plot's label column."""


def section_context(records: Sequence[PersonalizationRecord]) -> dict[str, Any]:
    return {
        **gap_sections(records, PERSONALIZATION_MODES, "accuracy", "min_accuracy", "accuracy (%)"),
        **mode_effect_sections(records, "percentage points"),
        "pareto": pareto_plot(records),
        "table_ten": table_ten(records),
    }


def pareto_plot(records: Sequence[PersonalizationRecord], width: int = 420, height: int = 300) -> dict[str, Any] | None:
    """Geometry of the personalization (y) vs mean ICAT (x) scatter, both 0-100, as Figure 2 (centre) draws
    it: each model and dimension in speech-implicit (hollow) and speech-explicit (filled), a line from the
    one to the other, and each dimension's Pareto frontier over the speech-implicit points (points no other
    point beats on both axes). Each hollow point is labelled with its model's key (``M1``, ``M2``, ... in record
    order), its dimension and both values, in a column right of the plot (under the dimensions' legend) and
    joined to its point by a faint leader, labels at least :data:`LABEL_STEP` px apart in the order of their points'
    heights; ``model_keys`` spells the keys out, so that no label is drawn over a mark."""
    points = [
        {
            "model": r.model,
            "dimension": r.dimension,
            "mode": r.variant,
            "icat": r.stereotype_icat,
            "accuracy": r.value,
            "passed": r.passed,
            "hollow": r.variant == PARETO_MODE,
        }
        for r in records
        if r.variant in PARETO_MODES and r.stereotype_icat is not None and r.value is not None
    ]
    if not points:
        return None
    left, right, top, bottom = 50, 20, 20, 45
    plot_w, plot_h = width - left - right, height - top - bottom
    dimensions = list(dict.fromkeys(p["dimension"] for p in points))
    colours = {d: PALETTE[i % len(PALETTE)] for i, d in enumerate(dimensions)}
    keys = {model: f"M{index}" for index, model in enumerate(dict.fromkeys(p["model"] for p in points), start=1)}
    for p in points:
        p["x"] = round(left + p["icat"] / 100 * plot_w, 1)
        p["y"] = round(top + (1 - p["accuracy"] / 100) * plot_h, 1)
        p["colour"] = colours[p["dimension"]]
        p["key"] = keys[p["model"]]
    label_x = left + plot_w + 24
    legend = [{"dimension": d, "colour": colours[d], "y": top + LABEL_STEP * i + 8} for i, d in enumerate(dimensions)]
    next_y = top + LABEL_STEP * len(dimensions) + 8 + LABEL_STEP / 2
    labels = []
    for p in sorted((p for p in points if p["hollow"]), key=lambda p: (p["y"], p["x"])):
        text = f"{p['key']} · {p['dimension']}: ICAT {p['icat']:.1f}, accuracy {p['accuracy']:.1f}"
        label_y = max(p["y"] + 4, next_y)
        next_y = label_y + LABEL_STEP
        labels.append({"text": text, "y": label_y, "colour": p["colour"], "point_x": p["x"] + 6, "point_y": p["y"]})
    label_width = max([text_width(label["text"]) for label in labels] + [0]) + 16
    by_key = {(p["model"], p["dimension"], p["mode"]): p for p in points}
    shifts = [
        {"x1": start["x"], "y1": start["y"], "x2": end["x"], "y2": end["y"], "colour": start["colour"]}
        for (model, dimension, mode), start in by_key.items()
        if mode == PARETO_MODE and (end := by_key.get((model, dimension, PARETO_MODES[1]))) is not None
    ]
    frontiers = []
    for dimension in dimensions:
        members = [p for p in points if p["dimension"] == dimension and p["hollow"]]
        front = [
            p
            for p in members
            if not any(
                q is not p
                and q["icat"] >= p["icat"]
                and q["accuracy"] >= p["accuracy"]
                and (q["icat"] > p["icat"] or q["accuracy"] > p["accuracy"])
                for q in members
            )
        ]
        front.sort(key=lambda p: p["icat"])
        frontiers.append({"colour": colours[dimension], "points": " ".join(f"{p['x']},{p['y']}" for p in front)})
    ticks = [
        {"value": v, "x": round(left + v / 100 * plot_w, 1), "y": round(top + (1 - v / 100) * plot_h, 1)}
        for v in range(0, 101, 25)
    ]
    return {
        "width": label_x + label_width,
        "height": max(height, round(next_y)),
        "left": left,
        "top": top,
        "right_x": left + plot_w,
        "bottom_y": top + plot_h,
        "points": points,
        "shifts": shifts,
        "frontiers": frontiers,
        "ticks": ticks,
        "legend": legend,
        "legend_x": label_x + 4,
        "labels": labels,
        "label_x": label_x,
        "model_keys": [{"key": key, "model": model} for model, key in keys.items()],
        "modes": PARETO_MODES,
        "mid_x": left + plot_w / 2,
        "mid_y": top + plot_h / 2,
    }


def table_ten(records: Sequence[PersonalizationRecord]) -> list[dict[str, Any]]:
    """Table 10's layout: per dimension, rows (mode, item set, group) of accuracy, one column per model."""
    order = {mode: position for position, mode in enumerate(PERSONALIZATION_MODES)}
    blocks = []
    for dimension in dict.fromkeys(r.dimension for r in records):
        subset = [r for r in records if r.dimension == dimension and r.per_set]
        if not subset:
            continue
        models = list(dict.fromkeys(r.model for r in subset))
        cells = {(r.model, r.variant, e.set, e.group): e.accuracy for r in subset for e in r.per_set}
        keys = sorted(
            {(r.variant, e.set, e.group) for r in subset for e in r.per_set},
            key=lambda key: (order.get(key[0], len(order)), key[1], key[2]),
        )
        rows = [
            {"mode": mode, "set": name, "group": group, "cells": [cells.get((m, mode, name, group)) for m in models]}
            for mode, name, group in keys
        ]
        blocks.append({"dimension": dimension, "models": models, "rows": rows})
    return blocks


VIEW = basis_view("personalization", "personalization", section_context, legacy_accuracy_headline)
