"""The sim: simulator hears only the waveform, is deterministic, and is voice-blind when fair."""

import numpy as np
import pytest

from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.data import resolve_corpus
from harness.extraction.fields import extract_fields
from harness.models import build_backend
from harness.models.sim import acoustic_features, pitch_score
from harness.tasks import TASKS


def harmonic_tone(f0, seconds=1.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return Audio(sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6)).astype(np.float32) * 0.2)


@pytest.mark.parametrize("f0", [90.0, 120.0, 180.0, 230.0])
def test_pitch_tracker_recovers_f0_of_a_harmonic_tone(f0):
    assert acoustic_features(harmonic_tone(f0))["f0_hz"] == pytest.approx(f0, rel=0.03)


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
