"""The results.json record of a counterfactual case (issue 39; :mod:`harness.checks.counterfactual.check`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.checks.counterfactual.settings import KINDS, CaseThreshold
from harness.records import CaseRecord, RecordPayload


@dataclasses.dataclass(kw_only=True)
class CounterfactualPayload(RecordPayload):
    """``kind``: ``vibe`` (a VIBE task), ``wer`` or ``stereotype``; ``effect``: the case's voice effect (the arm nTVD,
    or the largest per-direction difference swap - identity in points), ``p`` its paired permutation p;
    ``per_direction``: swap direction (source group) -> its effect; ``perceived``: per direction, the swapped clips
    and the share the ``perceiver`` labelled as the target group, ``excluded`` those left out; ``artifact``: the same
    measure between the original recording and its identity resynthesis (reported, never a fail). A VIBE case adds
    the per-attribute nTVD and flip rates, the largest shifts and the arms' value distributions; a WER or stereotype
    case adds each direction's arm measures (``directions``); ``transform`` and ``transform_settings`` name the
    intervention."""

    kind: str
    transform: str
    perceiver: str
    perceived: list[dict[str, Any]]
    excluded: dict[str, int]
    n_speakers: int
    n_permutations: int
    seed: int
    effect: float | None
    p: float | None
    per_direction: dict[str, float | None]
    artifact: dict[str, Any] | None
    per_attribute: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    recordings: int | None = None
    unpaired_recordings: int | None = None
    flip_rates: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    shifts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    distributions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    directions: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    transform_settings: dict[str, float] | None = None
    """The voice transform's arguments the arms were made with (``ChangeGenderSettings``); a baseline made with
    others is not compared (:func:`~harness.checks.counterfactual.check.arms_protocol_difference`)."""
    transform_source: dict[str, str] | None = None
    """Each transform the arms were made by (the swap and its control, ``identity`` or ``world_identity``) -> the
    hash of its code (:meth:`~harness.data.voice_transforms.VoiceTransform.source_hash`)."""
    resynthesiser: str | None = None
    """The resynthesiser's version the arms were made with (praat-parselmouth's; ``pyworld-prebuilt <version>`` for
    the WORLD age arms)."""
    perceiver_fingerprint: str | None = None
    """What labelled the swapped clips, by content: ``voice:praat``'s name and code hash, or the perceiver model's
    fingerprint. These three are written only where known (a record made before them has none), and a baseline whose
    value differs is not compared (:func:`~harness.checks.counterfactual.check.arms_protocol_difference`)."""
    sham: dict[str, Any] | None = None
    """The sham arm (issue 58): the effect of swap against sham (``effect``, ``p``, ``per_direction``; a VIBE case
    adds ``size``, the identity-vs-sham nTVD, what the shift's size alone does), and ``decides`` (True: the case's
    value is the smaller effect of the two controls and its p the larger, an intersection-union test); or, where the
    sham's answers were not to be had, ``deviation`` (:data:`~harness.checks.counterfactual.tables.SHAM_NOT_CACHED`)
    and the identity arm alone decides. Not written in a record made before it."""
    perceiver_accuracy: dict[str, Any] | None = None
    """The perceiver on the corpus's original recordings, whose groups are known (issue 58): its balanced
    ``accuracy`` and the ``chance`` level (0-1), the ``recordings`` and ``speakers`` judged, each group's ``recall``
    and the ``method`` (``voice:formants``: leave one speaker out); below chance + ``min_margin_over_chance`` the
    case is unmeasured. Not written in a record made before it."""
    manipulation: list[dict[str, Any]] | None = None
    """Per direction, the manipulation checks of a transform that states a plan (the WORLD age arms,
    :mod:`~harness.checks.counterfactual.manipulation`): clips, those admitted and the median F0, F1-F3 and formant
    ratios of each arm to its recording; not written for a transform without them."""
    speaker_distance: dict[str, Any] | None = None
    """The speaker-embedding check (:mod:`~harness.checks.counterfactual.speaker_distance`): the ``encoder`` and its
    ``version``, ``unmeasured`` (why not, e.g. Resemblyzer not installed; else None), whether it ``filters`` and its
    bounds, and per direction the median cosine distance of each arm to its recording; not written where
    ``speaker_encoder`` is ``none``."""


@dataclasses.dataclass(kw_only=True)
class CounterfactualRecord(CounterfactualPayload, CaseRecord):
    """The results.json record of a counterfactual case: the case's fields, then :class:`CounterfactualPayload`'s.
    Its ``threshold`` states its kind's bar under that kind's key (:class:`CaseThreshold`)."""

    threshold: CaseThreshold

    def to_json(self) -> dict[str, Any]:
        """The record's JSON, without the stimulus identities it does not know (:data:`STIMULUS_IDENTITY`): a record
        read from a results.json made before them is written back as it was."""
        return {
            key: value for key, value in super().to_json().items() if not (key in STIMULUS_IDENTITY and value is None)
        }

    @classmethod
    def threshold_from_json(cls, data: Mapping[str, Any], where: str) -> CaseThreshold:
        """The ``threshold`` of the record ``data``, read with the record's ``kind``."""
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: key 'kind' must be one of {sorted(KINDS)}, got {kind!r:.80}")
        return CaseThreshold.from_json(data["threshold"], f"{where}, threshold", KINDS[kind])


STIMULUS_IDENTITY = (
    "transform_source",
    "resynthesiser",
    "perceiver_fingerprint",
    "manipulation",
    "speaker_distance",
    "perceiver_accuracy",
    "sham",
)
"""The record's fields that identify its arms' stimuli beyond the transform's name and settings (issue 58), and the
manipulation checks (issue 61): written only where known, so a record of a transform without them reads as before."""

RECORD = CounterfactualRecord
