"""The sham arms (issue 58, item 6; issue 61): a shift of the same size as the swap's, made by the same
resynthesiser, that stays inside the source group, so that what a large transform does to a model (its artefacts)
is separated from the group cue.

* ``gender_sham`` (Praat's "Change gender", the control of ``gender_swap``'s size): the formant shift ratio is the
  reciprocal of the swap's for that direction (a male voice's formants are lowered by as much as the swap raises
  them, 1 / 1.18; a female voice's raised by 1 / 0.85), and the new pitch median mirrors the swap's pitch move
  about the recording's own median F0 ``m`` (Praat's pitch tracker in the transform's range), then is clipped into
  the source group's range: ``new = clip(m^2 / swap_pitch, low, high)`` with the group's ``*_sham_pitch_low_hz``
  and ``*_sham_pitch_high_hz`` (thresholds.yaml ``counterfactual``, where their source is given). A deeper male
  voice and a higher female voice: the same size of change, the same group.
* ``age_sham`` (WORLD, the control of ``age_shift``'s size): the age arm of the other direction applied to the
  source (a young speaker's recording gets the younger arm, an elderly one's the older arm, with the same F0,
  formant, jitter, tremor and breathiness settings), so it moves as far as the swap, away from the other group.

The sham's target group is its source group. The check compares the swap with the sham as well as with the
identity arm (:mod:`harness.checks.counterfactual.check`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.core.requests import Audio
from harness.data.voice_transforms import VoiceTransform, VoiceTransformError, float_fields
from harness.data.voice_transforms._praat import change_gender
from harness.data.voice_transforms.age_shift import (
    ARM_OF_TARGET,
    OLDER,
    OTHER_AGE,
    YOUNGER,
    AgeShiftSettings,
    WorldChange,
    WorldTransform,
    arm_change,
    world_analysis,
    world_resynthesise,
)

OTHER_GENDER = {"male": "female", "female": "male"}


@dataclasses.dataclass(frozen=True)
class GenderShamSettings:
    """The swap's arguments (whose size the sham takes) and each group's pitch range, inside which the sham's median
    F0 stays."""

    pitch_floor_hz: float
    pitch_ceiling_hz: float
    male_to_female_formant_ratio: float
    male_to_female_pitch_hz: float
    female_to_male_formant_ratio: float
    female_to_male_pitch_hz: float
    male_sham_pitch_low_hz: float
    male_sham_pitch_high_hz: float
    female_sham_pitch_low_hz: float
    female_sham_pitch_high_hz: float

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> GenderShamSettings:
        return float_fields(cls, settings, "gender_sham")


def median_f0_hz(audio: Audio, floor_hz: float, ceiling_hz: float) -> float:
    """The median F0 of the voiced frames (Praat's autocorrelation tracker, 10 ms); NaN when none is voiced."""
    import parselmouth

    sound = parselmouth.Sound(np.asarray(audio.samples, dtype=np.float64), sampling_frequency=float(audio.sample_rate))
    f0 = sound.to_pitch_ac(time_step=0.01, pitch_floor=floor_hz, pitch_ceiling=ceiling_hz).selected_array["frequency"]
    voiced = f0[np.isfinite(f0) & (f0 > 0)]
    return float(np.median(voiced)) if voiced.size else float("nan")


def sham_pitch_hz(median_hz: float, swap_pitch_hz: float, low_hz: float, high_hz: float) -> float:
    """``clip(m^2 / swap_pitch, low, high)``: the swap's move mirrored about ``m`` (the log move reversed), kept in
    the group's range; the range's middle (geometric) when ``m`` is unknown."""
    if not np.isfinite(median_hz) or median_hz <= 0:
        return float(np.sqrt(low_hz * high_hz))
    return float(np.clip(median_hz**2 / swap_pitch_hz, low_hz, high_hz))


class GenderShamTransform(VoiceTransform):
    name = "gender_sham"
    dimension = "gender"
    settings_type = GenderShamSettings
    source_modules = ("harness.data.voice_transforms._praat",)

    def target_group(self, source_group: str) -> str:
        if source_group not in OTHER_GENDER:
            raise VoiceTransformError(
                f"gender_sham: cannot shift gender group {source_group!r}; it knows {sorted(OTHER_GENDER)}"
            )
        return source_group

    def change(self, audio: Audio, source_group: str, settings: GenderShamSettings) -> tuple[float, float]:
        """The sham's ``(formant shift ratio, new pitch median Hz)`` for ``audio`` of ``source_group``."""
        direction = f"{source_group}_to_{OTHER_GENDER[self.target_group(source_group)]}"
        ratio = 1.0 / getattr(settings, f"{direction}_formant_ratio")
        low, high = (getattr(settings, f"{source_group}_sham_pitch_{end}_hz") for end in ("low", "high"))
        median = median_f0_hz(audio, settings.pitch_floor_hz, settings.pitch_ceiling_hz)
        return ratio, sham_pitch_hz(median, getattr(settings, f"{direction}_pitch_hz"), low, high)

    def resynthesise(self, audio: Audio, source_group: str, settings: GenderShamSettings, seed: int) -> Audio:
        ratio, pitch = self.change(audio, source_group, settings)
        return change_gender(
            audio,
            pitch_floor_hz=settings.pitch_floor_hz,
            pitch_ceiling_hz=settings.pitch_ceiling_hz,
            formant_shift_ratio=ratio,
            new_pitch_median_hz=pitch,
            seed=seed,
        )


class AgeShamTransform(WorldTransform):
    """``age_sham``: the age arm away from the other group (young -> the younger arm, elderly -> the older arm)."""

    name = "age_sham"

    def target_group(self, source_group: str) -> str:
        if source_group not in OTHER_AGE:
            raise VoiceTransformError(
                f"age_sham: cannot shift age group {source_group!r}; it knows {sorted(OTHER_AGE)}"
            )
        return source_group

    @staticmethod
    def arm(source_group: str) -> str:
        """The arm of the sham: the one the swap of the other group gets."""
        return YOUNGER if ARM_OF_TARGET[OTHER_AGE[source_group]] == OLDER else OLDER

    def resynthesise(self, audio: Audio, source_group: str, settings: AgeShiftSettings, seed: int) -> Audio:
        arm = self.arm(self.target_group(source_group))
        return world_resynthesise(audio, lambda median_f0: arm_change(arm, median_f0, settings), settings, seed)

    def planned_change(self, audio: Audio, source_group: str, settings: AgeShiftSettings) -> WorldChange:
        arm = self.arm(self.target_group(source_group))
        f0 = world_analysis(audio.samples, audio.sample_rate, settings.pitch_floor_hz, settings.pitch_ceiling_hz)[0]
        return arm_change(arm, float(np.median(f0[f0 > 0])) if (f0 > 0).any() else 0.0, settings)


GENDER_SHAM = GenderShamTransform()
AGE_SHAM = AgeShamTransform()
