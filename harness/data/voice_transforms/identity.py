"""``identity``: the recording resynthesised unchanged, the counterfactual check's control arm.

Praat's "Change gender" with formant shift ratio 1, new pitch median 0 (keep), pitch range factor 1 and duration
factor 1: the pitch analysis and PSOLA resynthesis of the swap arm without its change, so that the model's reaction
to resynthesis artifacts shows in this arm too and cancels in the comparison of the two.
"""

from __future__ import annotations

from harness.core.requests import Audio
from harness.data.voice_transforms import ChangeGenderSettings, VoiceTransform
from harness.data.voice_transforms._praat import change_gender


class IdentityTransform(VoiceTransform):
    name = "identity"
    dimension = "gender"
    source_modules = ("harness.data.voice_transforms._praat",)

    def target_group(self, source_group: str) -> str:
        return source_group

    def resynthesise(self, audio: Audio, source_group: str, settings: ChangeGenderSettings, seed: int) -> Audio:
        return change_gender(
            audio,
            pitch_floor_hz=settings.pitch_floor_hz,
            pitch_ceiling_hz=settings.pitch_ceiling_hz,
            formant_shift_ratio=1.0,
            new_pitch_median_hz=0.0,
            seed=seed,
        )


TRANSFORM = IdentityTransform()
