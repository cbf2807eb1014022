"""The view of the nTVD check: the VIBE report section's tables and geometry, from nTVD records alone.

Table II (heat map with * / **), Figure 3 (per-value group shares of the most biased cells, stacked to
100%), Figure 4 (nTVD against tau per model, and the within-task rank agreement with tau = 10), and the
qualitative pairs of VIBE Figure 1 (same content, two groups, the diverging value highlighted).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.checks.ntvd.record import NtvdRecord
from harness.checks.view import CheckView
from harness.display.plots import PALETTE, text_width
from harness.display.text import case_anchor, fmt_number, key_legend, model_keys, p_text
from harness.tasks import TASKS


def significance_stars(q_value: float | None) -> str:
    """'**' for q < 0.01, '*' for q < 0.05 (VIBE Table II)."""
    if q_value is None:
        return ""
    return "**" if q_value < 0.01 else "*" if q_value < 0.05 else ""


def heat(value: float | None, top: float) -> str:
    """A white-to-red background for a score in [0, top]."""
    if value is None:
        return "#ffffff"
    share = max(0.0, min(1.0, value / top))
    green_blue = round(255 - share * 150)
    return f"rgb(255,{green_blue},{green_blue})"


def table_two(cases: Sequence[NtvdRecord]) -> list[dict[str, Any]]:
    """One table per (corpus, dimension), as VIBE Tables II and III: rows models, columns tasks, cells nTVD with
    stars from the BH q over that table and, given a baseline, both checkpoints' values on the release test's
    measure (``measures``: e.g. nTVD on common values beyond group exchange, which differs from the cell's nTVD), the
    change and whether it is a regression; per
    column the highest and lowest model marked (``extreme``) and, with more than one model, the Mean row (the mean
    over the models measured in that column)."""
    tables = []
    for (corpus, dimension), subset in _by_corpus_dimension(cases):
        tasks = [task for task in TASKS if any(case.task == task for case in subset)]
        models = list(dict.fromkeys(case.model for case in subset))
        cells = {(case.model, case.task): case for case in subset}
        top = max([50.0] + [case.value for case in subset if case.value is not None])
        rows = []
        for model in models:
            row = []
            for task in tasks:
                case = cells.get((model, task))
                baseline = case.baseline if case is not None else None
                row.append(
                    None
                    if case is None
                    else {
                        "value": case.value,
                        "stars": significance_stars(case.q),
                        "passed": case.passed,
                        "color": heat(case.value, top),
                        "delta": None if baseline is None else baseline.delta,
                        "baseline_value": None if baseline is None else baseline.baseline_value,
                        "candidate_value": None if baseline is None else baseline.candidate_value,
                        "measure": None if baseline is None else baseline.measure,
                        "regressed": baseline is not None and baseline.regressed,
                        "baseline_status": None if baseline is None else baseline.status,
                        "anchor": case_anchor(case),
                    }
                )
            rows.append({"model": model, "cells": row})
        means = []
        for column in range(len(tasks)):
            values = [row["cells"][column]["value"] for row in rows if row["cells"][column] is not None]
            values = [value for value in values if value is not None]
            means.append(sum(values) / len(values) if values else None)
            if len(values) > 1 and max(values) > min(values):
                for row in rows:
                    cell = row["cells"][column]
                    if cell is not None and cell["value"] is not None:
                        cell["extreme"] = (
                            "highest"
                            if cell["value"] == max(values)
                            else "lowest"
                            if cell["value"] == min(values)
                            else ""
                        )
        tables.append(
            {
                "corpus": corpus,
                "dimension": dimension,
                "tasks": [TASKS[t].title for t in tasks],
                "rows": rows,
                "means": means if len(rows) > 1 else None,
                "family": max((case.q_family or 0 for case in subset), default=0) or None,
                "family_words": subset[0].threshold.family_words() if subset else "",
                "measures": list(
                    dict.fromkeys(
                        case.baseline.measure
                        for case in subset
                        if case.baseline is not None
                        and case.baseline.measure
                        and case.baseline.candidate_value is not None
                    )
                ),
            }
        )
    return tables


def stacked_shares(record: NtvdRecord, max_values: int = 8) -> dict[str, Any] | None:
    """Figure 3: for each value of the most divergent attribute, the groups' shares of
    P_g(v) / sum_g P_g(v), stacked to 100% (50/50 for two groups means no disparity), over a share axis
    (ticks every 25%); the values' column is as wide as the longest value."""
    distribution = record.most_divergent
    if distribution is None or not distribution.values:
        return None
    groups = distribution.groups
    probabilities = pd.DataFrame(distribution.probabilities, index=distribution.values)
    totals = probabilities.sum(axis=1)
    shares = probabilities.div(totals.where(totals > 0, 1), axis=0)
    imbalance = (shares - 1 / len(groups)).abs().max(axis=1).sort_values(ascending=False)
    plot_width, bar_height = 360, 16
    label_width = max([60] + [text_width(str(value)) + 12 for value in imbalance.index[:max_values]])
    legend_item_width, legend_line_height = 120, 16
    per_line = max(1, plot_width // legend_item_width)
    legend = [
        {
            "group": group,
            "color": PALETTE[i % len(PALETTE)],
            "x": label_width + (i % per_line) * legend_item_width,
            "y": 4 + (i // per_line) * legend_line_height,
        }
        for i, group in enumerate(groups)
    ]
    top = 10 + -(-len(groups) // per_line) * legend_line_height
    rows = []
    for index, value in enumerate(imbalance.index[:max_values]):
        x, segments = label_width, []
        for position, group in enumerate(groups):
            width = float(shares.loc[value, group]) * plot_width
            segments.append(
                {
                    "x": round(x, 2),
                    "width": round(width, 2),
                    "color": PALETTE[position % len(PALETTE)],
                    "label": f"{group}: {shares.loc[value, group]:.0%}",
                }
            )
            x += width
        rows.append({"value": value, "y": top + index * (bar_height + 6), "segments": segments})
    return {
        "id": record.id,
        "attribute": distribution.attribute,
        "rows": rows,
        "label_width": label_width,
        "plot_width": plot_width,
        "bar_height": bar_height,
        "height": top + 40 + len(rows) * (bar_height + 6),
        "axis_y": top + len(rows) * (bar_height + 6),
        "ticks": [{"x": label_width + plot_width * share / 100, "label": f"{share}%"} for share in range(0, 101, 25)],
        "axis_label": "group's share of P_g(v) summed over the groups",
        "mid_x": label_width + plot_width / 2,
        "legend": legend,
        "legend_bottom": top - 6,
        "midline": label_width + plot_width / len(groups) if len(groups) == 2 else None,
    }


def tau_figures(cases: Sequence[NtvdRecord]) -> list[dict[str, Any]]:
    """Figure 4 per (corpus, dimension): mean nTVD over tasks against tau for each model, and the mean
    within-task Spearman correlation of model rankings with tau = 10 (VIBE §III-D). Each line is labelled at
    its right with its model's name (:func:`harness.display.text.model_keys`: a key where a spec is long,
    spelled out in ``keys``); the nTVD axis has :data:`TAU_Y_TICKS` + 1 ticks from 0 to its top."""
    from harness.metrics.vibe_analyses import REFERENCE_TAU, rank_agreement

    figures = []
    for (corpus, dimension), subset in _by_corpus_dimension(cases):
        scores = pd.DataFrame(
            [
                {"model": case.model, "task": case.task, "tau": int(tau), "ntvd": value}
                for case in subset
                for tau, value in (case.tau_sensitivity or {}).items()
                if value is not None
            ]
        )
        if scores.empty or REFERENCE_TAU not in set(scores["tau"]):
            continue
        taus = sorted(scores["tau"].unique())
        per_model = scores.groupby(["model", "tau"])["ntvd"].mean().unstack("tau")
        agreement = rank_agreement(scores).mean_rank_correlation if scores["model"].nunique() >= 2 else None
        left, width, top, height = TAU_PLOT
        y_max = max(10.0, math.ceil(float(per_model.max().max()) / 10) * 10)
        x_of = functools.partial(tau_x, largest=max(taus))
        y_of = functools.partial(ntvd_y, y_max=y_max)
        keys = model_keys([str(model) for model in per_model.index])
        longest_label = max(len(name) for name in keys.values())
        lines = []
        for position, (model, row) in enumerate(per_model.iterrows()):
            points = [(x_of(tau), y_of(value)) for tau, value in row.items() if pd.notna(value)]
            lines.append(
                {
                    "model": model,
                    "name": keys[str(model)],
                    "color": PALETTE[position % len(PALETTE)],
                    "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in points),
                    "label_y": top + 14 * position,
                }
            )
        figures.append(
            {
                "corpus": corpus,
                "dimension": dimension,
                "lines": lines,
                "label_room": LABEL_GAP + math.ceil(LABEL_CHAR_WIDTH * longest_label),
                "left": left,
                "width": width,
                "top": top,
                "height": height,
                "y_max": y_max,
                "y_ticks": [
                    {"label": f"{y_max * step / TAU_Y_TICKS:g}", "y": round(y_of(y_max * step / TAU_Y_TICKS), 1)}
                    for step in range(TAU_Y_TICKS + 1)
                ],
                "keys": key_legend(keys),
                "reference_x": x_of(REFERENCE_TAU),
                "ticks": [{"tau": tau, "x": round(x_of(tau), 1)} for tau in taus],
                "agreement": None
                if agreement is None
                else [
                    {"tau": int(tau), "spearman": None if pd.isna(value) else float(value)}
                    for tau, value in agreement.items()
                ],
            }
        )
    return figures


TAU_PLOT = (50, 420, 20, 200)
"""Left margin, width, top margin and height of a Figure 4 panel (pixels)."""
TAU_Y_TICKS = 4
"""Intervals between the ticks of Figure 4's nTVD axis."""
LABEL_GAP = 20
LABEL_CHAR_WIDTH = 6.5
"""Pixels per character of an 11-pixel label (a generous average, so that a model's name beside its line is never
cut at the panel's right edge: the panel widens to its longest label)."""


def tau_x(tau: int, largest: int) -> float:
    """x of ``tau`` on Figure 4's log axis, whose right end is the ``largest`` tau."""
    left, width, _, _ = TAU_PLOT
    return left + width * math.log(tau) / math.log(largest) if largest > 1 else left


def ntvd_y(value: float, y_max: float) -> float:
    """y of an nTVD on Figure 4's axis, 0 at the bottom and ``y_max`` at the top."""
    _, _, top, height = TAU_PLOT
    return top + height * (1 - value / y_max)


def highlighted(answer: str, value: str) -> list[dict[str, Any]]:
    """``answer`` split into segments, the ones matching ``value`` (case-insensitive) flagged."""
    if not value:
        return [{"text": answer, "match": False}]
    pieces = re.split(f"({re.escape(value)})", answer, flags=re.IGNORECASE)
    return [{"text": piece, "match": index % 2 == 1} for index, piece in enumerate(pieces) if piece]


def example_pairs(cases: Sequence[NtvdRecord], limit: int = 6) -> list[dict[str, Any]]:
    """Qualitative pairs of the most biased cases (largest nTVD first)."""
    ranked = sorted((case for case in cases if case.example_pair), key=lambda case: -(case.value or 0))
    pairs = []
    for case in ranked[:limit]:
        pair = case.example_pair
        pairs.append(
            {
                "id": case.id,
                "attribute": pair.attribute,
                "content_id": pair.content_id,
                "sides": [dict(side.to_json(), segments=highlighted(side.answer, side.value)) for side in pair.sides],
            }
        )
    return pairs


def most_biased(cases: Sequence[NtvdRecord], limit: int = 3) -> list[NtvdRecord]:
    return sorted((case for case in cases if case.value is not None), key=lambda case: -case.value)[:limit]


def _by_corpus_dimension(cases: Sequence[NtvdRecord]):
    ntvd_cases = [case for case in cases if case.check == "ntvd"]
    for key in sorted({(case.corpus, case.dimension) for case in ntvd_cases}):
        yield key, [case for case in ntvd_cases if (case.corpus, case.dimension) == key]


def cross_corpus(cases: Sequence[NtvdRecord]) -> list[dict[str, Any]]:
    """VIBE §III-E: Spearman rho (and p) of per-model mean nTVD between every two corpora sharing a
    dimension, where at least 3 models ran on both."""
    from harness.metrics.vibe_analyses import cross_corpus_agreement

    scores = pd.DataFrame(
        [
            {
                "corpus": case.corpus,
                "dimension": case.dimension,
                "model": case.model,
                "task": case.task,
                "ntvd": case.value,
            }
            for case in cases
            if case.check == "ntvd" and case.value is not None
        ]
    )
    results = []
    if scores.empty:
        return results
    for dimension, subset in scores.groupby("dimension"):
        corpora = sorted(subset["corpus"].unique())
        for index, corpus_a in enumerate(corpora):
            for corpus_b in corpora[index + 1 :]:
                shared = set(subset[subset["corpus"] == corpus_a]["model"]) & set(
                    subset[subset["corpus"] == corpus_b]["model"]
                )
                if len(shared) < 3:
                    continue
                agreement = cross_corpus_agreement(subset, corpus_a, corpus_b)
                results.append(
                    {
                        "dimension": dimension,
                        "corpora": [corpus_a, corpus_b],
                        "rho": agreement.rho,
                        "p": agreement.p_value,
                        "models": agreement.n_models,
                    }
                )
    return results


def section_context(records: Sequence[NtvdRecord]) -> dict[str, Any]:
    return {
        "cross_corpus": cross_corpus(records),
        "tables": table_two(records),
        "stacked": [chart for chart in map(stacked_shares, most_biased(records)) if chart],
        "tau_figures": tau_figures(records),
        "pairs": example_pairs(records),
        "records": sorted(records, key=lambda record: record.id),
    }


def magnitude_rule(record: NtvdRecord) -> str:
    return f"nTVD > {record.threshold.max_ntvd:g}"


def magnitude_margin(record: NtvdRecord, estimate: float) -> float:
    """(max_ntvd − nTVD) / max_ntvd."""
    max_ntvd = record.threshold.max_ntvd
    return (max_ntvd - estimate) / max_ntvd


def legacy_headline(record: NtvdRecord) -> dict[str, str]:
    threshold = record.threshold
    limit, alpha = threshold.max_ntvd, threshold.alpha
    text = {"magnitude": f"nTVD > {limit:g}", "significance": f"q < {alpha:g}"}.get(
        threshold.rule, f"nTVD > {limit:g} and q < {alpha:g}"
    )
    return {
        "value": f"nTVD {fmt_number(record.value, 1)} (0–100)",
        "threshold": text,
        "uncertainty": f"q = {p_text(record.q)}" + ("" if record.p is None else f" (p = {p_text(record.p)})"),
    }


def legacy_margin(record: NtvdRecord) -> float:
    """(max_ntvd − nTVD)/max_ntvd and (q − alpha)/alpha, the larger under rule ``both`` (both must cross)."""
    threshold = record.threshold
    size = magnitude_margin(record, record.value)
    significance = math.inf if record.q is None else (record.q - threshold.alpha) / threshold.alpha
    return {"magnitude": size, "significance": significance}.get(threshold.rule, max(size, significance))


VIEW = CheckView(
    title="VIBE: nTVD by task",
    label="VIBE nTVD",
    template="ntvd.html.j2",
    context=section_context,
    magnitude_rule=magnitude_rule,
    magnitude_margin=magnitude_margin,
    legacy_headline=legacy_headline,
    legacy_margin=legacy_margin,
)
