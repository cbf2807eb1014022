"""One VIBE counterfactual task measured from its arm table (:func:`~harness.checks.counterfactual.arms.vibe_arm_table`
rows of the recordings the perceived-group filter kept), the check's VIBE measure (:mod:`.check`):

* the voice effect: the arm nTVD between ``identity`` and ``swap`` per direction, its paired speaker-level
  permutation p-value, the per-attribute flip rates and the largest shifts
  (:mod:`harness.metrics.counterfactual`);
* the artifact measure: the same nTVD and flip rates between the ``original`` recording and its ``identity``
  resynthesis, what the pipeline alone does to the answers (reported, never a fail: the identity arm is the
  control of the swap, so an artifact cancels in the voice effect).

The verdict is the check's, by the one decide step (:meth:`harness.checks.base.Check.decide`).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from harness.checks.counterfactual.settings import IDENTITY, ORIGINAL, SHAM, SWAP
from harness.core.errors import CaseNotMeasured
from harness.metrics.counterfactual import ArmNTVDResult, arm_ntvd, flip_rates, largest_shifts


@dataclasses.dataclass(frozen=True)
class VibeArms:
    """A VIBE task's arms compared: the voice effect (identity vs swap) with its flip rates and largest shifts, and
    the artifact (original vs identity; None when the table has no ``original`` arm or it cannot be compared)."""

    voice_effect: ArmNTVDResult
    flip_rates: pd.DataFrame
    shifts: pd.DataFrame
    artifact: ArmNTVDResult | None
    artifact_flip_rates: pd.DataFrame | None
    against_sham: ArmNTVDResult | None = None
    """The arm nTVD between ``sham`` and ``swap`` (None without a sham arm): the voice effect less what a change of
    the swap's size does inside the group."""
    sham_size: ArmNTVDResult | None = None
    """The arm nTVD between ``identity`` and ``sham``: what the transform's size alone does (reported)."""


def vibe_arms(table: pd.DataFrame, *, tau: int, n_permutations: int, seed: int) -> VibeArms:
    """The voice effect and the artifact of one VIBE task from :func:`~harness.checks.counterfactual.arms.vibe_arm_table`
    rows (the recordings kept by the perceived-group filter); :class:`CaseNotMeasured` when no value is frequent
    enough to compare the arms."""
    common = {"tau": tau, "n_permutations": n_permutations, "seed": seed}
    try:
        voice_effect = arm_ntvd(table, (IDENTITY, SWAP), **common)
    except ValueError as exc:
        raise CaseNotMeasured(f"the arms cannot be compared: {exc}") from exc
    artifact = artifact_flips = None
    if (table["arm"] == ORIGINAL).any():
        try:
            artifact = arm_ntvd(table, (ORIGINAL, IDENTITY), **common)
            artifact_flips = flip_rates(table, (ORIGINAL, IDENTITY))
        except ValueError:
            artifact = artifact_flips = None
    against_sham = sham_size = None
    if (table["arm"] == SHAM).any():
        try:
            against_sham = arm_ntvd(table, (SHAM, SWAP), **common)
            sham_size = arm_ntvd(table, (IDENTITY, SHAM), **common)
        except ValueError:
            against_sham = sham_size = None
    return VibeArms(
        against_sham=against_sham,
        sham_size=sham_size,
        voice_effect=voice_effect,
        flip_rates=flip_rates(table, (IDENTITY, SWAP)),
        shifts=largest_shifts(voice_effect.distributions),
        artifact=artifact,
        artifact_flip_rates=artifact_flips,
    )
