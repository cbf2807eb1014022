"""Manipulation checks of the counterfactual arms (issue 61): did each arm move the voice as its transform planned,
and did the control leave it alone? Measured for the transforms that state a plan (``planned_change``: the WORLD age
arms, :mod:`harness.data.voice_transforms.age_shift`), reported in the case's record and used as an admission
filter beside the perceived-group filter (:mod:`harness.perception`).

Per recording, Praat (through praat-parselmouth) tracks F0 (autocorrelation, 10 ms steps, the transform's pitch
range) and F1-F3 (Burg, five formants below 5.5 kHz) in the source and in each arm. The arm's shift is

* F0: ``median(F0 voiced in the arm) / median(F0 voiced in the source)``;
* formant ``i``: ``exp(median over frames voiced in both of log(F_i arm / F_i source))``: the arms keep the source's
  timing, so frame ``t`` of the arm is frame ``t`` of the source; the formant shift is the geometric mean of
  F1-F3's (a vocal tract length factor, as the warp applies one).

A recording is admitted when its control stays within the artefact bound, ``|log ratio| <= log(1 +
max_identity_shift)`` for F0 and the formant shift, and its arm moved F0 and the formant shift in the planned
direction by at least ``min_manipulation_shift`` (``sign(log planned) * log ratio >= log(1 + min)``; a factor
planned as 1 is not checked). Bounds: thresholds.yaml ``counterfactual``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from harness.core.parallel import map_in_processes
from harness.core.requests import Audio
from harness.data.voice_transforms import VoiceTransform
from harness.data.voice_transforms.arm_audio import ArmAudio

TIME_STEP_S = 0.01
FORMANT_CEILING_HZ = 5500.0
FORMANTS = (1, 2, 3)


@dataclasses.dataclass(frozen=True)
class ArmShift:
    """An arm's voice against its source: the F0 ratio and each of F1-F3's frame-paired ratio (NaN where no frame
    is voiced in both)."""

    f0_ratio: float
    formant_ratios: tuple[float, ...]

    @property
    def formant_ratio(self) -> float:
        """The geometric mean of the F1-F3 ratios (NaN when any is NaN)."""
        return float(np.exp(np.mean(np.log(self.formant_ratios))))


def voice_tracks(samples: np.ndarray, rate: int, floor_hz: float, ceiling_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """F0 per 10 ms frame (0 where unvoiced) and F1-F3 at the same times (rows; NaN where Praat finds none)."""
    import parselmouth

    sound = parselmouth.Sound(np.asarray(samples, dtype=np.float64), sampling_frequency=float(rate))
    pitch = sound.to_pitch_ac(time_step=TIME_STEP_S, pitch_floor=floor_hz, pitch_ceiling=ceiling_hz)
    formant = sound.to_formant_burg(time_step=TIME_STEP_S, max_number_of_formants=5, maximum_formant=FORMANT_CEILING_HZ)
    times = pitch.xs()
    tracks = np.array([[formant.get_value_at_time(i, t) for t in times] for i in FORMANTS], dtype=np.float64)
    return np.nan_to_num(pitch.selected_array["frequency"], nan=0.0), tracks


def arm_shift(source: tuple[np.ndarray, np.ndarray], arm: tuple[np.ndarray, np.ndarray]) -> ArmShift:
    """The shift of ``arm``'s :func:`voice_tracks` from ``source``'s (the module's formulas)."""
    (source_f0, source_formants), (arm_f0, arm_formants) = source, arm
    frames = min(source_f0.size, arm_f0.size)
    both = (source_f0[:frames] > 0) & (arm_f0[:frames] > 0)
    f0_ratio = (
        float(np.median(arm_f0[arm_f0 > 0]) / np.median(source_f0[source_f0 > 0]))
        if (arm_f0 > 0).any() and (source_f0 > 0).any()
        else math.nan
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.log(arm_formants[:, :frames][:, both] / source_formants[:, :frames][:, both])
    ratios = tuple(float(np.exp(np.nanmedian(row))) if np.isfinite(row).any() else math.nan for row in logs)
    return ArmShift(f0_ratio, ratios)


def moved_as_planned(ratio: float, planned: float, min_shift: float) -> bool:
    """``ratio`` moved in the direction of ``planned`` by at least ``min_shift`` (relative); True when nothing was
    planned (``planned == 1``)."""
    if planned == 1.0:
        return True
    return math.isfinite(ratio) and math.copysign(1.0, math.log(planned)) * math.log(ratio) >= math.log1p(min_shift)


def within_bound(ratio: float, bound: float) -> bool:
    """``|log ratio| <= log(1 + bound)``."""
    return math.isfinite(ratio) and abs(math.log(ratio)) <= math.log1p(bound)


def measure_recording(job: tuple) -> dict[str, Any]:
    """One recording's manipulation check: ``(source, identity arm, swap arm)`` as samples, their rate, the
    pitch range and the planned F0 and formant factors of the swap arm; the shifts and whether it is admitted are
    returned with the bounds applied by :func:`manipulation_checks`."""
    source, identity, swap, rate, floor_hz, ceiling_hz = job
    tracks = [voice_tracks(samples, rate, floor_hz, ceiling_hz) for samples in (source, identity, swap)]
    shifts = {"identity": arm_shift(tracks[0], tracks[1]), "swap": arm_shift(tracks[0], tracks[2])}
    return {
        f"{arm}_{name}": value
        for arm, shift in shifts.items()
        for name, value in (
            ("f0_ratio", shift.f0_ratio),
            *((f"f{i}_ratio", ratio) for i, ratio in zip(FORMANTS, shift.formant_ratios)),
            ("formant_ratio", shift.formant_ratio),
        )
    }


@dataclasses.dataclass(frozen=True)
class ManipulationChecks:
    """``rows``: per recording (``recording, source_group, target_group``), each arm's F0, F1-F3 and formant
    ratios to the source (``identity_*``, ``swap_*``), the planned factors and ``admitted``; ``admitted``: the
    recordings that passed."""

    rows: pd.DataFrame
    admitted: frozenset[str]

    def summary(self) -> list[dict[str, Any]]:
        """Per direction: the clips, those admitted, and the median of each ratio (the record's ``manipulation``)."""
        ratios = [column for column in self.rows.columns if column.endswith("_ratio")]
        summary = []
        for (source, target), rows in self.rows.groupby(["source_group", "target_group"], sort=True):
            medians = {column: _finite(rows[column].median()) for column in ratios}
            summary.append(
                {"source_group": str(source), "target_group": str(target), "clips": len(rows),
                 "admitted": int(rows["admitted"].sum()), **medians}
            )  # fmt: skip
        return summary


def has_manipulation_checks(transform: VoiceTransform) -> bool:
    """Whether ``transform`` states a plan the checks measure against (``planned_change``)."""
    return hasattr(transform, "planned_change")


def manipulation_checks(
    recordings: pd.DataFrame,
    audio: dict[str, dict[Any, Audio]],
    transform: VoiceTransform,
    settings: Any,
    *,
    min_shift: float,
    max_identity_shift: float,
    progress: bool = False,
) -> ManipulationChecks:
    """The checks of every recording (``recordings``: index its key, columns ``source_group``, ``target_group``;
    ``audio``: ``original``, ``identity`` and ``swap`` per key, :class:`~.arms.CorpusArms`' layout), measured over
    the cores."""
    keys = list(recordings.index)
    arms = [audio[arm][key] for arm in ("identity", "swap") for key in keys]
    lazy = [arm for arm in arms if isinstance(arm, ArmAudio)]
    if lazy:
        ArmAudio.prepare_many(lazy, progress)
    floor_hz, ceiling_hz = settings.pitch_floor_hz, settings.pitch_ceiling_hz
    jobs, planned = [], []
    for key in keys:
        source = audio["original"][key]
        plan = transform.planned_change(source, recordings.at[key, "source_group"], settings)
        planned.append((plan.f0_factor, plan.formant_factor))
        samples = [np.asarray(audio[arm][key].samples, dtype=np.float32) for arm in ("original", "identity", "swap")]
        jobs.append((*samples, source.sample_rate, floor_hz, ceiling_hz))
    measured = map_in_processes(measure_recording, jobs, f"{transform.name} manipulation checks", progress=progress)
    rows = pd.DataFrame(measured, index=pd.Index([str(key) for key in keys], name="recording"))
    rows.insert(0, "source_group", recordings["source_group"].astype(str).to_numpy())
    rows.insert(1, "target_group", recordings["target_group"].astype(str).to_numpy())
    rows["planned_f0_factor"] = [f0 for f0, _ in planned]
    rows["planned_formant_factor"] = [formant for _, formant in planned]
    rows["admitted"] = [
        within_bound(row.identity_f0_ratio, max_identity_shift)
        and within_bound(row.identity_formant_ratio, max_identity_shift)
        and moved_as_planned(row.swap_f0_ratio, row.planned_f0_factor, min_shift)
        and moved_as_planned(row.swap_formant_ratio, row.planned_formant_factor, min_shift)
        for row in rows.itertuples()
    ]
    return ManipulationChecks(rows.reset_index(), frozenset(rows.index[rows["admitted"]]))


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
