"""The perceived group of each arm's audio, and the rule that a transform which did not change it measures nothing.

A perceiver labels each clip with a group. The default, ``voice:formants`` (issue 58), reads F0 and the formants
jointly: each clip's log median F0 and log median F1-F3 over its voiced frames (:func:`voice_features`: Praat's
autocorrelation pitch, 10 ms steps, 60-600 Hz; Burg formants, five below 5.5 kHz), labelled by a linear discriminant
fitted on the corpus's own originals, whose groups are known (:mod:`harness.metrics.perceiver_fit`), with its
leave-one-speaker-out accuracy on them in the record. So a swap that set the F0 and left the vocal tract alone is
not heard as the target for its pitch alone. ``voice:praat`` (:mod:`harness.models.voice_profile`, the demo's voice
stage) stays available (``--perceiver voice:praat``): its description "sounds like a man / a woman / a child" names
the group by median F0 alone (:data:`~harness.models.voice_profile.PITCH_CLASSES`), which is what the swap sets; a
clip it cannot describe (too short, unvoiced) has no perceived group. Any other ``--perceiver`` is a model spec.

:func:`perceived_filter` keeps the recordings whose swap is perceived as the target group (BASIS-Bench filters its
voices by a classifier in the same way) and counts the others; :func:`require_perceived_swap` makes the case
unmeasured when, in any swap direction, fewer than ``min_perceived_share`` of the swapped clips are perceived as
the target: the transform did not change the perceived group, so a null result would say nothing about the voice.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.core.errors import CaseNotMeasured
from harness.core.parallel import map_in_processes
from harness.core.requests import Audio
from harness.core.values import source_fingerprint
from harness.data.audio import FileAudio, read_audio
from harness.data.voice_transforms.arm_audio import ArmAudio
from harness.metrics.counterfactual import perceived_shares
from harness.models.voice_profile import PITCH_CLASSES, describe_voice, measure_voice

VOICE_FORMANTS = "voice:formants"
"""F0 and F1-F3 jointly, a discriminant calibrated on the originals: the default perceiver."""
VOICE_PRAAT = "voice:praat"
"""Median F0 alone, by voice:praat's pitch classes."""
DEFAULT_PERCEIVER = VOICE_FORMANTS
MODEL_FREE_PERCEIVERS = (VOICE_FORMANTS, VOICE_PRAAT)
"""The perceivers that need no model (Praat's analyses): any other ``--perceiver`` is a model spec."""
VOICE_PRAAT_GROUPS = {"a man": "male", "a woman": "female", "a child": "child"}
"""Who ``voice:praat`` says a voice sounds like -> the corpus group it names."""
_SOUNDS_LIKE = re.compile(r"sounds like (" + "|".join(re.escape(who) for _, _, who in PITCH_CLASSES) + r")\.")
UNMEASURED_REASON = "the transform did not change the perceived group"


def group_from_voice_description(description: str) -> str | None:
    """The group a ``voice:praat`` description names; None for one that names none (too short, unvoiced)."""
    match = _SOUNDS_LIKE.search(description)
    return VOICE_PRAAT_GROUPS[match.group(1)] if match else None


def perceive_with_voice_praat(clips: Sequence[Audio]) -> list[str | None]:
    """Each clip's perceived group by ``voice:praat``'s pitch classes (Praat's pitch tracker, no model)."""
    return [voice_praat_group(clip.samples, clip.sample_rate) for clip in clips]


def voice_praat_group(samples: np.ndarray, sample_rate: int) -> str | None:
    """The group ``voice:praat`` hears in ``samples``: :func:`describe_voice` of :func:`measure_voice`, read back by
    :func:`group_from_voice_description`."""
    return group_from_voice_description(describe_voice(measure_voice(samples, sample_rate)))


PERCEIVE_NAMESPACE = "perceive"
"""The output cache's namespace of the perceiver's labels (``voice:praat``'s; a backend perceiver's answers are
model outputs, cached as any)."""
NO_LABEL = "(none)"
"""The stored label of a clip ``voice:praat`` could not place (too short, unvoiced): the cache stores no empty text."""


def voice_praat_labeller() -> str:
    """Identifies ``voice:praat``'s labels in the cache: its name and the code that measures, describes and reads
    back (:func:`harness.core.values.source_fingerprint` of :mod:`harness.models.voice_profile` and this module), so
    an edit of either labels the clips again."""
    return f"{VOICE_PRAAT}:{source_fingerprint('harness.models.voice_profile', __name__)}"


def voice_features_labeller() -> str:
    """Identifies the stored features of ``voice:formants`` (:func:`voice_features`): its name and this module's
    code (the discriminant is fitted per run from the features, so its code is not part of it)."""
    return f"{VOICE_FORMANTS}:features:{source_fingerprint(__name__)}"


FEATURE_PITCH = {"time_step": 0.01, "pitch_floor": 60.0, "pitch_ceiling": 600.0}
"""voice:praat's pitch settings (:data:`harness.models.voice_profile.PITCH_SETTINGS`)."""
FORMANT_CEILING_HZ = 5500.0
MIN_VOICED_FRAMES = 3


def voice_features(samples: np.ndarray, sample_rate: int) -> tuple[float, float, float, float] | None:
    """``(log median F0, log median F1, log median F2, log median F3)`` over the clip's voiced frames (formants at
    the pitch frames' times; Burg, five formants below :data:`FORMANT_CEILING_HZ`), natural logs of Hz; None for a
    clip with fewer than :data:`MIN_VOICED_FRAMES` voiced frames or a formant never found."""
    import parselmouth

    samples = np.asarray(samples, dtype=np.float64)
    if samples.size < sample_rate * 0.05:
        return None
    sound = parselmouth.Sound(samples, sampling_frequency=float(sample_rate))
    pitch = sound.to_pitch_ac(**FEATURE_PITCH)
    f0 = np.nan_to_num(pitch.selected_array["frequency"], nan=0.0)
    voiced = f0 > 0
    if voiced.sum() < MIN_VOICED_FRAMES:
        return None
    formant = sound.to_formant_burg(time_step=0.01, max_number_of_formants=5, maximum_formant=FORMANT_CEILING_HZ)
    times = pitch.xs()[voiced]
    medians = []
    for index in (1, 2, 3):
        track = np.array([formant.get_value_at_time(index, t) for t in times], dtype=np.float64)
        track = track[np.isfinite(track) & (track > 0)]
        if track.size == 0:
            return None
        medians.append(float(np.median(track)))
    return (float(np.log(np.median(f0[voiced]))), *(float(np.log(value)) for value in medians))


def features_text(features: tuple[float, ...] | None) -> str:
    """How the cache stores a clip's features: four numbers joined by spaces, or :data:`NO_LABEL`."""
    return NO_LABEL if features is None else " ".join(f"{value:.6f}" for value in features)


def features_of_text(text: str) -> tuple[float, ...] | None:
    return None if text == NO_LABEL else tuple(float(value) for value in text.split())


def label_clips(clips: Sequence[Audio], progress: bool = True, measure: str = VOICE_PRAAT) -> list[str | None]:
    """:func:`perceive_with_voice_praat` (``measure`` voice:praat) or :func:`voice_features` as text (``measure``
    voice:formants, :func:`features_text`) over the cores (:func:`harness.core.parallel.map_in_processes`): the arms
    among ``clips`` are made first (:meth:`ArmAudio.prepare_many`), then each worker reads a stored arm from its file
    and is sent any other clip's samples; ``progress`` shows bars."""
    arms = [clip for clip in clips if isinstance(clip, ArmAudio)]
    if arms:
        ArmAudio.prepare_many(arms, progress)
    jobs = []
    for clip in clips:
        path = clip.store.path(clip) if isinstance(clip, ArmAudio) else None
        if path is not None and path.is_file():
            jobs.append(("file", str(path), clip.sample_rate, measure))
        elif isinstance(clip, FileAudio):
            jobs.append(("audio", str(clip.path), clip.sample_rate, measure))
        else:
            jobs.append(("samples", np.asarray(clip.samples, dtype=np.float32), clip.sample_rate, measure))
    return map_in_processes(label_clip, jobs, f"{measure} perceived group", progress=progress)


def label_clip(job: tuple) -> str | None:
    """One job of :func:`label_clips`: ``(kind, samples, an arm's .npy file or a recording's file, rate, measure)``."""
    kind, where, rate, measure = job
    if kind == "file":
        samples = np.load(where, allow_pickle=False)
    elif kind == "audio":
        samples = read_audio(where, rate).samples
    else:
        samples = where
    if measure == VOICE_FORMANTS:
        return features_text(voice_features(samples, rate))
    return voice_praat_group(samples, rate)


@dataclasses.dataclass(frozen=True)
class PerceivedFilter:
    """``shares``: per direction (``source_group``, ``target_group``), the swapped ``clips``, those
    ``perceived_as_target`` and their ``share`` (0-1); ``kept``: the recordings whose swap was perceived as the
    target, the only ones compared; ``excluded``: per direction, how many were left out."""

    shares: pd.DataFrame
    kept: frozenset[str]
    excluded: dict[str, int]


def perceived_filter(clips: pd.DataFrame) -> PerceivedFilter:
    """``clips``: one row per swapped recording with ``recording``, ``source_group``, ``target_group`` and
    ``perceived_group`` (the perceiver's label of the swap arm's audio, None when it could not tell)."""
    shares = perceived_shares(clips)
    if clips["recording"].duplicated().any():
        raise ValueError(f"perceived_filter: recording {clips['recording'][clips['recording'].duplicated()].iloc[0]!r} "
                         "is listed twice")  # fmt: skip
    hit = clips["perceived_group"].astype(object).eq(clips["target_group"])
    excluded = {f"{source} -> {target}": int(row.clips - row.perceived_as_target) for (source, target), row in shares.iterrows()}  # fmt: skip
    return PerceivedFilter(shares, frozenset(clips.loc[hit, "recording"].astype(str)), excluded)


def require_perceived_swap(result: PerceivedFilter, min_share: float, case_id: str, perceiver: str) -> None:
    """Raise :class:`CaseNotMeasured` naming each direction whose share of swapped clips perceived as the target is
    below ``min_share`` (thresholds.yaml ``counterfactual.min_perceived_share``)."""
    short = [
        f"{source} -> {target}: {int(row.perceived_as_target)} of {int(row.clips)} ({100 * row.share:.0f}%)"
        for (source, target), row in result.shares.iterrows()
        if row.share < min_share
    ]
    if short:
        raise CaseNotMeasured(
            f"{case_id}: {UNMEASURED_REASON}: {perceiver} perceived too few swapped clips as the target group "
            f"({'; '.join(short)}; min_perceived_share {100 * min_share:.0f}%)"
        )
