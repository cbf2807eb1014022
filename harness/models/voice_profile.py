"""``voice:praat``: a perceived-voice stage, the speaker-profile front end of a voice assistant.

A cascade ``cascade:<asr>+voice:praat+<llm>`` (:mod:`harness.models.cascade`) hands its LLM a one-sentence
description of each recording's voice beside the transcript, so that its answers can depend on how the
speaker sounds, as a speech LLM's can. The description comes from an acoustic analysis of the recording, not
from its labels.

Measures (:func:`measure_voice`): Praat's autocorrelation pitch tracker (Boersma 1993, "Accurate short-term
analysis of the fundamental frequency and the harmonics-to-noise ratio of a sampled sound"), through
``praat-parselmouth``, with time step 10 ms, pitch floor 60 Hz and ceiling 600 Hz (Praat's defaults are
75 / 600 Hz; the floor is lowered to track low adult male voices), other settings Praat's own. From the
voiced frames: the median F0 and the F0 span, ``12 log2(F0_95 / F0_5)`` semitones between the 5th and
95th percentiles.

Words (:func:`describe_voice`), by explicit thresholds (:data:`PITCH_CLASSES`, :data:`SPAN_WORDS`):

* median F0 below 160 Hz: "a low-pitched voice", "sounds like a man"; 160 to 255 Hz: "a high-pitched voice",
  "sounds like a woman"; above 255 Hz: "a very high-pitched voice", "sounds like a child". The typical
  speaking F0 of adults is 85-155 Hz for men and 165-255 Hz for women (Baken & Orlikoff 2000, *Clinical
  Measurement of Speech and Voice*; Titze 1994, *Principles of Voice Production*, gives means of about
  120, 210 and 300 Hz for men, women and children): 160 Hz lies between the two adult ranges, and a voice above
  the adult female range is taken for a child's.
* F0 span below 3 semitones: "monotone"; above 12 semitones (an octave): "lively"; otherwise no word. These two
  bounds are the team's (a quarter and the whole of an octave), not a published norm.
* A clip shorter than :data:`MIN_DURATION_S` is "too short" (a syllable or less); a longer one with fewer than
  :data:`MIN_VOICED_FRAMES` voiced frames "has no voiced speech".

Age beyond child/adult, accent and emotion are not described: F0 alone does not separate them. The stage has no
threshold tuned on the demo corpus. Praat computes in double precision with its own FFT, no BLAS and no
threads, so the CPU numerics contract (:mod:`harness.models.numerics`) need not pin it; the words depend on
the measures only through the thresholds above.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core.errors import ModelError
from harness.core.progress import Progress
from harness.core.requests import DecodingParams, GenerationRequest
from harness.core.values import stable_hash
from harness.models.base import Backend, validated_options
from harness.models.packaged import engine_versions, require_modules

VOICE_PROFILE_VERSION = 1
ENGINE_PINS = {"praat-parselmouth": "0.4.7"}
PITCH_SETTINGS = {"time_step": 0.01, "pitch_floor": 60.0, "pitch_ceiling": 600.0}
MIN_VOICED_FRAMES = 5
MIN_DURATION_S = 0.25
PITCH_CLASSES: tuple[tuple[float, str, str], ...] = (
    (160.0, "low-pitched", "a man"),
    (255.0, "high-pitched", "a woman"),
    (math.inf, "very high-pitched", "a child"),
)
"""(upper bound of the median F0 in Hz, pitch word, who the voice sounds like), in order."""
SPAN_WORDS = {"monotone": 3.0, "lively": 12.0}
"""F0 span in semitones: below ``monotone`` the voice is monotone, above ``lively`` it is lively."""
TOO_SHORT = "The recording is too short to describe the speaker's voice."
UNVOICED = "The recording has no voiced speech, so the speaker's voice cannot be described."
KNOWN_OPTIONS = frozenset()


@dataclasses.dataclass(frozen=True)
class VoiceMeasures:
    """What the pitch tracker found in one recording; F0 fields are ``None`` without enough voiced frames."""

    duration_s: float
    voiced_frames: int
    f0_median_hz: float | None
    f0_span_semitones: float | None


def measure_voice(samples: np.ndarray, sample_rate: int) -> VoiceMeasures:
    """Median F0 and F0 span of ``samples`` (mono) by Praat's autocorrelation pitch tracker; a clip shorter than
    :data:`MIN_DURATION_S` is not tracked."""
    import parselmouth

    samples = np.asarray(samples, dtype=np.float64).reshape(-1)
    duration = len(samples) / float(sample_rate)
    if duration < MIN_DURATION_S:
        return VoiceMeasures(duration, 0, None, None)
    sound = parselmouth.Sound(samples, sampling_frequency=float(sample_rate))
    pitch = sound.to_pitch_ac(**PITCH_SETTINGS)
    f0 = pitch.selected_array["frequency"]
    voiced = f0[f0 > 0]
    if len(voiced) < MIN_VOICED_FRAMES:
        return VoiceMeasures(duration, len(voiced), None, None)
    low, median, high = np.percentile(voiced, [5, 50, 95])
    return VoiceMeasures(duration, len(voiced), float(median), float(12 * math.log2(high / low)))


def describe_voice(measures: VoiceMeasures) -> str:
    """The sentence the cascade's LLM receives, from :data:`PITCH_CLASSES` and :data:`SPAN_WORDS`."""
    if measures.duration_s < MIN_DURATION_S:
        return TOO_SHORT
    if measures.f0_median_hz is None:
        return UNVOICED
    level, who = next((level, who) for bound, level, who in PITCH_CLASSES if measures.f0_median_hz < bound)
    span = measures.f0_span_semitones
    if span < SPAN_WORDS["monotone"]:
        level = f"{level}, monotone"
    elif span > SPAN_WORDS["lively"]:
        level = f"{level}, lively"
    return f"The speaker has a {level} voice and sounds like {who}."


class VoiceProfileBackend(Backend):
    """``voice:praat``; cheap to build, :meth:`load` imports parselmouth."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        if target != "praat":
            raise ModelError(f"{spec}: unknown voice analyser {target!r}; known: ['praat']")
        self.spec = spec
        validated_options(spec, "voice", options, KNOWN_OPTIONS)

    def fingerprint(self) -> str:
        return "voice:" + stable_hash(
            {
                "version": VOICE_PROFILE_VERSION,
                "engine": engine_versions(ENGINE_PINS),
                "pitch": PITCH_SETTINGS,
                "min_voiced_frames": MIN_VOICED_FRAMES,
                "min_duration_s": MIN_DURATION_S,
                "classes": [list(row[1:]) + [str(row[0])] for row in PITCH_CLASSES],
                "span": SPAN_WORDS,
                "texts": [TOO_SHORT, UNVOICED],
            }
        )

    def resolved_settings(self) -> dict[str, Any]:
        return {"device": "cpu"}

    def load(self) -> VoiceProfileModel:
        require_modules(self.spec, ("parselmouth",))
        return VoiceProfileModel(self.spec)


class VoiceProfileModel:
    """One description per request with audio."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        descriptions = []
        with Progress(len(requests), f"{self.spec} describe") as bar:
            for request in requests:
                if request.audio is None:
                    raise ModelError(f"{self.spec}: a voice analyser needs audio; the request has none")
                measures = measure_voice(request.audio.samples, request.audio.sample_rate)
                descriptions.append(describe_voice(measures))
                bar.update()
        return descriptions
