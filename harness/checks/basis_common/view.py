"""View helpers the BASIS checks share: Table 7 blocks, group and mode-effect plots, and the words of a gap."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness.checks.basis_common.record import GroupGap, ModeRecord
from harness.checks.view import CheckView
from harness.core.json_records import JsonRecord
from harness.display import plots
from harness.display.text import GAP_UNITS, case_anchor, ci_words, fmt_number, key_legend, model_keys
from harness.records import CaseRecord

Records = Sequence[CaseRecord]


def magnitude_rule(record: CaseRecord) -> str:
    return f"|difference| > {record.threshold.max_gap:g} {GAP_UNITS}"


def magnitude_margin(record: CaseRecord, estimate: float) -> float | None:
    """(max_gap − |estimate|) / max_gap."""
    max_gap = record.threshold.max_gap
    return (max_gap - abs(estimate)) / max_gap if max_gap else None


def gap_text(gap: GroupGap | None) -> str:
    """ "gap best − worst v points (95% CI a to b)" of a BASIS case's best and worst group."""
    if gap is None or gap.value is None:
        return "gap not estimable"
    return f"gap {gap.best} − {gap.worst} {gap.value:.1f} {GAP_UNITS} ({ci_words(gap)})"


def record_gap(record: CaseRecord) -> GroupGap | None:
    """The best-worst gap of a BASIS record that states one (classification, personalization, robustness)."""
    gap = getattr(record, "gap", None)
    return gap if isinstance(gap, GroupGap) else None


def row_value(row: Mapping[str, Any] | JsonRecord, name: str) -> Any:
    """The column ``name`` of a per-group row: a row class's attribute (``per_label``'s :class:`LabelAccuracy`) or a
    table row's key (``per_group``); None where it has none."""
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def accuracy_gap_rule(noun: str, minimum: float | None, max_gap: float | None, unit: str) -> str:
    parts = [] if not minimum else [f"{noun} < {minimum:g}{unit}"]
    if max_gap is not None:
        parts.append(f"gap > {max_gap:g} {GAP_UNITS} with its CI above 0")
    return " or ".join(parts)


def legacy_accuracy_headline(record: CaseRecord) -> dict[str, str]:
    threshold = record.threshold
    return {
        "value": f"mean accuracy {fmt_number(record.value, 1)}%",
        "threshold": accuracy_gap_rule("accuracy", threshold.quality_floor, threshold.max_gap, "%"),
        "uncertainty": gap_text(record_gap(record)),
    }


def legacy_floor_gap_margin(record: CaseRecord) -> float | None:
    """The smaller of (value − min)/min and (max_gap − gap)/max_gap."""
    threshold, candidates = record.threshold, []
    minimum = threshold.quality_floor or 0
    if minimum:
        candidates.append((record.value - minimum) / minimum)
    gap = record_gap(record)
    if threshold.max_gap and gap is not None and gap.value is not None:
        candidates.append((threshold.max_gap - gap.value) / threshold.max_gap)
    return min(candidates) if candidates else None


def basis_view(
    name: str,
    subject: str,
    context: Callable[[Records], dict[str, Any]],
    legacy_headline: Callable[[Any], dict[str, str]],
    legacy_margin: Callable[[Any], float | None] = legacy_floor_gap_margin,
) -> CheckView:
    """The view of a BASIS check: section "BASIS-Bench: ``subject``" drawn by ``<name lowercased>.html.j2``, labelled
    "BASIS ``name``", decided on the group gap (:func:`magnitude_rule`, :func:`magnitude_margin`) in points."""
    return CheckView(
        title=f"BASIS-Bench: {subject}",
        label=f"BASIS {name}",
        template=f"{name.lower()}.html.j2",
        context=context,
        magnitude_rule=magnitude_rule,
        magnitude_margin=magnitude_margin,
        legacy_headline=legacy_headline,
        legacy_margin=legacy_margin,
        estimate_unit=" points",
    )


def effect_rows(records: Sequence[ModeRecord]) -> list[dict[str, Any]]:
    """One row per (dimension, model, effect) from any record of that pair (they share the effects), with
    ``interval``: "a to b", or :data:`harness.display.plots.NOT_ESTIMABLE`."""
    rows, seen = [], set()
    for record in records:
        key = (record.dimension, record.model)
        if key in seen:
            continue
        seen.add(key)
        for name, effect in record.mode_effects.effects.items():
            rows.append(
                {
                    "dimension": key[0],
                    "model": key[1],
                    "effect": name,
                    **effect.to_json(),
                    "interval": plots.interval_text(effect),
                    "estimable": plots.interval_estimable(effect),
                }
            )
    return rows


def effect_plots(records: Sequence[ModeRecord], unit: str) -> list[dict[str, Any]]:
    """Per dimension, a dot-and-interval plot of the §3.4 mode effects (one row per model and effect; line at 0)."""
    figures = []
    keys = model_keys([record.model for record in records])
    for dimension in dict.fromkeys(record.dimension for record in records):
        effects = effect_rows([r for r in records if r.dimension == dimension])
        rows = [
            {
                "label": f"{keys[row['model']]} · {row['effect'].replace('_', ' ')}",
                "estimate": {"value": row["estimate"], **row},
            }
            for row in effects
        ]
        figure = plots.dot_interval_plot(
            rows,
            axis_label=f"mode effect ({unit}); 0 = no effect",
            reference=0.0,
            keys=key_legend({row["model"]: keys[row["model"]] for row in effects}),
        )
        if figure:
            figures.append({"dimension": dimension, "figure": figure})
    return figures


def group_plots(
    records: Sequence[CaseRecord],
    *,
    row_keys: Iterable[str],
    cell: str,
    threshold_key: str,
    axis_label: str,
    gap: bool = False,
    groups: str = "per_group",
    group_key: str = "group",
) -> list[dict[str, Any]]:
    """Per dimension, a dot-and-interval plot with one row per model and variant: a dot per entry of the
    record's ``groups`` list (named by ``group_key``, at its ``cell``), the case's value (a square) with the
    mode's bootstrap interval from the mode effects (with ``gap``: no interval of the value; the best-worst
    group gap and its interval in words) and the quality floor (``threshold_key``, schema 2: never a bias fail)
    as a tick. Axis 0-100. Models are named by :func:`harness.display.text.model_keys` and their rows run in
    the keys' order (first appearance)."""
    order = {key: position for position, key in enumerate(row_keys)}
    keys = model_keys([record.model for record in records])
    position = {model: index for index, model in enumerate(keys)}
    figures = []
    for dimension in dict.fromkeys(record.dimension for record in records):
        subset = sorted(
            (r for r in records if r.dimension == dimension),
            key=lambda r: (position[r.model], order.get(r.variant, len(order))),
        )
        rows = []
        for record in subset:
            if gap:
                estimate, text = {"value": record.value}, f"{fmt_number(record.value, 1)}; {gap_text(record.gap)}"
            else:
                effects = record.mode_effects if isinstance(record, ModeRecord) else None
                per_mode = effects.per_mode.get(record.variant) if effects is not None else None
                estimate, text = (
                    {
                        "value": record.value,
                        "ci_low": per_mode.ci_low if per_mode else None,
                        "ci_high": per_mode.ci_high if per_mode else None,
                    },
                    None,
                )
                if per_mode is not None and per_mode.estimable is not None:
                    estimate["estimable"] = per_mode.estimable
            label = keys[record.model] if record.variant is None else f"{keys[record.model]} · {record.variant}"
            rows.append(
                {
                    "label": label,
                    "failed": not record.passed,
                    "anchor": case_anchor(record),
                    "dots": [
                        {"label": row_value(g, group_key), "value": row_value(g, cell)} for g in getattr(record, groups)
                    ],
                    "estimate": estimate,
                    "text": text,
                    "threshold": record.threshold.quality_floor or None,
                }
            )
        figure = plots.dot_interval_plot(
            rows,
            axis_label=axis_label,
            limits=(0.0, 100.0),
            threshold_label=f"{threshold_key}: quality floor (reported, never a bias fail)",
            keys=key_legend({record.model: keys[record.model] for record in subset}),
        )
        if figure:
            figures.append({"dimension": dimension, "figure": figure})
    return figures


def gap_sections(
    records: Records, row_keys: Iterable[str], cell: str, threshold_key: str, axis_label: str, *, gap: bool = False
) -> dict[str, Any]:
    """The sections every variant-split BASIS view opens with, of one per-group ``cell`` over ``row_keys``:
    Table 7 (``blocks``, :func:`table_seven`) and the group plots (``group_plots``, :func:`group_plots`)."""
    return {
        "blocks": table_seven(records, row_keys=row_keys, cell=cell),
        "group_plots": group_plots(
            records, row_keys=row_keys, cell=cell, threshold_key=threshold_key, axis_label=axis_label, gap=gap
        ),
    }


def mode_effect_sections(records: Sequence[ModeRecord], unit: str) -> dict[str, Any]:
    """The §3.4 mode-effect sections of a view in ``unit``: the rows (``effects``), their plots and the unit."""
    return {"effects": effect_rows(records), "effect_plots": effect_plots(records, unit), "unit": unit}


def mean_cells(by_model: dict[str, CaseRecord], models: Sequence[str]) -> list[dict[str, Any]]:
    """A table's ``mean`` row: per model, its case's value and verdict (empty where it has no case)."""
    return [
        {"value": by_model[m].value, "passed": by_model[m].passed} if m in by_model else {"value": None, "passed": None}
        for m in models
    ]


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
            groups = list(
                dict.fromkeys(row_value(g, group_key) for record in by_model.values() for g in record.per_group)
            )
            for group in groups:
                cells = []
                for model in models:
                    rows_of = getattr(by_model.get(model), "per_group", [])
                    found = [g for g in rows_of if row_value(g, group_key) == group]
                    cells.append({"value": row_value(found[0], cell) if found else None, "passed": None})
                rows.append({"variant": variant, "group": group, "cells": cells})
            rows.append(
                {
                    "variant": variant,
                    "group": "mean",
                    "cells": mean_cells(by_model, models),
                }
            )
        blocks.append({"dimension": dimension, "models": models, "rows": rows})
    return blocks
