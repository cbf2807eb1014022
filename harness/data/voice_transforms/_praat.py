"""Praat's "Change gender" command (Praat manual, "Sound: Change gender..."), through praat-parselmouth.

The command tracks the pitch between ``pitch_floor_hz`` and ``pitch_ceiling_hz``, resamples the sound by
``formant_shift_ratio`` (every formant is multiplied by it), then resynthesises by PSOLA so that the median F0
becomes ``new_pitch_median_hz`` (0 keeps the original median), the F0 excursions around the median are multiplied
by ``pitch_range_factor`` and the duration by ``duration_factor``.
"""

from __future__ import annotations

import numpy as np

from harness.core.requests import Audio


def change_gender(
    audio: Audio,
    *,
    pitch_floor_hz: float,
    pitch_ceiling_hz: float,
    formant_shift_ratio: float,
    new_pitch_median_hz: float,
    pitch_range_factor: float = 1.0,
    duration_factor: float = 1.0,
    seed: int,
) -> Audio:
    """``audio`` passed through "Change gender" with these arguments, as float32 at ``audio``'s sample rate.

    The overlap-add resynthesis draws random numbers (Praat's PSOLA of unvoiced stretches), so the same call on the
    same recording differs from run to run, by up to 0.25 of full scale on the demo's clips. Praat's generator is
    seeded with ``seed`` for the call (``random_initializeWithSeedUnsafelyButPredictably``) and returned to its
    unpredictable state after it, so that one recipe makes one clip on a machine."""
    import parselmouth
    from parselmouth.praat import call, run

    from harness.data.voice_transforms import VoiceTransformError

    sound = parselmouth.Sound(np.asarray(audio.samples, dtype=np.float64), sampling_frequency=float(audio.sample_rate))
    run(f"random_initializeWithSeedUnsafelyButPredictably ({int(seed) % 2**53})")
    try:
        changed = call(
            sound,
            "Change gender",
            pitch_floor_hz,
            pitch_ceiling_hz,
            formant_shift_ratio,
            new_pitch_median_hz,
            pitch_range_factor,
            duration_factor,
        )
    except parselmouth.PraatError as exc:
        raise VoiceTransformError(
            f"Praat's Change gender failed on a {audio.duration_s:.2f} s clip: {str(exc).strip()}"
        ) from exc
    finally:
        run("random_initializeSafelyAndUnpredictably ()")
    if round(changed.sampling_frequency) != audio.sample_rate:
        changed = changed.resample(float(audio.sample_rate))
    return Audio(changed.values[0].astype(np.float32), audio.sample_rate)
