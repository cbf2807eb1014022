"""Helpers shared by the BASIS checks: bootstrap seeds, record fields, and the report's Table 7 layout.

Table 7 of BASIS-Bench has one block per axis and dimension, rows ``mode x group`` (or ``label``), one
column per model. :func:`table_seven` builds such a block from results.json records alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.basis import MODES, ModeEffectsResult
from harness.core import finite_or_none

N_BOOT = 2000
"""Speaker-cluster bootstrap resamples for every BASIS interval (count metrics: milliseconds each)."""


def frame_records(frame: pd.DataFrame, index_name: str) -> list[dict[str, Any]]:
    """Rows of a per-group result table as JSON-ready dicts (index under ``index_name``)."""
    out = []
    for key, row in frame.iterrows():
        record = {index_name: key if not isinstance(key, tuple) else "/".join(map(str, key))}
        for column, value in row.items():
            record[str(column)] = int(value) if isinstance(value, (np.integer, int)) and not isinstance(value, bool) else finite_or_none(value)
        out.append(record)
    return out


def effects_records(result: ModeEffectsResult) -> dict[str, Any]:
    """Per-mode estimates and §3.4 effects with their intervals, for a results.json record."""
    return {
        "metric": result.metric,
        "n_boot": result.n_boot,
        "level": result.level,
        "n_speakers": result.n_clusters,
        "per_mode": {
            mode: {"estimate": finite_or_none(row["estimate"]), "ci_low": finite_or_none(row["ci_low"]), "ci_high": finite_or_none(row["ci_high"])}
            for mode, row in result.per_mode.iterrows()
        },
        "effects": {
            name: {"estimate": finite_or_none(row["estimate"]), "ci_low": finite_or_none(row["ci_low"]), "ci_high": finite_or_none(row["ci_high"]),
                   "minuend": row["minuend"], "subtrahend": row["subtrahend"]}
            for name, row in result.effects.iterrows()
        },
    }


def table_seven(
    records: Sequence[Mapping[str, Any]], *, row_keys: Iterable[str], cell: str, group_key: str = "group"
) -> list[dict[str, Any]]:
    """One block per dimension: columns are models, rows ``(variant, group)`` from each record's
    ``per_group`` list, then a ``mean`` row with the case's value and verdict.

    ``row_keys`` orders the variants (e.g. :data:`MODES`); ``cell`` names the per-group field shown.
    """
    order = {key: position for position, key in enumerate(row_keys)}
    blocks = []
    for dimension in dict.fromkeys(record["dimension"] for record in records):
        subset = [record for record in records if record["dimension"] == dimension]
        models = list(dict.fromkeys(record["model"] for record in subset))
        variants = sorted({record["variant"] for record in subset}, key=lambda v: order.get(v, len(order)))
        rows = []
        for variant in variants:
            by_model = {record["model"]: record for record in subset if record["variant"] == variant}
            groups = list(dict.fromkeys(g[group_key] for record in by_model.values() for g in record.get("per_group", [])))
            for group in groups:
                cells = []
                for model in models:
                    found = [g for g in by_model.get(model, {}).get("per_group", []) if g[group_key] == group]
                    cells.append({"value": found[0][cell] if found else None, "passed": None})
                rows.append({"variant": variant, "group": group, "cells": cells})
            rows.append({
                "variant": variant, "group": "mean",
                "cells": [{"value": by_model[m]["value"], "passed": by_model[m]["passed"]} if m in by_model else {"value": None, "passed": None}
                          for m in models],
            })
        blocks.append({"dimension": dimension, "models": models, "rows": rows})
    return blocks


__all__ = ["MODES", "N_BOOT", "effects_records", "frame_records", "table_seven"]
