"""The audio-dependence probe (issue 39): a model that ignores its audio is found, and the reason of its
voice-bias cases names the audio; cases whose group reaches the model in the text stay measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.checks import all_checks
from harness.checks.counterfactual.audio_dependence import (
    GROUP_IN_TEXT_MODES,
    ORIGINAL,
    OTHER_RECORDING,
    SILENCE,
    needs_audio,
    probe,
    probe_answers,
    probe_plan,
)
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core.requests import Audio
from harness.data.corpus import load_corpus
from harness.metrics.counterfactual import audio_dependence
from harness.models import build_backend
from harness.tasks import TASKS
from harness.thresholds import packaged_thresholds

DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"
PROBE_TASKS = {name: TASKS[name] for name in ("story", "personal_shopper")}


class SilencedModel:
    """A test backend that drops the audio: every request reaches ``model`` with the same second of silence, as a
    wrong processor argument leaves it (the model then sees one input whatever the recording)."""

    def __init__(self, model):
        self.model = model

    def generate(self, requests, params):
        silenced = [
            request if request.audio is None else
            type(request)(**{**vars(request), "audio": Audio(np.zeros(request.audio.sample_rate), request.audio.sample_rate)})
            for request in requests
        ]  # fmt: skip
        return self.model.generate(silenced, params)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(DEMO, check_audio=False)


@pytest.fixture(scope="module")
def settings():
    return packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")


def test_probe_plan_pairs_each_recording_with_another_speaker_saying_other_words(corpus):
    plan = probe_plan(corpus, 24, seed=0)
    assert len(plan) == 24 and plan["utterance_id"].is_unique
    for column in ("speaker_id", "content_id"):
        values = corpus.table[column]
        assert (values[plan["utterance_id"]].to_numpy() != values[plan["other_utterance_id"]].to_numpy()).all()
    assert plan.equals(probe_plan(corpus, 24, seed=0)) and not plan.equals(probe_plan(corpus, 24, seed=1))


def test_a_model_that_hears_is_not_flagged(corpus, settings):
    dependence, reason = probe(build_backend("sim:biased").load(), "sim:biased", corpus, PROBE_TASKS, settings)
    assert reason is None
    assert dependence.requests == 2 * settings["probe_requests_per_task"]
    assert dependence.share < settings["audio_blind_share"]


def test_a_model_fed_silence_does_not_hear_and_every_voice_case_says_so(corpus, settings):
    deaf = SilencedModel(build_backend("sim:biased").load())
    dependence, reason = probe(deaf, "sim:biased (audio dropped)", corpus, PROBE_TASKS, settings)
    assert dependence.unchanged[SILENCE] == 1.0 and dependence.share == 1.0
    assert reason.startswith("sim:biased (audio dropped) does not hear the audio")
    assert "100% of 48 probe requests" in reason and "audio_blind_share 90%" in reason


def test_audio_dependence_shares_on_known_answers():
    rows = [("r1", ORIGINAL, "A"), ("r1", SILENCE, "A"), ("r1", OTHER_RECORDING, "B"),
            ("r2", ORIGINAL, "C  d"), ("r2", SILENCE, "C d"), ("r2", OTHER_RECORDING, "C d"),
            ("r3", ORIGINAL, "E"), ("r3", SILENCE, "F"), ("r3", OTHER_RECORDING, "G"),
            ("r4", ORIGINAL, "H"), ("r4", SILENCE, "H"), ("r4", OTHER_RECORDING, "I")]  # fmt: skip
    result = audio_dependence(pd.DataFrame(rows, columns=["request", "audio", "answer"]))
    assert result.unchanged == {OTHER_RECORDING: 0.25, SILENCE: 0.75} and result.share == 0.25 and result.requests == 4
    with pytest.raises(ValueError, match="request 'r1' has two answers with audio 'original'"):
        audio_dependence(pd.DataFrame(rows + [rows[0]], columns=["request", "audio", "answer"]))


def test_a_model_that_answers_by_the_words_alone_hears_even_when_another_voice_leaves_it_unchanged():
    """The false call of a first floor: on a corpus where every recording has the same words, a fair model answers
    alike for another speaker (100% unchanged) but not for silence (0%): it hears, and its figure is the smaller."""
    rows = [(f"r{i}", audio, answer) for i in range(10)
            for audio, answer in ((ORIGINAL, f"words {i}"), (OTHER_RECORDING, f"words {i}"), (SILENCE, "nothing heard"))]  # fmt: skip
    result = audio_dependence(pd.DataFrame(rows, columns=["request", "audio", "answer"]))
    assert result.unchanged == {OTHER_RECORDING: 1.0, SILENCE: 0.0} and result.share == 0.0


def test_probe_answers_are_one_row_per_task_recording_and_audio(corpus):
    answers = probe_answers(build_backend("sim:fair").load(), corpus, PROBE_TASKS, 3)
    assert len(answers) == 2 * 3 * 3
    assert answers.groupby("request")["audio"].apply(sorted).map(tuple).unique().tolist() == [
        tuple(sorted((ORIGINAL, SILENCE, OTHER_RECORDING)))
    ]


def test_voice_bias_cases_need_audio_and_text_group_cases_do_not(tmp_path):
    from harness.gate import Gate, GateConfig

    gate = Gate(GateConfig(models=("sim:biased",), cache_dir=str(tmp_path), judge="sim:biased"))
    cases = [case for check in all_checks() for case in check.cases(gate.context)]
    voice = {(case.check, case.variant) for case in cases if needs_audio(case.variant)}
    text = {(case.check, case.variant) for case in cases if not needs_audio(case.variant)}
    assert {check for check, _ in voice} >= {"ntvd", "wer_ratio", "score_ratio", "classification", "robustness", "icat"}
    assert all(variant == "speech-implicit" for check, variant in voice if check in ("icat", "personalization"))
    assert text and {variant for _, variant in text} <= GROUP_IN_TEXT_MODES
    assert ("icat", "speech-explicit") in text and ("icat", "text-implicit") in text
