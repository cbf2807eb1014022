"""The gap between the best- and worst-served demographic group, with a speaker-cluster bootstrap interval.

For a per-row score ``v`` (100·correct for an accuracy, 100 - capped WER for ASR) the group means are
``m_g = mean(v | g)`` and the gap is ``m_best - m_worst`` with best and worst fixed by the observed
means. Its interval resamples speakers within groups (:func:`harness.metrics.basis.mode_effects`), so the
pair stays fixed and the interval can reach below 0: a gap whose interval excludes 0 is one the data
support. Used for the per-group disparities of BASIS-Bench's accuracy-type axes (§3.1, §3.3).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from harness.metrics.basis import CountMetric, mode_effects


@dataclasses.dataclass(frozen=True)
class GroupGap:
    """``means`` per group; ``gap = means[best] - means[worst]`` with its bootstrap interval."""

    means: pd.Series
    best: str
    worst: str
    gap: float
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        return bool(self.ci_low > 0)


def group_gap(
    table: pd.DataFrame,
    *,
    value: str,
    group: str = "group",
    cluster: str = "speaker",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> GroupGap:
    """Gap between the highest and lowest group mean of ``value``, speakers resampled within groups."""
    for column in (value, group, cluster):
        if column not in table.columns:
            raise ValueError(f"group_gap: missing column {column!r}; the table has {list(table.columns)}")
    values = pd.to_numeric(table[value], errors="coerce")
    if values.isna().any():
        raise ValueError(f"group_gap: row {values.index[values.isna()][0]!r} has a non-numeric {value!r}")
    means = values.groupby(table[group], sort=True).mean()
    if len(means) < 2:
        raise ValueError(f"group_gap: need at least 2 groups in {group!r}, got {list(means.index)}")
    best, worst = int(np.argmax(means.to_numpy())), int(np.argmin(means.to_numpy()))

    def score(counts: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            group_means = counts[..., 0] / counts[..., 1]
        return group_means[..., best] - group_means[..., worst]

    metric = CountMetric(
        name="group_gap",
        columns=(value, "n"),
        tally=lambda t: np.column_stack([pd.to_numeric(t[value]).to_numpy(float), np.ones(len(t))]),
        score=score,
    )
    frame = pd.DataFrame(
        {
            "mode": "speech-implicit",
            cluster: table[cluster].to_numpy(),
            group: table[group].to_numpy(),
            value: values.to_numpy(),
        }
    )
    result = mode_effects(frame, metric, cluster=cluster, group=group, n_boot=n_boot, level=level, seed=seed)
    row = result.per_mode.iloc[0]
    return GroupGap(
        means=means,
        best=str(means.index[best]),
        worst=str(means.index[worst]),
        gap=float(row["estimate"]),
        ci_low=float(row["ci_low"]),
        ci_high=float(row["ci_high"]),
    )
