"""One VIBE counterfactual case measured, from a model's answers on the three audio versions of each recording.

:func:`vibe_arms` measures the arms of one task (the check's VIBE measure, :mod:`.check`); :func:`measure_vibe_task`
is the same from plain tables with the decision, outside a gate run: the perceived-group filter first (:mod:`.perceived`: an unmeasured case when the swap did not change the perceived group), then, on the
recordings whose swap was perceived as the target,

* the voice effect: the arm nTVD between ``identity`` and ``swap`` per direction, its paired speaker-level
  permutation p-value, the per-attribute flip rates and the largest shifts
  (:mod:`harness.metrics.counterfactual`);
* the artifact measure: the same nTVD and flip rates between the ``original`` recording and its ``identity``
  resynthesis, what the pipeline alone does to the answers (reported, never a fail: the identity arm is the
  control of the swap, so an artifact cancels in the voice effect);
* the decision: the gate's :class:`~harness.metrics.multitest.DecisionRule` on the voice effect, relevant when the
  nTVD exceeds ``max_ntvd`` (rule ``both``), or whenever significant (rule ``significance``, the VIBE preset's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from harness.checks.counterfactual.arms import IDENTITY, SWAP
from harness.checks.counterfactual.perceived import PerceivedFilter, perceived_filter, require_perceived_swap
from harness.core.errors import CaseNotMeasured
from harness.metrics.counterfactual import ArmNTVDResult, arm_ntvd, flip_rates, largest_shifts
from harness.metrics.multitest import CaseDecision, DecisionRule

ORIGINAL = "original"


@dataclasses.dataclass(frozen=True)
class VibeArms:
    """A VIBE task's arms compared: the voice effect (identity vs swap) with its flip rates and largest shifts, and
    the artifact (original vs identity; None when the table has no ``original`` arm or it cannot be compared)."""

    voice_effect: ArmNTVDResult
    flip_rates: pd.DataFrame
    shifts: pd.DataFrame
    artifact: ArmNTVDResult | None
    artifact_flip_rates: pd.DataFrame | None


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
    if ORIGINAL in set(table["arm"]):
        try:
            artifact = arm_ntvd(table, (ORIGINAL, IDENTITY), **common)
            artifact_flips = flip_rates(table, (ORIGINAL, IDENTITY))
        except ValueError:
            artifact = artifact_flips = None
    return VibeArms(
        voice_effect=voice_effect,
        flip_rates=flip_rates(table, (IDENTITY, SWAP)),
        shifts=largest_shifts(voice_effect.distributions),
        artifact=artifact,
        artifact_flip_rates=artifact_flips,
    )


@dataclasses.dataclass(frozen=True)
class VibeCounterfactual:
    """What one VIBE counterfactual case measured (module docstring)."""

    perceived: PerceivedFilter
    voice_effect: ArmNTVDResult
    flip_rates: pd.DataFrame
    shifts: pd.DataFrame
    artifact: ArmNTVDResult | None
    artifact_flip_rates: pd.DataFrame | None
    decision: CaseDecision


def measure_vibe_task(
    table: pd.DataFrame,
    clips: pd.DataFrame,
    settings: Mapping[str, Any],
    rule: DecisionRule,
    *,
    case_id: str,
    perceiver: str,
    seed: int = 0,
) -> VibeCounterfactual:
    """``table``: :func:`~harness.checks.counterfactual.arms.vibe_arm_table`'s rows for the arms ``identity`` and
    ``swap`` (and ``original``, for the artifact measure); ``clips``: the perceiver's label of each swapped
    recording (:func:`~harness.checks.counterfactual.perceived.perceived_filter`'s input); ``settings``: the
    case's ``counterfactual`` thresholds. :class:`CaseNotMeasured` when the swap was not perceived as the target
    or no value is frequent enough to compare."""
    perceived = perceived_filter(clips)
    require_perceived_swap(perceived, settings["min_perceived_share"], case_id, perceiver)
    kept = table[table["recording"].isin(perceived.kept)]
    try:
        arms = vibe_arms(kept, tau=settings["tau"], n_permutations=settings["n_permutations"], seed=seed)
    except CaseNotMeasured as exc:
        raise CaseNotMeasured(f"{case_id}: {exc}") from exc
    effect = arms.voice_effect
    decision = rule.decide([effect.test.p_value], [effect.score > settings["max_ntvd"]], rule=settings["rule"])
    return VibeCounterfactual(
        perceived=perceived,
        voice_effect=effect,
        flip_rates=arms.flip_rates,
        shifts=arms.shifts,
        artifact=arms.artifact,
        artifact_flip_rates=arms.artifact_flip_rates,
        decision=decision,
    )
