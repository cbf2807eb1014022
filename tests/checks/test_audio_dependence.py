"""The audio floor's probe and test (issues 45 and 58): the plan, the replicate arm's own cache key, how answers are
read, the replicate-controlled test on hand-computed answers, its level on simulated deaf models (greedy,
nondeterministic, sampled) and its power on hearing ones, and which probe each check's cases take."""

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
from harness.metrics.audio_dependence import ORIGINAL, OTHER_RECORDING, REPLICATE, SILENCE, audio_dependence
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


def test_both_probes_ask_the_same_recordings_in_four_arms_the_replicate_under_a_key_of_its_own(corpus):
    """The replicate asks the original's audio and prompt again, as a request whose cache key is its own, so that no
    cache answers it with the original's answer."""
    from harness.cache import generation_cache_keys

    task = task_probe_requests(corpus, {name: TASKS[name] for name in ("story", "advisory")}, 3)
    heard = transcription_probe_requests(corpus, "", 3)
    assert len(task.requests) == 2 * 3 * 4 and len(heard.requests) == 3 * 4
    assert set(heard.rows["audio"]) == {ORIGINAL, REPLICATE, SILENCE, OTHER_RECORDING}
    clips = lambda built: {r.audio.content_hash for r in built.requests}  # noqa: E731
    assert clips(task) == clips(heard)
    assert all(request.prompt == "" for request in heard.requests)
    silent = [r for r, audio in zip(heard.requests, heard.rows["audio"]) if audio == SILENCE]
    assert all(not np.any(r.audio.samples) for r in silent)
    for built in (task, heard):
        arm = dict(zip(zip(built.rows["request"], built.rows["audio"]), built.requests))
        keys = dict(
            zip(
                zip(built.rows["request"], built.rows["audio"]),
                generation_cache_keys("generate", "m", {}, built.requests),
            )
        )
        for request in set(built.rows["request"]):
            original, replicate = arm[(request, ORIGINAL)], arm[(request, REPLICATE)]
            assert replicate.audio is original.audio and replicate.prompt == original.prompt
            assert (original.replicate, replicate.replicate) == (0, 1)
            assert keys[(request, ORIGINAL)] != keys[(request, REPLICATE)]
            assert replicate.cache_identity() == {**original.cache_identity(), "replicate": 1}


def test_the_replicate_keys_as_the_general_encoder_writes_it_and_survives_a_plan_row(tmp_path):
    """The cache's fast key path writes the replicate as the general encoder does; a plan row keeps it, so a fill
    answers the replicate under its own key."""
    pytest.importorskip("pyarrow")
    from harness.cache import cache_key, generation_cache_keys
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation.request_plan import Planner, read_plan

    requests = [GenerationRequest("p", None, "s"), GenerationRequest("p", None, "s", replicate=2)]
    fast = generation_cache_keys("generate", "m", {"seed": 0}, requests)
    assert fast == [cache_key("generate", "m", {"seed": 0}, r.cache_identity()) for r in requests]
    assert fast[0] != fast[1]
    planner = Planner(tmp_path / "plan.audio")
    planner.add(namespace="generate", spec="sim:fair", fingerprint="fp", options={}, decoding=DecodingParams(),
                label="probe", requests=requests, keys=fast)  # fmt: skip
    planner.write(tmp_path / "plan.parquet")
    rows = {row.key: row.request() for row in read_plan(tmp_path / "plan.parquet")}
    assert [rows[key] for key in fast] == requests


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


def probe_table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["stratum", "utterance", "audio", "value"])


def test_audio_dependence_on_hand_computed_answers():
    """Four recordings: replicate changed once (r3), silence twice, the other recording three times. rate(replicate)
    = 1/4, rate(silence) = 2/4, rate(other) = 3/4: D(silence) = 1/4, D(other) = 1/2, share = 1/2."""
    rows = [("t", "r1", ORIGINAL, "A"), ("t", "r1", REPLICATE, "A"), ("t", "r1", SILENCE, "A"), ("t", "r1", OTHER_RECORDING, "B"),
            ("t", "r2", ORIGINAL, "C"), ("t", "r2", REPLICATE, "C"), ("t", "r2", SILENCE, "C"), ("t", "r2", OTHER_RECORDING, "C"),
            ("t", "r3", ORIGINAL, "E"), ("t", "r3", REPLICATE, "X"), ("t", "r3", SILENCE, "F"), ("t", "r3", OTHER_RECORDING, "G"),
            ("t", "r4", ORIGINAL, "H"), ("t", "r4", REPLICATE, "H"), ("t", "r4", SILENCE, "Z"), ("t", "r4", OTHER_RECORDING, "I")]  # fmt: skip
    result = audio_dependence(probe_table(rows), 99, seed=0)
    assert result.changed == {REPLICATE: 0.25, OTHER_RECORDING: 0.75, SILENCE: 0.5}
    assert result.dependent == {OTHER_RECORDING: 0.5, SILENCE: 0.25}
    assert result.share == 0.5 and result.blind_share == 0.5 and result.units == 4 and result.permutations == 99
    from harness.metrics import audio_dependence as module

    whole = audio_dependence(probe_table(rows), 999, seed=3)
    module.RELABELLED_CELLS, kept = 50, module.RELABELLED_CELLS  # relabelled in blocks of 4: the same draws, same p
    try:
        assert audio_dependence(probe_table(rows), 999, seed=3) == whole
    finally:
        module.RELABELLED_CELLS = kept
    with pytest.raises(ValueError, match="recording 'r1' of 't' has two answers with audio 'original'"):
        audio_dependence(probe_table(rows + [rows[0]]), 9)
    with pytest.raises(ValueError, match="needs answers with 'original', 'replicate' and a replacement"):
        audio_dependence(probe_table([row for row in rows if row[2] != REPLICATE]), 9)


def test_a_deterministic_greedy_figure_is_the_exact_match_figure_of_before():
    """rate(replicate) = 0 for a deterministic decoder, so share = 1 - min_r unchanged(r) (issue 45's figure): a
    model that answers by the words alone (alike for another voice saying the same words, not for silence) hears."""
    rows = [("t", f"r{i}", audio, answer) for i in range(10)
            for audio, answer in ((ORIGINAL, f"words {i}"), (REPLICATE, f"words {i}"), (OTHER_RECORDING, f"words {i}"), (SILENCE, "nothing"))]  # fmt: skip
    result = audio_dependence(probe_table(rows), 999, seed=0)
    assert result.changed == {REPLICATE: 0.0, OTHER_RECORDING: 0.0, SILENCE: 1.0} and result.share == 1.0
    assert result.p_value < 0.01
    deaf = [(s, u, audio, "same") for s, u, audio, _ in rows]
    found = audio_dependence(probe_table(deaf), 999, seed=0)
    assert found.share == 0.0 and found.p_value == 1.0


def simulated_answers(rng, recordings: int, hearing: bool, noise: float, strata: int = 2) -> pd.DataFrame:
    """One answer per stratum, recording and arm. Each call is decoding noise with probability ``noise`` (a fresh
    draw over 6 values); otherwise the answer is the recording's own value (a hearing model: a replacement gives
    another's; a deaf model: one value for every audio)."""
    rows = []
    for stratum in range(strata):
        for recording in range(recordings):
            for audio in (ORIGINAL, REPLICATE, SILENCE, OTHER_RECORDING):
                heard = {ORIGINAL: recording, REPLICATE: recording, SILENCE: -1, OTHER_RECORDING: recording + 1}[audio]
                value = f"noise {rng.integers(6)}" if rng.random() < noise else f"value {heard if hearing else 0}"
                rows.append((f"s{stratum}", f"r{recording}", audio, value))
    return probe_table(rows)


@pytest.mark.parametrize("noise", [0.0, 0.5, 1.0], ids=["greedy", "nondeterministic", "sampled"])
def test_the_test_holds_its_level_on_deaf_models_and_has_power_on_hearing_ones(noise):
    """Level: of 200 deaf models (24 recordings x 2 strata, 199 relabellings) at most as many are called hearing
    at p < 0.05 as the 99.9% binomial bound of 200 draws at 5% allows (21), for a deterministic greedy decoder
    (never: every answer is equal), a backend nondeterministic in half its calls and a sampler whose every answer
    is a fresh draw (measured on 500: 0%, 4.0%, 2.8%). Power at p < 0.01: every deterministic hearing model; of 20
    hearing models with half their calls noise at least 12 (76.5% of 200 measured)."""
    rng = np.random.default_rng(58)
    deaf = [audio_dependence(simulated_answers(rng, 24, False, noise), 199, seed=s).p_value for s in range(200)]
    assert sum(p < 0.05 for p in deaf) <= 21
    if noise < 1.0:
        hearing = [audio_dependence(simulated_answers(rng, 24, True, noise), 199, seed=s).p_value for s in range(20)]
        assert sum(p < 0.01 for p in hearing) >= (20 if noise == 0 else 12)


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
