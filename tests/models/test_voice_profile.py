"""The perceived-voice stage (``voice:praat``): Praat's pitch on tones of known pitch, silence and a clip too short
for pitch; the thresholds that turn measures into words; the stage inside the demo cascade."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import soundfile

from harness.core.errors import ModelError
from harness.core.requests import GenerationRequest
from harness.models import build_backend
from harness.models.voice_profile import (
    MIN_DURATION_S,
    PITCH_CLASSES,
    SPAN_WORDS,
    TOO_SHORT,
    UNVOICED,
    VoiceMeasures,
    describe_voice,
    measure_voice,
)

pytest.importorskip("parselmouth")

RATE = 16_000


def voiced_tone(f0_start: float, f0_end: float | None = None, seconds: float = 1.0) -> np.ndarray:
    """A harmonic complex (ten harmonics, falling 1/k) whose F0 glides exponentially from start to end."""
    f0_end = f0_start if f0_end is None else f0_end
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = f0_start * (f0_end / f0_start) ** (t / seconds)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    wave = sum(np.sin(k * phase) / k for k in range(1, 11))
    return 0.5 * wave / np.max(np.abs(wave))


@pytest.mark.parametrize("f0, who", [(110.0, "a man"), (210.0, "a woman"), (320.0, "a child")])
def test_a_steady_tone_of_known_pitch_is_measured_and_described(f0, who):
    measures = measure_voice(voiced_tone(f0), RATE)
    assert measures.f0_median_hz == pytest.approx(f0, rel=0.01)
    assert measures.f0_span_semitones < 0.1
    assert describe_voice(measures).endswith(f"monotone voice and sounds like {who}.")


def test_the_span_is_the_semitones_between_the_5th_and_95th_percentiles_of_the_glide():
    """An exponential glide over 8 semitones spends equal time on each semitone: its 5-95% span is 0.9 x 8."""
    start = 180.0
    measures = measure_voice(voiced_tone(start, start * 2 ** (8 / 12)), RATE)
    assert measures.f0_span_semitones == pytest.approx(0.9 * 8, abs=0.4)
    assert describe_voice(measures) == "The speaker has a high-pitched voice and sounds like a woman."
    lively = measure_voice(voiced_tone(120.0, 120.0 * 2 ** (16 / 12)), RATE)
    assert "lively" in describe_voice(lively)


def test_silence_has_no_voice_to_describe_and_a_short_clip_is_too_short():
    silence = measure_voice(np.zeros(RATE), RATE)
    assert silence.f0_median_hz is None and silence.voiced_frames == 0
    assert describe_voice(silence) == UNVOICED
    noise = measure_voice(np.random.default_rng(0).normal(0, 0.1, RATE), RATE)
    assert describe_voice(noise) == UNVOICED
    for seconds in (0.02, 0.06, MIN_DURATION_S - 0.01):
        assert describe_voice(measure_voice(voiced_tone(200.0, seconds=seconds), RATE)) == TOO_SHORT, seconds
    assert measure_voice(np.zeros(0), RATE).voiced_frames == 0


def test_the_words_follow_the_stated_thresholds_at_their_bounds():
    (man, _), (woman, _) = ((row[0], row[2]) for row in PITCH_CLASSES[:2])
    speaking = 6.0

    def words(f0, span=speaking):
        return describe_voice(VoiceMeasures(1.0, 100, f0, span))

    assert words(man - 0.01).endswith("a man.") and words(man).endswith("a woman.")
    assert words(woman - 0.01).endswith("a woman.") and words(woman).endswith("a child.")
    assert "monotone" in words(200.0, SPAN_WORDS["monotone"] - 0.01)
    assert "monotone" not in words(200.0, SPAN_WORDS["monotone"]) and "lively" not in words(200.0, 12.0)
    assert "lively" in words(200.0, SPAN_WORDS["lively"] + 0.01)
    assert math.isinf(PITCH_CLASSES[-1][0])


def test_the_demo_voices_are_described_by_their_pitch_not_their_labels():
    """Every male demo voice is heard as a man; a female voice is heard as a woman unless its median F0 falls
    below the 160 Hz bound (spk21, pitch setting 30, about 155 Hz), which the stage reports as it measures."""
    from harness.data import DEMO_CORPUS_PATH

    manifest = pd.read_csv(DEMO_CORPUS_PATH / "manifest.csv")
    rows = manifest.groupby("speaker_id").head(2)
    heard = []
    for row in rows.itertuples():
        samples, rate = soundfile.read(DEMO_CORPUS_PATH / row.audio)
        measures = measure_voice(samples, rate)
        heard.append((row.gender, measures.f0_median_hz, describe_voice(measures)))
    for gender, f0, description in heard:
        expected = "a man" if f0 < PITCH_CLASSES[0][0] else "a woman"
        assert description.endswith(f"sounds like {expected}.")
        if gender == "male":
            assert expected == "a man"
    women = [description for gender, _, description in heard if gender == "female"]
    assert sum(d.endswith("a woman.") for d in women) >= 0.8 * len(women)


def test_the_stage_is_a_spec_whose_fingerprint_holds_its_thresholds(monkeypatch):
    from harness.models import voice_profile

    backend = build_backend("voice:praat")
    fingerprint = backend.fingerprint()
    assert fingerprint.startswith("voice:")
    monkeypatch.setattr(voice_profile, "SPAN_WORDS", {"monotone": 2.0, "lively": 12.0})
    assert build_backend("voice:praat").fingerprint() != fingerprint
    with pytest.raises(ModelError, match="unknown voice analyser 'yin'"):
        build_backend("voice:yin")
    with pytest.raises(ModelError, match="needs audio"):
        backend.load().generate([GenerationRequest(prompt="hello")], None)
