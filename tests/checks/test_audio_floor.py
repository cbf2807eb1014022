"""The audio floor in the gate (issues 45, 58 and 59, harness/gate/audio_floor.py): a model fed silence has every
voice-bias case unmeasured (its WER cases by the transcription probe), a hearing simulator is unaffected, text-mode
BASIS cases stay measured; a backend nondeterministic at temperature 0 that ignores its audio is caught by the
replicate arm; a probe that cannot be answered fails closed ("audio dependence not measured") and loads nothing;
the shipped outputs hold both probes of the demo models but their replicate arm (a named deviation); sampled decoders
are judged by the same test; each probe is asked once per run, its failure too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.checks import all_checks, get_check
from harness.checks.base import TASK_PROBE, TRANSCRIPTION_PROBE
from harness.core.requests import DecodingParams
from harness.gate import Gate, GateConfig, Unmeasured
from harness.gate.audio_floor import NOT_MEASURED, REPLICATE_ASSUMED
from harness.models.cascade import DEMO_MODEL, VOICE_BLIND_MODEL
from harness.results import RunMetadata
from harness.thresholds import ThresholdsError

import support.hearing  # (registers silenced:, sampling:, deaf-sampling: and unloadable: test backends)

TASKS = ("story", "personal_shopper")


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    config = GateConfig(
        models=("silenced:biased", "sim:fair", "deaf-sampling:fair"),
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        tasks=TASKS,
        judge="sim:fair",
        progress=False,
    )
    return Gate(config)


def all_cases(gate, model):
    return [case for check in all_checks() for case in check.cases(gate.context) if case.model == model]


def probe_of(case):
    return get_check(case.check).audio_probe(case)


def test_a_model_fed_silence_has_every_voice_bias_case_unmeasured_by_the_probe_its_check_names(gate):
    cases = all_cases(gate, "silenced:biased")
    voice = [case for case in cases if probe_of(case) is not None]
    assert {case.check for case in voice} >= {"ntvd", "wer_ratio", "score_ratio", "classification", "icat"}
    for case in voice:
        outcome = gate.outcome(case)
        assert isinstance(outcome, Unmeasured), case.id
        assert "silenced:biased does not hear the audio" in outcome.cause.message
        assert f"({probe_of(case)} probe of " in outcome.cause.message and "audio_blind_share" in outcome.cause.message
    wer = next(case for case in voice if case.check == "wer_ratio")
    message = gate.outcome(wer).cause.message
    assert (
        "its transcripts changed no more under replacement than under replication (changed: 0% with replicate"
        in message
    )
    assert "estimated audio-dependent share 0% of 24 recordings" in message
    text = [case for case in cases if probe_of(case) is None]
    assert {case.variant for case in text} >= {"speech-explicit", "text-implicit", "text-explicit"}
    assert all(gate.audio_floor.reason(case, TASKS) is None for case in text)
    explicit = next(case for case in text if case.check == "icat" and case.variant == "text-explicit")
    assert not isinstance(gate.outcome(explicit), Unmeasured)


def test_a_hearing_simulator_is_unaffected(gate):
    for probe in (TRANSCRIPTION_PROBE, TASK_PROBE):
        floor = gate.audio_floor.floor("sim:fair", probe, TASKS)
        assert floor.hears and floor.unmeasured is None and floor.decoding == "greedy" and floor.deviation is None
        assert floor.dependence.blind_share < floor.audio_blind_share and floor.dependence.p_value < floor.alpha
        assert floor.dependence.changed["replicate"] == 0.0  # deterministic: the replicate is answered alike
    assert all(gate.audio_floor.reason(case, TASKS) is None for case in all_cases(gate, "sim:fair"))


def test_the_figures_reach_the_run_metadata_per_probe_merged_over_processes(gate):
    for model in ("sim:fair", "silenced:biased"):
        for probe in (TRANSCRIPTION_PROBE, TASK_PROBE):
            gate.audio_floor.floor(model, probe, TASKS)
    figures = gate.audio_floor.probed()
    assert figures["silenced:biased"][TRANSCRIPTION_PROBE].hears is False
    assert figures["silenced:biased"][TASK_PROBE].audio_dependent_share == 0.0
    assert (
        figures["sim:fair"][TASK_PROBE].audio_dependent_share > 0.1 and figures["sim:fair"][TASK_PROBE].p_value < 0.01
    )
    assert figures["sim:fair"][TASK_PROBE].hears is True
    merged = RunMetadata.merge(
        [
            RunMetadata(audio_dependence={"sim:fair": {TASK_PROBE: figures["sim:fair"][TASK_PROBE]}}),
            RunMetadata(audio_dependence={"sim:fair": {TRANSCRIPTION_PROBE: figures["sim:fair"][TRANSCRIPTION_PROBE]}}),
        ]
    )
    assert merged.audio_dependence == {"sim:fair": figures["sim:fair"]}
    assert RunMetadata.from_json(merged.to_json(), "results.json").audio_dependence == merged.audio_dependence


@pytest.mark.parametrize("model", [DEMO_MODEL, VOICE_BLIND_MODEL])
def test_the_shipped_outputs_hold_both_probes_of_the_demo_models_measured_without_loading(tmp_path, model):
    """The transcription probe's silence transcripts are not entries of the ASR stage in the exports; the stage's
    transcript of the same silence inside the cascade's own cached task-probe answers stands in for them."""
    gate = Gate(GateConfig(models=(model,), cache_dir=str(tmp_path), offline=True, progress=False))
    task = gate.audio_floor.floor(model, TASK_PROBE, gate.context.tasks)
    assert task.hears and task.dependence.units == 24 * len(gate.context.tasks) and task.dependence.blind_share < 0.9
    heard = gate.audio_floor.floor(model, TRANSCRIPTION_PROBE)
    assert heard.hears and heard.dependence.units == 24 and heard.dependence.blind_share < 0.9
    # exports made before the replicate arm: the greedy replicate is taken as the original, a named deviation
    assert task.deviation == heard.deviation == REPLICATE_ASSUMED and task.dependence.changed["replicate"] == 0.0
    assert gate.audio_floor.probed()[model][TASK_PROBE].deviation == REPLICATE_ASSUMED
    assert heard.asked.startswith("whisper:tiny.en, the transcriber of")
    assert not gate.context.model(model).loaded and not gate.context.transcriber(model)[0].loaded


def test_shipped_outputs_lacking_probe_answers_leave_the_cases_unmeasured_and_load_nothing(tmp_path):
    """A probe larger than the shipped one (30 requests per task) finds answers missing: the task probe's for the 6
    new recordings, and the transcription probe's transcripts of their silence (the shipped task probe heard the
    silence of 24 only). The cases that need either probe are unmeasured, naming the missing answers (more than the
    replicates, so no greedy replicate is assumed); the floor loads no model."""
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("audio_floor:\n  defaults:\n    probe_requests_per_task: 30\n")
    config = GateConfig(cache_dir=str(tmp_path / "cache"), tasks=TASKS, offline=True, progress=False,
                        thresholds_path=str(thresholds))  # fmt: skip
    gate = Gate(config)
    for check, probe in (("wer_ratio", TRANSCRIPTION_PROBE), ("ntvd", TASK_PROBE)):
        case = next(case for case in gate.cases(check) if case.model == DEMO_MODEL)
        outcome = gate.outcome(case)
        assert isinstance(outcome, Unmeasured), case.id
        message = outcome.cause.message
        assert f"{NOT_MEASURED} for {DEMO_MODEL} ({probe} probe)" in message, message
        assert outcome.cause.kind == "model" and "probe answers on demo from" in message and "are not cached" in message
        assert "with silence" in message and "with replicate" in message
        assert "the run is offline: import the cache export of a run that asked the probe, or drop --offline" in message
        assert gate.audio_floor.probed()[DEMO_MODEL][probe].hears is None
    assert not gate.context.model(DEMO_MODEL).loaded


def test_a_probe_less_offline_run_leaves_every_voice_bias_case_unmeasured(tmp_path):
    """An offline run from a cache without the probe's answers (an imported cache of the cases alone) cannot show
    that the model hears: its voice-bias cases are unmeasured, never passed; its text-mode cases need no probe."""
    gate = Gate(GateConfig(models=("sim:fair",), cache_dir=str(tmp_path), tasks=TASKS, offline=True, progress=False))
    cases = all_cases(gate, "sim:fair")
    for case in [case for case in cases if probe_of(case) is not None][:6]:
        reason = gate.audio_floor.reason(case, TASKS)
        assert reason.startswith(f"{NOT_MEASURED} for sim:fair ({probe_of(case)} probe)"), reason
        assert "with other recording" in reason and "the floor loads no model (the run is offline:" in reason
    assert all(gate.audio_floor.reason(case, TASKS) is None for case in cases if probe_of(case) is None)


@pytest.fixture(scope="module")
def sampling_gate(tmp_path_factory):
    config = GateConfig(
        models=("deaf-sampling:fair", "sampling:fair"),
        cache_dir=str(tmp_path_factory.mktemp("sampled")),
        tasks=TASKS,
        decoding=DecodingParams(do_sample=True, temperature=0.7),
        permutations=999,
        progress=False,
    )
    return Gate(config)


def test_a_deaf_sampler_is_caught_where_exact_matching_would_pass_it(sampling_gate):
    """The deaf sampler's answers change call to call, so most survive no replacement (the exact test of issue 45
    would call it hearing); they change as much under replication, so it does not hear."""
    floor = sampling_gate.audio_floor.floor("deaf-sampling:fair", TASK_PROBE, TASKS)
    assert floor.decoding == "sampled" and floor.hears is False and floor.dependence.p_value >= 0.01
    assert min(floor.dependence.changed.values()) > 0.5  # unchanged share below 0.5: "hears" by exact matching
    assert "changed no more under replacement than under replication" in floor.blind_reason
    case = next(case for case in sampling_gate.cases("ntvd") if case.model == "deaf-sampling:fair")
    assert "deaf-sampling:fair does not hear the audio" in sampling_gate.outcome(case).cause.message


def test_a_hearing_sampler_is_not_caught(sampling_gate):
    floor = sampling_gate.audio_floor.floor("sampling:fair", TRANSCRIPTION_PROBE)
    assert floor.decoding == "sampled" and floor.hears and floor.dependence.p_value < 0.01
    assert floor.dependence.changed["replicate"] > 0  # its transcripts vary call to call, less than with other audio
    deaf = sampling_gate.audio_floor.floor("deaf-sampling:fair", TRANSCRIPTION_PROBE)
    assert deaf.hears is False


def test_a_nondeterministic_deaf_backend_configured_greedy_has_its_cases_unmeasured(gate):
    """Issue 58's measurement: a model that never hears its audio and answers each request under a fresh seed, run
    greedy. Issue 45's exact test found its task answers unchanged in 0% of the requests ("hears") and its nTVD and
    counterfactual cases passed; the replicate arm changes as often as the replacements, so it does not hear."""
    floor = gate.audio_floor.floor("deaf-sampling:fair", TASK_PROBE, TASKS)
    assert floor.decoding == "greedy" and floor.hears is False and floor.dependence.p_value >= 0.01
    assert 1 - max(floor.dependence.changed.values()) < 0.9  # the exact test's unchanged share: it "heard"
    assert floor.dependence.changed["replicate"] > 0.5
    cases = all_cases(gate, "deaf-sampling:fair")
    for check in ("ntvd", "counterfactual"):
        voice = [case for case in cases if case.check == check and probe_of(case) == TASK_PROBE]
        assert voice and all(
            "deaf-sampling:fair does not hear" in gate.audio_floor.reason(case, TASKS) for case in voice
        )
    ntvd = next(case for case in cases if case.check == "ntvd")
    assert isinstance(gate.outcome(ntvd), Unmeasured)


def test_each_probe_is_asked_once_per_run_its_failure_too(tmp_path):
    """Issue 59: a model that cannot load (a missing extra) is tried once by the floor, not once per case; every
    voice-bias case that needs the probe is unmeasured by one cause, the first case giving it and the later ones
    naming that case. A hearing model's two probes are asked once each however many cases ask."""
    config = GateConfig(models=("unloadable:fair", "sim:fair"), cache_dir=str(tmp_path), tasks=TASKS, progress=False)
    gate = Gate(config)
    cases = [case for case in gate.cases("ntvd") if case.model == "unloadable:fair"]
    assert len(cases) >= 3
    outcomes = [gate.outcome(case) for case in cases]
    assert support.hearing.LOAD_ATTEMPTS["unloadable:fair"] == 1 and gate.audio_floor.probes_asked == 1
    first, *later = outcomes
    assert isinstance(first, Unmeasured) and first.first_case is None and first.cause.kind == "model"
    assert f"{NOT_MEASURED} for unloadable:fair (task probe): the probe could not be asked:" in first.cause.message
    assert "needs the [demo] extra" in first.cause.message
    assert all(isinstance(o, Unmeasured) and o.first_case == cases[0].id for o in later)
    assert gate.audio_floor.probed()["unloadable:fair"][TASK_PROBE].hears is None
    hearing = [case for case in all_cases(gate, "sim:fair") if probe_of(case) is not None]
    for case in hearing[:12]:
        gate.audio_floor.reason(case, TASKS)
    assert gate.audio_floor.probes_asked == 1 + len({probe_of(case) for case in hearing[:12]})


@pytest.mark.parametrize(
    "section, match",
    [
        ("audio_floor:\n  defaults: {audio_blind_share: 1.5}\n", r"audio_floor.defaults.audio_blind_share = 1.5 must lie in \(0, 1\]"),
        ("audio_floor:\n  defaults: {alpha: 0}\n", r"audio_floor.defaults.alpha = 0 must lie in \(0, 1\)"),
        ("audio_floor:\n  defaults: {sampled_alpha: 0.01}\n", r"audio_floor.defaults: unknown key 'sampled_alpha'; valid: alpha, audio_blind_share, probe_requests_per_task"),
        ("audio_floor:\n  dimensions: {gender: {probe_requests_per_task: 0}}\n", r"probe_requests_per_task = 0 must be >= 1"),
        ("counterfactual:\n  defaults: {probe_requests_per_task: 30}\n", r"counterfactual.defaults.probe_requests_per_task: has moved to the gate's audio floor: set audio_floor.defaults.probe_requests_per_task"),
        ("counterfactual:\n  defaults: {audio_blind_share: 0.8}\n", r"set audio_floor.defaults.audio_blind_share"),
    ],
)  # fmt: skip
def test_the_audio_floor_section_is_validated_and_the_old_keys_name_the_new_one(tmp_path, section, match):
    path = tmp_path / "thresholds.yaml"
    path.write_text(section)
    with pytest.raises(ThresholdsError, match=match):
        Gate(GateConfig(models=("sim:fair",), cache_dir=str(tmp_path / "cache"), thresholds_path=str(path)))


def _probe_plan_by_rows(table, per_task, seed):
    """The probe plan as first written (a Python scan of the corpus per recording): the reference."""
    order = np.random.default_rng(seed).permutation(len(table))[: min(per_task, len(table))]
    chosen = table.index[order]
    speakers = table["speaker_id"]
    contents = table["content_id"] if "content_id" in table.columns else pd.Series(table.index, index=table.index)
    others = []
    for position, utterance in enumerate(chosen):
        pool = [*np.roll(chosen, -position - 1), *table.index]
        other_speaker = [u for u in pool if speakers[u] != speakers[utterance]]
        other_words = [u for u in other_speaker if contents[u] != contents[utterance]]
        others.append((other_words or other_speaker)[0])
    return pd.DataFrame({"utterance_id": list(chosen), "other_utterance_id": others})


def test_the_probe_plan_is_the_row_by_row_plan_on_random_corpora():
    from types import SimpleNamespace

    from harness.gate.audio_probe import probe_plan

    rng = np.random.default_rng(0)
    for trial in range(120):
        size = int(rng.integers(2, 40))
        speakers = rng.integers(0, int(rng.integers(2, 6)), size)
        if len(set(speakers)) < 2:
            continue
        columns = {"utterance_id": [f"u{i}" for i in range(size)], "speaker_id": [str(s) for s in speakers]}
        if trial % 3:
            columns["content_id"] = [f"c{c}" for c in rng.integers(0, int(rng.integers(1, 4)), size)]
        table = pd.DataFrame(columns).set_index("utterance_id", drop=False)
        for per_task in (1, 3, 10, 50):
            expected = _probe_plan_by_rows(table, per_task, trial)
            assert probe_plan(SimpleNamespace(table=table, manifest_path="m"), per_task, trial).equals(expected)
