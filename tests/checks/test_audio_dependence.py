"""The audio floor's probe and tests (issue 45): the plan, how answers are read, the exact test on hand-computed
answers, the distributional test's level on a simulated deaf sampler and its power on a hearing one, and which probe
each check's cases take."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.checks import all_checks, get_check
from harness.checks.base import TASK_PROBE, TRANSCRIPTION_PROBE
from harness.core.modes import SPEECH_IMPLICIT
from harness.data.corpus import load_corpus
from harness.gate.audio_probe import (
    EMPTY_ANSWER,
    probe_plan,
    read_task_answer,
    read_transcript,
    task_probe_requests,
    transcription_probe_requests,
)
from harness.metrics.audio_dependence import (
    ORIGINAL,
    OTHER_RECORDING,
    SILENCE,
    audio_dependence,
    sampled_audio_dependence,
)
from harness.tasks import TASKS

DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(DEMO, check_audio=False)


def test_probe_plan_pairs_each_recording_with_another_speaker_saying_other_words(corpus):
    plan = probe_plan(corpus, 24, seed=0)
    assert len(plan) == 24 and plan["utterance_id"].is_unique
    for column in ("speaker_id", "content_id"):
        values = corpus.table[column]
        assert (values[plan["utterance_id"]].to_numpy() != values[plan["other_utterance_id"]].to_numpy()).all()
    assert plan.equals(probe_plan(corpus, 24, seed=0)) and not plan.equals(probe_plan(corpus, 24, seed=1))


def test_both_probes_ask_the_same_recordings_in_three_variants(corpus):
    task = task_probe_requests(corpus, {name: TASKS[name] for name in ("story", "advisory")}, 3)
    heard = transcription_probe_requests(corpus, "", 3)
    assert len(task.requests) == 2 * 3 * 3 and len(heard.requests) == 3 * 3
    assert set(heard.rows["audio"]) == {ORIGINAL, SILENCE, OTHER_RECORDING}
    clips = lambda built: {r.audio.content_hash for r in built.requests}  # noqa: E731
    assert clips(task) == clips(heard)
    assert all(request.prompt == "" for request in heard.requests)
    silent = [r for r, audio in zip(heard.requests, heard.rows["audio"]) if audio == SILENCE]
    assert all(not np.any(r.audio.samples) for r in silent)


def test_answers_are_read_as_the_checks_read_them():
    """Two answers in other prose with the same extracted value read alike; another value reads otherwise."""
    story = TASKS["story"]
    attribute = story.attributes[0]
    label = attribute.labels[0]
    one, _ = read_task_answer(f"Once upon a time.\n{label}: Nurses", story)
    other, tokens = read_task_answer(f"A different tale, other words.\n**{label}:** a nurse", story)
    assert one == other and tokens[0].startswith("status=") and f"{attribute.name}=nurse" in tokens
    assert read_task_answer(f"Once upon a time.\n{label}: teacher", story)[0] != one
    assert read_transcript("Hello, World!")[0] == read_transcript("hello world")[0] == "hello world"
    assert read_transcript("")[1] == (EMPTY_ANSWER,)


def test_audio_dependence_shares_on_known_answers():
    rows = [("r1", ORIGINAL, "A"), ("r1", SILENCE, "A"), ("r1", OTHER_RECORDING, "B"),
            ("r2", ORIGINAL, "C d"), ("r2", SILENCE, "C d"), ("r2", OTHER_RECORDING, "C d"),
            ("r3", ORIGINAL, "E"), ("r3", SILENCE, "F"), ("r3", OTHER_RECORDING, "G"),
            ("r4", ORIGINAL, "H"), ("r4", SILENCE, "H"), ("r4", OTHER_RECORDING, "I")]  # fmt: skip
    result = audio_dependence(pd.DataFrame(rows, columns=["request", "audio", "value"]))
    assert result.unchanged == {OTHER_RECORDING: 0.25, SILENCE: 0.75} and result.share == 0.25 and result.requests == 4
    with pytest.raises(ValueError, match="request 'r1' has two answers with audio 'original'"):
        audio_dependence(pd.DataFrame(rows + [rows[0]], columns=["request", "audio", "value"]))


def test_a_model_that_answers_by_the_words_alone_hears_even_when_another_voice_leaves_it_unchanged():
    """On a corpus where every recording has the same words, a fair model answers alike for another speaker (100%
    unchanged) but not for silence (0%): it hears, and its figure is the smaller."""
    rows = [(f"r{i}", audio, answer) for i in range(10)
            for audio, answer in ((ORIGINAL, f"words {i}"), (OTHER_RECORDING, f"words {i}"), (SILENCE, "nothing"))]  # fmt: skip
    result = audio_dependence(pd.DataFrame(rows, columns=["request", "audio", "value"]))
    assert result.unchanged == {OTHER_RECORDING: 1.0, SILENCE: 0.0} and result.share == 0.0


def sampler_answers(rng, requests: int, hearing: bool, tasks: int = 2) -> pd.DataFrame:
    """One sampled answer per task, request and audio variant. A deaf sampler draws every answer from one
    distribution over 6 values (its prompt's); a hearing one draws an answer with a recording from a distribution
    that depends on the recording (a mixture over recordings that differs from silence's)."""
    base = np.array([0.35, 0.25, 0.15, 0.1, 0.1, 0.05])
    rows = []
    for task in range(tasks):
        for request in range(requests):
            heard = np.roll(base, 1 + request % 3)
            for audio in (ORIGINAL, SILENCE, OTHER_RECORDING):
                p = heard if hearing and audio != SILENCE else base
                value = f"value {rng.choice(6, p=p)}"
                rows.append((f"task{task}", audio, ("status=extracted", f"attribute={value}")))
    return pd.DataFrame(rows, columns=["stratum", "audio", "tokens"])


def test_the_sampled_test_holds_its_level_on_a_deaf_sampler_and_has_power_on_a_hearing_one():
    """Level: 300 deaf samplers (24 requests x 2 tasks, 199 permutations) are called hearing at most as often as
    alpha = 0.05 allows (the 99.9% binomial bound of 300 draws at 5% is 29; ties of the discrete statistic make the
    test conservative: 2.4% of 1000 measured). Power: of 100 hearing samplers whose answer distribution moves with
    the recording, at least 75 are found at p < 0.05 (86% of 300 measured; 50% at the default alpha 0.01 with these
    two tasks, more with the five of a full run)."""
    rng = np.random.default_rng(45)
    deaf = [sampled_audio_dependence(sampler_answers(rng, 24, False), 199, seed=s).p_value for s in range(300)]
    hearing = [sampled_audio_dependence(sampler_answers(rng, 24, True), 199, seed=s).p_value for s in range(100)]
    assert 2 <= sum(p < 0.05 for p in deaf) <= 29, "none at all would mean a test that cannot reject"
    assert sum(p < 0.05 for p in hearing) >= 75


def test_the_sampled_test_on_hand_computed_answers():
    """Silence always answers 'x', recordings always 'y': T = 1, and only the labelling itself (and none of the
    other relabellings of 2 silence among 6) reaches it, so p = (1 + #{T_b >= 1}) / (B + 1) is small."""
    rows = [("t", audio, (value,)) for audio, value in
            [(SILENCE, "x"), (SILENCE, "x"), (ORIGINAL, "y"), (ORIGINAL, "y"), (OTHER_RECORDING, "y"), (OTHER_RECORDING, "y")]]  # fmt: skip
    result = sampled_audio_dependence(pd.DataFrame(rows, columns=["stratum", "audio", "tokens"]), 999, seed=1)
    assert result.statistic == 1.0 and result.requests == 2
    assert result.p_value == pytest.approx(1 / 15, abs=0.03)  # one of the C(6, 2) = 15 labellings reaches T = 1
    with pytest.raises(ValueError, match="stratum 't' needs answers with 'silence' and with a recording"):
        sampled_audio_dependence(pd.DataFrame(rows[2:], columns=["stratum", "audio", "tokens"]), 9)


def test_each_check_says_what_its_cases_must_hear(tmp_path):
    from harness.gate import Gate, GateConfig

    gate = Gate(GateConfig(models=("sim:biased",), cache_dir=str(tmp_path), judge="sim:biased"))
    cases = [case for check in all_checks() for case in check.cases(gate.context)]
    probes = {(case.check, case.variant): get_check(case.check).audio_probe(case) for case in cases}
    for check in ("wer_ratio", "score_ratio", "robustness"):
        assert {probe for (name, _), probe in probes.items() if name == check} == {TRANSCRIPTION_PROBE}
    assert probes[("counterfactual", "asr")] == TRANSCRIPTION_PROBE
    assert probes[("counterfactual", "story")] == probes[("counterfactual", "stereotype")] == TASK_PROBE
    assert {probe for (name, _), probe in probes.items() if name in ("ntvd", "classification")} == {TASK_PROBE}
    for check in ("icat", "personalization"):
        modes = {variant: probe for (name, variant), probe in probes.items() if name == check}
        assert modes.pop(SPEECH_IMPLICIT) == TASK_PROBE and modes and set(modes.values()) == {None}
