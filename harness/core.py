"""Types and helpers that every layer of the harness shares; this module imports no other harness module.

The layers run one way, ``core -> data -> models -> extraction -> metrics -> checks -> gate -> plugin/report``,
and what more than one of them needs lives here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

REFUSAL = "refusal"
"""The extraction status of an answer that declines the task (VIBE §III-B); metrics count it, extraction sets it."""


def require_columns(table: Any, columns: Sequence[str], what: str = "table", *, nonempty: bool = False) -> None:
    """Raise ``ValueError`` naming ``what`` when ``table`` lacks any of ``columns`` (``TypeError`` if it is no DataFrame);
    with ``nonempty``, also when it has no rows."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(table.columns)}")
    if nonempty and table.empty:
        raise ValueError(f"{what}: the table has no rows")


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|Z| > z) = alpha`` for a standard normal ``Z`` (1.96 at ``alpha = 0.05``)."""
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def finite_or_none(value: Any) -> float | None:
    """``float(value)``, or ``None`` for ``None``, NaN and infinities (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def bootstrap_seed(*parts: Any) -> int:
    """A 32-bit seed from ``parts``: the first 8 hex digits of the SHA-256 of their JSON rendering (sorted keys),
    the same digest as ``stable_hash(list(parts))``, so equal parts seed equally across processes and runs."""
    text = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
