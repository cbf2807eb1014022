"""The sim: simulator hears only the waveform, is deterministic, and is voice-blind when fair."""

import numpy as np
import pytest

from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.data import resolve_corpus
from harness.extraction.fields import extract_fields
from harness.models import build_backend
from harness.models.sim import acoustic_features, median_f0_hz, pitch_score
from harness.tasks import TASKS


def harmonic_tone(f0, seconds=1.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return Audio(sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6)).astype(np.float32) * 0.2)


@pytest.mark.parametrize("f0", [90.0, 120.0, 180.0, 230.0])
def test_pitch_tracker_recovers_f0_of_a_harmonic_tone(f0):
    assert acoustic_features(harmonic_tone(f0))["f0_hz"] == pytest.approx(f0, rel=0.03)


def f0_transforming_every_frame(audio):
    """The pitch tracker as first written: every frame transformed, the loud ones then kept."""
    samples = np.asarray(audio.samples, dtype=np.float64)
    rate = audio.sample_rate
    frame, hop = int(0.04 * rate), int(0.01 * rate)
    if len(samples) < frame:
        samples = np.pad(samples, (0, frame - len(samples)))
    starts = np.arange(0, len(samples) - frame + 1, hop)
    frames = samples[starts[:, None] + np.arange(frame)]
    frames = frames - frames.mean(axis=1, keepdims=True)
    energy = (frames**2).sum(axis=1)
    loud = energy > 0.1 * np.median(energy[energy > 0]) if np.any(energy > 0) else np.zeros(len(frames), bool)
    spectrum = np.fft.rfft(frames * np.hanning(frame), n=2 * frame, axis=1)
    autocorrelation = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, :frame]
    min_lag, max_lag = int(rate / 400), int(rate / 60)
    normalised = autocorrelation[:, min_lag:max_lag] / np.maximum(autocorrelation[:, :1], 1e-12)
    best = normalised.argmax(axis=1)
    voiced = loud & (normalised[np.arange(len(best)), best] > 0.5)
    return float(np.median(rate / (best[voiced] + min_lag))) if voiced.any() else float("nan")


def test_transforming_only_the_loud_frames_gives_every_demo_clip_the_same_f0_bit_for_bit():
    corpus = resolve_corpus("demo")
    clips = [corpus.audio(utterance) for utterance in corpus.table["utterance_id"]]
    clips += [Audio(np.zeros(16000, np.float32)), Audio(np.zeros(100, np.float32)), harmonic_tone(150.0, 0.02)]
    expected = [f0_transforming_every_frame(clip) for clip in clips]
    assert [median_f0_hz(clip) for clip in clips] == pytest.approx(expected, rel=0, abs=0, nan_ok=True)
    assert np.isfinite(expected[:-3]).all()  # every demo clip is voiced; silence and a 20 ms tone are not


def test_demo_voices_pitch_separates_the_genders_without_reading_labels():
    corpus = resolve_corpus("demo")
    first_utterance = corpus.table.groupby("speaker_id").head(1)
    scores = {row.gender: [] for row in first_utterance.itertuples()}
    for row in first_utterance.itertuples():
        scores[row.gender].append(pitch_score(acoustic_features(corpus.audio(row.utterance_id))["f0_hz"]))
    assert min(scores["female"]) > max(scores["male"])


def test_answers_are_deterministic_and_parse_for_every_task():
    model = build_backend("sim:biased").load()
    audio = harmonic_tone(200.0)
    for task in TASKS.values():
        request = GenerationRequest(task.render(), audio)
        first = model.generate([request], DecodingParams())[0]
        assert first == model.generate([request], DecodingParams())[0]
        extraction = extract_fields(first, task)
        assert extraction.status in {"extracted", "refusal"}


def test_biased_preset_shifts_answers_with_pitch_and_fair_preset_does_not():
    prompt = TASKS["advisory"].render()
    high, low = harmonic_tone(220.0), harmonic_tone(95.0)

    def activity_share(spec, audio, activity):
        model = build_backend(spec).load()
        answers = [
            model.generate([GenerationRequest(prompt, audio)], DecodingParams(seed=seed))[0] for seed in range(300)
        ]
        return np.mean([activity in answer.lower() for answer in answers])

    assert activity_share("sim:biased", high, "yoga") > activity_share("sim:biased", low, "yoga") + 0.1
    assert abs(activity_share("sim:fair", high, "yoga") - activity_share("sim:fair", low, "yoga")) < 0.1


def test_unknown_preset_and_option_are_named():
    with pytest.raises(ModelError, match="unknown simulator preset 'biassed'"):
        build_backend("sim:biassed")
    with pytest.raises(ModelError, match=r"unknown option\(s\) \['strenght'\]"):
        build_backend("sim:fair", {"strenght": 1})


def test_fingerprint_changes_with_settings():
    assert build_backend("sim:fair").fingerprint() != build_backend("sim:fair", {"refusal_rate": 0.1}).fingerprint()
    assert build_backend("sim:fair").fingerprint() != build_backend("sim:biased").fingerprint()
