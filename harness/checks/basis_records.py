"""What the BASIS checks share: the bootstrap size and the JSON-ready record fields of their results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.basis import ModeEffectsResult
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
