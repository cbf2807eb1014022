"""One VIBE counterfactual case measured, from a model's answers on the three audio versions of each recording.

:func:`measure_vibe_task` is the case's whole measurement, for the check's verdict and record: the perceived-group
filter first (:mod:`.perceived`: an unmeasured case when the swap did not change the perceived group), then, on the
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
    common = {"tau": settings["tau"], "n_permutations": settings["n_permutations"], "seed": seed}
    arms = (IDENTITY, SWAP)
    try:
        voice_effect = arm_ntvd(kept, arms, **common)
    except ValueError as exc:
        raise CaseNotMeasured(f"{case_id}: the arms cannot be compared: {exc}") from exc
    has_original = ORIGINAL in set(kept["arm"])
    artifact = arm_ntvd(kept, (ORIGINAL, IDENTITY), **common) if has_original else None
    decision = rule.decide(
        [voice_effect.test.p_value], [voice_effect.score > settings["max_ntvd"]], rule=settings["rule"]
    )
    return VibeCounterfactual(
        perceived=perceived,
        voice_effect=voice_effect,
        flip_rates=flip_rates(kept, arms),
        shifts=largest_shifts(voice_effect.distributions),
        artifact=artifact,
        artifact_flip_rates=flip_rates(kept, (ORIGINAL, IDENTITY)) if has_original else None,
        decision=decision,
    )
