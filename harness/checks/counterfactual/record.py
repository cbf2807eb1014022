"""The results.json record of a counterfactual case (issue 39; :mod:`harness.checks.counterfactual.check`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from harness.checks.counterfactual.settings import KINDS, CaseThreshold
from harness.core.json_records import JsonRecord
from harness.records import CaseRecord, RecordPayload, Statistics


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerceivedRow(JsonRecord):
    """One swap direction's perception (the record's ``perceived``): of its ``clips`` swapped from ``source_group``
    to ``target_group``, those the perceiver labelled as the target (``perceived_as_target``) and their ``share``."""

    source_group: str
    target_group: str
    clips: int
    perceived_as_target: int
    share: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlipRow(JsonRecord):
    """One attribute's flips between two arms (VIBE case): of the ``recordings`` with a value in both, those whose
    value differs (``flipped``) and their share, ``flip_rate`` = flipped / recordings."""

    attribute: str
    recordings: int
    flipped: int
    flip_rate: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShiftRow(JsonRecord):
    """A value whose share moved most from the identity arm to the swap arm in one direction and attribute
    (:func:`harness.metrics.counterfactual.largest_shifts`): ``shift`` ``from`` (fell) or ``to`` (rose) and its
    ``change`` P_swap(v) - P_identity(v) (0-1)."""

    direction: str
    attribute: str
    shift: str
    value: str
    change: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class DistributionRow(JsonRecord):
    """P_arm(v) of one retained value of an attribute in one direction, for the identity and swap arms (VIBE §II-D
    eq. 2 with the arm as the group; each arm's shares sum to 1 over the attribute's values): the report's plot."""

    direction: str
    attribute: str
    value: str
    identity: float
    swap: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Artifact(JsonRecord):
    """The case's measure between the original recording and its identity resynthesis (``measure`` names it):
    ``value`` and its paired permutation ``p``, what the resynthesis alone does (reported, never a fail); a VIBE
    case adds the per-attribute ``flip_rates`` original -> identity."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("flip_rates",)

    measure: str
    value: float | None
    p: float | None
    flip_rates: list[FlipRow] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectionRow(JsonRecord):
    """One swap direction of a WER or stereotype case (the record's ``directions``, by source group): the paired
    difference swap - identity (``effect``, points) and its ``p``, each arm's level (``arms``), the artifact
    identity - original with its p, the ``deciding`` difference (the smaller of the two controls' where the sham
    decides, with ``against_sham`` = swap - sham and its ``sham_p``), and the measure's own fields: WER's
    ``mean_recording_difference``; a stereotype set's ``flip_rate`` and ``items``."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (
        "deciding", "against_sham", "sham_p", "mean_recording_difference", "flip_rate", "items"
    )  # fmt: skip

    effect: float | None
    p: float | None
    arms: dict[str, float | None]
    artifact: float | None
    artifact_p: float | None
    deciding: float | None = None
    """Not written in a record made before issue 58 (its ``effect`` decided)."""
    against_sham: float | None = None
    sham_p: float | None = None
    mean_recording_difference: float | None = None
    flip_rate: float | None = None
    items: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShamHeardRow(JsonRecord):
    """The sham's manipulation check for one source group (issue 58): its ``clips``, those the perceiver heard
    as that same group (``heard_as_source``) and their ``share`` (0-1); below ``min_sham_source_share`` the
    case is unmeasured."""

    source_group: str
    clips: int
    heard_as_source: int
    share: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShamArm(JsonRecord):
    """The sham arm (issue 58): whether it ``decides`` (True: the case's value is the smaller effect of the two
    controls and its p the larger, an intersection-union test), the ``measure`` swap - sham, its ``effect`` and
    ``p`` (VIBE) and ``per_direction``, and a VIBE case's ``size`` (``size_measure``: identity vs sham, what the
    shift's size alone does); or, where the sham's answers were not to be had, the ``deviation``
    (:data:`~harness.checks.counterfactual.tables.SHAM_NOT_CACHED`) and the identity arm alone decides."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (
        "measure", "effect", "p", "per_direction", "size", "size_measure", "deviation", "perceived_as_source"
    )  # fmt: skip

    measure: str | None = None
    effect: float | None = None
    p: float | None = None
    per_direction: dict[str, float | None] | None = None
    size: float | None = None
    size_measure: str | None = None
    deviation: str | None = None
    perceived_as_source: list[ShamHeardRow] | None = None
    decides: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerceiverAccuracy(JsonRecord):
    """The perceiver on the corpus's original recordings, whose groups are known (issue 58; the JSON of
    :class:`harness.metrics.perceiver_fit.PerceiverCalibration`): its balanced ``accuracy`` and the ``chance``
    level (0-1), the ``recordings`` and ``speakers`` judged, each group's ``recall``, the ``method`` and the
    ``min_margin_over_chance`` below which the case is unmeasured."""

    accuracy: float
    chance: float
    recordings: int
    speakers: int
    recall: dict[str, float]
    method: str
    min_margin_over_chance: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpeakerDistanceRow(JsonRecord):
    """One direction's speaker-embedding check (issue 61, :mod:`~harness.checks.counterfactual.speaker_distance`):
    its ``clips`` and those ``admitted``, and the median cosine distance of each arm's speaker embedding to its
    recording's (None where the arm was not measured)."""

    source_group: str
    target_group: str
    clips: int
    admitted: int
    identity_speaker_distance: float | None = None
    swap_speaker_distance: float | None = None
    sham_speaker_distance: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpeakerDistance(JsonRecord):
    """The speaker-embedding check of a case: the ``encoder`` and its ``version``, ``unmeasured`` (why not, e.g.
    Resemblyzer not installed; else None), the ``measure``, whether it ``filters`` and its bounds, and the rows
    ``per_direction``."""

    encoder: str
    version: str | None
    unmeasured: str | None
    measure: str
    filters: bool
    max_identity_speaker_distance: float
    min_swap_speaker_distance: float
    per_direction: list[SpeakerDistanceRow]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ManipulationRow(JsonRecord):
    """One direction's manipulation checks (issue 61, :mod:`~harness.checks.counterfactual.manipulation`): its
    ``clips`` and those ``admitted``, and the median ratio to the recording of each arm's F0, F1-F3 and formants
    (``identity_*``, ``swap_*``; None where no clip had the track)."""

    source_group: str
    target_group: str
    clips: int
    admitted: int
    identity_f0_ratio: float | None
    identity_f1_ratio: float | None
    identity_f2_ratio: float | None
    identity_f3_ratio: float | None
    identity_formant_ratio: float | None
    swap_f0_ratio: float | None
    swap_f1_ratio: float | None
    swap_f2_ratio: float | None
    swap_f3_ratio: float | None
    swap_formant_ratio: float | None


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
    perceived: list[PerceivedRow]
    excluded: dict[str, int]
    n_speakers: int
    n_permutations: int
    seed: int
    effect: float | None
    p: float | None
    per_direction: dict[str, float | None]
    artifact: Artifact | None
    per_attribute: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    recordings: int | None = None
    unpaired_recordings: int | None = None
    flip_rates: list[FlipRow] = dataclasses.field(default_factory=list)
    shifts: list[ShiftRow] = dataclasses.field(default_factory=list)
    distributions: list[DistributionRow] = dataclasses.field(default_factory=list)
    directions: dict[str, DirectionRow] = dataclasses.field(default_factory=dict)
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
    sham: ShamArm | None = None
    """The sham arm (issue 58): the effect of swap against sham (``effect``, ``p``, ``per_direction``; a VIBE case
    adds ``size``, the identity-vs-sham nTVD, what the shift's size alone does), and ``decides`` (True: the case's
    value is the smaller effect of the two controls and its p the larger, an intersection-union test); or, where the
    sham's answers were not to be had, ``deviation`` (:data:`~harness.checks.counterfactual.tables.SHAM_NOT_CACHED`)
    and the identity arm alone decides. Not written in a record made before it."""
    perceiver_accuracy: PerceiverAccuracy | None = None
    """The perceiver on the corpus's original recordings, whose groups are known (issue 58): its balanced
    ``accuracy`` and the ``chance`` level (0-1), the ``recordings`` and ``speakers`` judged, each group's ``recall``
    and the ``method`` (``voice:formants``: leave one speaker out); below chance + ``min_margin_over_chance`` the
    case is unmeasured. Not written in a record made before it."""
    manipulation: list[ManipulationRow] | None = None
    """Per direction, the manipulation checks of a transform that states a plan (the WORLD age arms,
    :mod:`~harness.checks.counterfactual.manipulation`): clips, those admitted and the median F0, F1-F3 and formant
    ratios of each arm to its recording; not written for a transform without them."""
    speaker_distance: SpeakerDistance | None = None
    """The speaker-embedding check (:mod:`~harness.checks.counterfactual.speaker_distance`): the ``encoder`` and its
    ``version``, ``unmeasured`` (why not, e.g. Resemblyzer not installed; else None), whether it ``filters`` and its
    bounds, and per direction the median cosine distance of each arm to its recording; not written where
    ``speaker_encoder`` is ``none``."""


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


@dataclasses.dataclass(kw_only=True)
class CounterfactualRecord(CounterfactualPayload, CaseRecord):
    """The results.json record of a counterfactual case: the case's fields, then :class:`CounterfactualPayload`'s.
    Its ``threshold`` states its kind's bar under that kind's key (:class:`CaseThreshold`)."""

    threshold: CaseThreshold

    def statistics(self) -> Statistics:
        """The voice effect's paired permutation p."""
        return Statistics(p=self.p)

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (*CaseRecord.OMITTED_WHEN_NONE, *STIMULUS_IDENTITY)
    """The case's, and the stimulus identities it does not know (:data:`STIMULUS_IDENTITY`): a record read from a
    results.json made before them is written back as it was."""

    @classmethod
    def threshold_from_json(cls, data: Mapping[str, Any], where: str) -> CaseThreshold:
        """The ``threshold`` of the record ``data``, read with the record's ``kind``."""
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: key 'kind' must be one of {sorted(KINDS)}, got {kind!r:.80}")
        return CaseThreshold.from_json(data["threshold"], f"{where}, threshold", KINDS[kind])


RECORD = CounterfactualRecord
