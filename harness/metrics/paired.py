"""Paired speaker-cluster bootstrap of a difference between two checkpoints (release gating).

Both checkpoints answered the same utterances, so each speaker contributes a row of sufficient statistics
(counts, sums) per checkpoint. One bootstrap replicate draws speakers with replacement within their group
and applies the same draw to both checkpoints; the statistic is computed from the weighted per-group sums::

    delta_b = T(candidate sums under draw b) - T(baseline sums under draw b)

and the percentile interval of delta_b is the (1 - alpha) CI of the difference. Vectorised: one (B, S)
matrix of draw counts multiplies each group's (S, k) statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

GroupSums = Mapping[str, np.ndarray]
"""Group name -> (B, k) weighted sums of the k statistic columns, one row per replicate."""


@dataclasses.dataclass(frozen=True)
class PairedBootstrapResult:
    candidate: float
    baseline: float
    difference: float
    ci_low: float
    ci_high: float
    n_boot: int
    seed: int


def speaker_draws(groups: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(B, S) counts: how often each speaker is drawn, resampling with replacement within each group."""
    rng = np.random.default_rng(seed)
    draws = np.zeros((n_boot, len(groups)))
    for group in np.unique(groups):
        members = np.flatnonzero(groups == group)
        picks = rng.integers(0, len(members), size=(n_boot, len(members)))
        np.add.at(draws, (np.arange(n_boot)[:, None], members[picks]), 1.0)
    return draws


def group_sums(table: pd.DataFrame, weights: np.ndarray) -> dict[str, np.ndarray]:
    values = table.drop(columns="group").to_numpy(dtype=float)
    groups = table["group"].to_numpy()
    return {str(group): weights[:, groups == group] @ values[groups == group] for group in np.unique(groups)}


def paired_speaker_bootstrap(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    statistic: Callable[[GroupSums], np.ndarray],
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> PairedBootstrapResult:
    """Difference ``statistic(candidate) - statistic(baseline)`` with its paired speaker-bootstrap CI.

    Both tables are indexed by speaker with a ``group`` column and the same numeric columns; they must
    hold the same speakers in the same groups. Replicates whose statistic is undefined (a group left
    without data) are dropped; a ``ValueError`` says so when none is left.
    """
    candidate, baseline = candidate.sort_index(), baseline.sort_index()
    if not candidate.index.equals(baseline.index) or not candidate["group"].equals(baseline["group"]):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")
    ones = np.ones((1, len(candidate)))
    observed_candidate = float(statistic(group_sums(candidate, ones))[0])
    observed_baseline = float(statistic(group_sums(baseline, ones))[0])
    draws = speaker_draws(candidate["group"].to_numpy(), n_boot, seed)
    differences = statistic(group_sums(candidate, draws)) - statistic(group_sums(baseline, draws))
    differences = differences[np.isfinite(differences)]
    if differences.size == 0:
        raise ValueError("the difference is not estimable: no bootstrap replicate gives a finite value")
    low, high = np.quantile(differences, [alpha / 2, 1 - alpha / 2])
    return PairedBootstrapResult(observed_candidate, observed_baseline, observed_candidate - observed_baseline,
                                 float(low), float(high), n_boot, seed)


def ratio_per_group(numerator: int, denominator: int) -> Callable[[GroupSums], dict[str, np.ndarray]]:
    """Per-group ratio of two summed columns (e.g. correct / total, errors / words)."""

    def per_group(sums: GroupSums) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return {group: values[:, numerator] / values[:, denominator] for group, values in sums.items()}

    return per_group


def largest_gap(per_group: Callable[[GroupSums], dict[str, np.ndarray]], scale: float = 1.0) -> Callable[[GroupSums], np.ndarray]:
    """max_g x_g - min_g x_g of a per-group quantity (the best-worst group gap), times ``scale``."""

    def statistic(sums: GroupSums) -> np.ndarray:
        values = np.column_stack(list(per_group(sums).values()))
        return scale * (np.nanmax(values, axis=1) - np.nanmin(values, axis=1))

    return statistic


def largest_log_ratio(sums: GroupSums) -> np.ndarray:
    """max over groups of |log(rate_g / rate_rest)|, with rate = column 0 / column 1 (e.g. errors / words)
    and rest the other groups pooled; for two groups, |log| of their ratio. 0 when all groups are alike."""
    total = sum(sums.values())
    columns = []
    for values in sums.values():
        rest = total - values
        with np.errstate(invalid="ignore", divide="ignore"):
            columns.append(np.abs(np.log((values[:, 0] / values[:, 1]) / (rest[:, 0] / rest[:, 1]))))
    return np.nanmax(np.column_stack(columns), axis=1)
