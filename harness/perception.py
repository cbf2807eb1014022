"""The perceived group of each arm's audio, and the rule that a transform which did not change it measures nothing.

A perceiver labels each clip with a group. The default is the demo's voice stage, ``voice:praat``
(:mod:`harness.models.voice_profile`): its description "sounds like a man / a woman / a child" names the group, by
the same pitch classes it hands the cascade's LLM (:data:`~harness.models.voice_profile.PITCH_CLASSES`); a clip it
cannot describe (too short, unvoiced) has no perceived group.

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
from harness.data.voice_transforms.arm_audio import ArmAudio
from harness.metrics.counterfactual import perceived_shares
from harness.models.voice_profile import PITCH_CLASSES, describe_voice, measure_voice

DEFAULT_PERCEIVER = "voice:praat"
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
    return f"{DEFAULT_PERCEIVER}:{source_fingerprint('harness.models.voice_profile', __name__)}"


def label_clips(clips: Sequence[Audio], progress: bool = True) -> list[str | None]:
    """:func:`perceive_with_voice_praat` over the cores (:func:`harness.core.parallel.map_in_processes`): the arms
    among ``clips`` are made first (:meth:`ArmAudio.prepare_many`), then each worker reads a stored arm from its file
    and is sent any other clip's samples; ``progress`` shows bars."""
    arms = [clip for clip in clips if isinstance(clip, ArmAudio)]
    if arms:
        ArmAudio.prepare_many(arms, progress)
    jobs = []
    for clip in clips:
        path = clip.store.path(clip) if isinstance(clip, ArmAudio) else None
        if path is not None and path.is_file():
            jobs.append(("file", str(path), clip.sample_rate))
        else:
            jobs.append(("samples", np.asarray(clip.samples, dtype=np.float32), clip.sample_rate))
    return map_in_processes(label_clip, jobs, "voice:praat perceived group", progress=progress)


def label_clip(job: tuple) -> str | None:
    """One job of :func:`label_clips`: ``(kind, samples or an arm's .npy file, sample rate)``."""
    kind, where, rate = job
    samples = np.load(where, allow_pickle=False) if kind == "file" else where
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
