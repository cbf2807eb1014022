"""``gender_swap``: the recording moved toward the other gender's typical voice by Praat's "Change gender".

A ``male`` speaker's recording gets formant shift ratio ``male_to_female_formant_ratio`` and new pitch median
``male_to_female_pitch_hz``; a ``female`` speaker's the ``female_to_male_*`` pair (thresholds.yaml,
``counterfactual``, where the sources of the defaults are stated). Pitch range and duration are kept (factor 1).
"""

from __future__ import annotations

from harness.core.requests import Audio
from harness.data.voice_transforms import ChangeGenderSettings, VoiceTransform, VoiceTransformError
from harness.data.voice_transforms._praat import change_gender

OTHER_GENDER = {"male": "female", "female": "male"}


class GenderSwapTransform(VoiceTransform):
    name = "gender_swap"
    dimension = "gender"
    source_modules = ("harness.data.voice_transforms._praat",)

    def target_group(self, source_group: str) -> str:
        if source_group not in OTHER_GENDER:
            raise VoiceTransformError(
                f"gender_swap: cannot swap gender group {source_group!r}; it knows {sorted(OTHER_GENDER)}"
            )
        return OTHER_GENDER[source_group]

    def resynthesise(self, audio: Audio, source_group: str, settings: ChangeGenderSettings, seed: int) -> Audio:
        direction = f"{source_group}_to_{self.target_group(source_group)}"
        return change_gender(
            audio,
            pitch_floor_hz=settings.pitch_floor_hz,
            pitch_ceiling_hz=settings.pitch_ceiling_hz,
            formant_shift_ratio=getattr(settings, f"{direction}_formant_ratio"),
            new_pitch_median_hz=getattr(settings, f"{direction}_pitch_hz"),
            seed=seed,
        )


TRANSFORM = GenderSwapTransform()
