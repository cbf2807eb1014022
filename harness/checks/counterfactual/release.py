"""The counterfactual release comparison against both controls (issue 58 item 6; :meth:`.check.CounterfactualCheck.compare`).

A record's paired data holds each speaker's identity and swap sums (:func:`~harness.metrics.counterfactual.speaker_arm_sums`)
and, where the run had a sham arm, the sham and swap sums of the recordings answered in both, under :data:`VS_SHAM`.
Each control's comparison is the candidate's effect beyond its arm-exchange null against the baseline's
(:func:`excess_test`); the release decides by both, intersection-union, as the absolute test does
(:func:`intersection_union`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pandas as pd

from harness.checks.counterfactual.settings import IDENTITY, SWAP, VIBE
from harness.metrics.counterfactual import (
    arm_exchange_index,
    paired_excess_bootstrap,
    release_statistic,
    retained_values,
    with_arm_counterparts,
)
from harness.metrics.paired import PairedTest, paired_speaker_test

VS_SHAM = "vs sham:"
"""The prefix of a record's paired-data columns that hold the sham and swap sums (:meth:`CounterfactualCheck.paired_data`)."""

RELEASE_SHAM_MISSING = "one record carries no sham arm sums: the release is judged against the identity arm alone"


def control_part(table: pd.DataFrame, prefix: str | None) -> pd.DataFrame:
    """The ``group`` column and the arm sums of one control: the unprefixed identity/swap columns (``prefix``
    None), or those under ``prefix`` with it removed."""
    if prefix is None:
        return table[[c for c in table.columns if not str(c).startswith(VS_SHAM)]]
    part = table[[c for c in table.columns if str(c).startswith(prefix)]]
    return part.rename(columns=lambda c: str(c)[len(prefix) :]).assign(group=table["group"])


def excess_test(tables: Sequence[pd.DataFrame], kind, tau: int, seed: int, arms: Sequence[str] = (IDENTITY, SWAP)):
    """The one-sided paired test of the candidate's effect beyond its arm-exchange null against the baseline's,
    between the two ``arms`` (:func:`~harness.metrics.counterfactual.paired_excess_bootstrap`)."""
    columns = with_arm_counterparts(sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"}), arms)
    tables = [table.reindex(columns=["group", *columns], fill_value=0.0) for table in tables]
    retained = retained_values(tables, tau) if kind is VIBE else None
    result = paired_excess_bootstrap(
        *tables,
        release_statistic(kind.name, columns, arms, retained=retained),
        arm_exchange_index(columns, arms),
        seed=seed,
    )
    return paired_speaker_test(result, "higher")


def intersection_union(identity: PairedTest, sham: PairedTest) -> PairedTest:
    """The release test against both controls, as the absolute one (intersection-union): worse only where worse
    against each, so the smaller worsening and the larger p decide, with the standard error of the control whose
    worsening is the smaller (the binding one, :func:`.check.binding_test`); not estimable where either is."""
    if not identity.estimable or not sham.estimable:
        return identity if not identity.estimable else sham
    binding = sham if sham.worsening < identity.worsening else identity
    return dataclasses.replace(
        binding,
        worsening=min(identity.worsening, sham.worsening),
        p_worse=max(identity.p_worse, sham.p_worse),
    )
