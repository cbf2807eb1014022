"""What the BASIS checks share: the bootstrap size and the JSON-ready record fields of their results."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from harness.checks.basis_common.record import GroupGap, ModeEffect, ModeEffects, ModeEstimate
from harness.core.values import finite_or_none
from harness.metrics.basis import ModeEffectsResult, mode_effects
from harness.metrics.crossed import CrossedGap, crossed_gap, crossed_replicates
from harness.metrics.detectable import WaldSensitivity
from harness.records import Contrast

N_BOOT = 2000
"""Bootstrap resamples for every BASIS interval (count metrics: milliseconds each)."""


@dataclasses.dataclass(frozen=True)
class CrossedTest:
    """A BASIS case's group contrasts (:func:`crossed_group_test`): every pair, and the best-worst gap."""

    contrasts: list[Contrast]
    gap: CrossedGap

    def gap_record(self) -> GroupGap:
        """The best-worst gap as the record states it (:class:`~harness.checks.basis_common.record.GroupGap`)."""
        gap = self.gap
        return GroupGap(
            value=finite_or_none(gap.estimate),
            ci_low=finite_or_none(gap.ci_low),
            ci_high=finite_or_none(gap.ci_high),
            best=gap.minuend,
            worst=gap.subtrahend,
            p=finite_or_none(gap.p_value),
            estimable=gap.estimable,
            reason=gap.reason,
        )


def gap_phrase(test: CrossedTest) -> str:
    """``gap best - worst = x (95% CI lo to hi)``, or that its interval cannot be estimated."""
    gap = test.gap
    if not gap.estimable:
        return f"gap {gap.minuend} - {gap.subtrahend} = {gap.estimate:.1f} (interval not estimable: {gap.reason})"
    return f"gap {gap.minuend} - {gap.subtrahend} = {gap.estimate:.1f} (95% CI {gap.ci_low:.1f} to {gap.ci_high:.1f})"


def crossed_group_test(
    table: pd.DataFrame,
    *,
    value: str,
    item: str,
    max_gap: float,
    seed: int,
    speaker: str = "speaker",
    group: str = "group",
    denominator: str | None = None,
) -> CrossedTest:
    """Every pair of groups' difference in mean ``value`` with a two-way speaker x item bootstrap interval and
    p-value (:func:`harness.metrics.crossed.crossed_contrasts`: speakers and items are crossed, BASIS-Bench §3),
    each relevant when ``|difference| > max_gap``; and the best-minus-worst gap from the same replicates.
    With ``denominator`` a group's mean is ``sum(value) / sum(denominator)`` (row weights). The p-value is a
    bootstrap-t (``2 t_df.sf(|d| / se)``, se from the replicates, Satterthwaite df), continuous in the data, so the
    contrasts carry no design floor (``min_p`` None, :class:`~harness.records.Contrast`)."""
    replicates = crossed_replicates(
        table, value=value, denominator=denominator, group=group, speaker=speaker, item=item, n_boot=N_BOOT, seed=seed
    )
    groups = replicates.groups
    contrasts = []
    for index, first in enumerate(groups):
        for second in groups[index + 1 :]:
            result = crossed_gap(replicates, contrast=(first, second))
            contrasts.append(
                Contrast(
                    f"{first} - {second}",
                    result.estimate,
                    result.ci_low,
                    result.ci_high,
                    result.p_value,
                    bool(abs(result.estimate) > max_gap),
                    result.reason,
                    bar=max_gap,
                    sensitivity=WaldSensitivity(result.se, df=result.df, units=int(result.n_speakers.min())),
                )
            )
    return CrossedTest(contrasts, crossed_gap(replicates, contrast="best-worst"))


UNKNOWN_SHARE = "unknown share"
"""How the label of an unknown-rate contrast begins (:func:`unknown_contrasts`)."""


def unknown_contrasts(table: pd.DataFrame, *, unknown: str, item: str, max_gap: float, seed: int) -> CrossedTest:
    """Every pair of groups' difference in the share of answers that name no option (``unknown``, a boolean column:
    an answer :mod:`harness.extraction.choice` cannot read, or an open answer the judge cannot place), in points,
    by :func:`crossed_group_test` (two-way speaker x item bootstrap), each relevant when beyond ``max_gap``
    (thresholds ``max_unknown_gap``): a model that answers one group's voices unusably is judged on that, not on
    the answers it gave (issue 58). Labelled ``unknown share: a - b``; the gap is the largest difference."""
    test = crossed_group_test(
        table.assign(unknown_points=100.0 * table[unknown].astype(float)),
        value="unknown_points",
        item=item,
        max_gap=max_gap,
        seed=seed,
    )
    return CrossedTest(
        [
            dataclasses.replace(
                contrast,
                label=f"{UNKNOWN_SHARE}: {contrast.label}",
                ci_low=finite_or_none(contrast.ci_low),  # no unknown answer in either group: nothing varies,
                ci_high=finite_or_none(contrast.ci_high),  # no interval and no p-value
                p=finite_or_none(contrast.p),
            )
            for contrast in test.contrasts
        ],
        test.gap,
    )


def unknown_rates(table: pd.DataFrame, unknown: str = "unknown") -> dict[str, float]:
    """Per group, the percentage of its answers that name no option (``unknown`` a boolean column)."""
    return {str(group): float(100.0 * rows.mean()) for group, rows in table.groupby("group", sort=True)[unknown]}


def speaker_mode_effects(table: pd.DataFrame, metric: str, seed: int) -> ModeEffectsResult:
    """The §3.4 mode effects of ``metric`` over ``table``'s groups (column ``group``), with :data:`N_BOOT`
    speaker-cluster bootstrap replicates seeded by ``seed``."""
    return mode_effects(table, metric, group="group", cluster="speaker", n_boot=N_BOOT, seed=seed)


def frame_records(frame: pd.DataFrame, index_name: str) -> list[dict[str, Any]]:
    """Rows of a per-group result table as JSON-ready dicts (index under ``index_name``)."""
    out = []
    for key, row in frame.iterrows():
        record = {index_name: key if not isinstance(key, tuple) else "/".join(map(str, key))}
        for column, value in row.items():
            record[str(column)] = (
                int(value)
                if isinstance(value, (np.integer, int)) and not isinstance(value, bool)
                else finite_or_none(value)
            )
        out.append(record)
    return out


def effects_records(result: ModeEffectsResult) -> ModeEffects:
    """Per-mode estimates and §3.4 effects with their intervals, as a record states them (:class:`ModeEffects`)."""
    return ModeEffects(
        metric=result.metric,
        n_boot=int(result.n_boot),
        level=float(result.level),
        n_speakers=int(result.n_clusters),
        per_mode={
            str(mode): ModeEstimate(
                estimate=finite_or_none(row["estimate"]),
                ci_low=finite_or_none(row["ci_low"]),
                ci_high=finite_or_none(row["ci_high"]),
            )
            for mode, row in result.per_mode.iterrows()
        },
        effects={
            str(name): ModeEffect(
                estimate=finite_or_none(row["estimate"]),
                ci_low=finite_or_none(row["ci_low"]),
                ci_high=finite_or_none(row["ci_high"]),
                minuend=str(row["minuend"]),
                subtrahend=str(row["subtrahend"]),
            )
            for name, row in result.effects.iterrows()
        },
    )
