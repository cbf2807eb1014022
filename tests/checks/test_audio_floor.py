"""The audio-dependence floor in the gate (issue 39): a model fed silence has every voice-bias case unmeasured, with
a reason naming the audio; a hearing simulator is unaffected; a model served from shipped outputs without probe
answers has its probe unmeasured, loads nothing, and keeps its cases."""

from __future__ import annotations

import pytest

from harness.checks import all_checks
from harness.checks.counterfactual.audio_dependence import needs_audio
from harness.checks.counterfactual.floor import audio_floor, audio_floor_reason, probed_floors
from harness.gate import Gate, GateConfig, Unmeasured
from harness.models.cascade import DEMO_MODEL
from harness.results import RunMetadata

import support.hearing  # noqa: F401  (registers silenced:<preset>, the simulator fed silence)

TASKS = ("story", "personal_shopper")


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    config = GateConfig(
        models=("silenced:biased", "sim:fair"),
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        tasks=TASKS,
        judge="sim:fair",
        progress=False,
    )
    return Gate(config)


def all_cases(gate):
    return [case for check in all_checks() for case in check.cases(gate.context)]


def test_a_model_fed_silence_has_every_voice_bias_case_unmeasured_naming_the_audio(gate):
    cases = [case for case in all_cases(gate) if case.model == "silenced:biased"]
    voice = [case for case in cases if needs_audio(case.variant)]
    assert {case.check for case in voice} >= {"ntvd", "wer_ratio", "score_ratio", "classification", "icat"}
    for case in voice:
        outcome = gate.outcome(case)
        assert isinstance(outcome, Unmeasured), case.id
        assert "silenced:biased does not hear the audio" in outcome.cause.message
        assert "probe requests" in outcome.cause.message and "audio_blind_share" in outcome.cause.message
    text = [case for case in cases if not needs_audio(case.variant)]
    assert text and all(audio_floor_reason(gate.context, case, may_load=True) is None for case in text)


def test_a_hearing_simulator_is_unaffected(gate):
    floor = audio_floor(gate.context, "sim:fair", may_load=True)
    assert floor.blind_reason is None and floor.unmeasured is None
    assert floor.dependence.share < floor.blind_share
    cases = [case for case in all_cases(gate) if case.model == "sim:fair"]
    assert all(audio_floor_reason(gate.context, case, may_load=True) is None for case in cases)


def test_the_figures_reach_the_run_metadata_merged_over_processes(gate):
    audio_floor(gate.context, "sim:fair", may_load=True)
    audio_floor(gate.context, "silenced:biased", may_load=True)
    figures = probed_floors(gate.context)
    assert figures["silenced:biased"]["hears"] is False and figures["silenced:biased"]["share"] == 1.0
    assert figures["sim:fair"]["hears"] is True
    merged = RunMetadata.merge(
        [
            RunMetadata(audio_dependence={"sim:fair": figures["sim:fair"]}),
            RunMetadata(audio_dependence={"m": figures["sim:fair"]}),
        ]
    )
    assert set(merged.audio_dependence) == {"sim:fair", "m"}
    assert RunMetadata.from_json(merged.to_json(), "results.json").audio_dependence == merged.audio_dependence


def test_the_shipped_outputs_hold_the_demo_models_probe_which_is_measured_without_loading_it(tmp_path):
    gate = Gate(GateConfig(cache_dir=str(tmp_path), offline=True, progress=False))
    floor = audio_floor(gate.context, DEMO_MODEL, may_load=False, tasks=gate.context.tasks)
    assert floor.unmeasured is None and floor.blind_reason is None
    assert floor.dependence.requests == 24 * len(gate.context.tasks) and floor.dependence.share < 0.9
    assert not gate.context.model(DEMO_MODEL).loaded


def test_shipped_outputs_without_probe_answers_leave_the_probe_unmeasured_and_load_nothing(tmp_path):
    """A probe larger than the shipped one (30 requests per task) finds answers missing: unmeasured, no load."""
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("counterfactual:\n  defaults:\n    probe_requests_per_task: 30\n")
    config = GateConfig(cache_dir=str(tmp_path / "cache"), tasks=TASKS, offline=True, progress=False,
                        thresholds_path=str(thresholds))  # fmt: skip
    gate = Gate(config)
    case = next(case for case in gate.cases("ntvd") if case.model == DEMO_MODEL)
    assert audio_floor_reason(gate.context, case, may_load=False) is None
    floor = audio_floor(gate.context, DEMO_MODEL, may_load=False)
    assert floor.dependence is None and "the floor loads no model" in floor.unmeasured
    assert not gate.context.model(DEMO_MODEL).loaded
    assert probed_floors(gate.context)[DEMO_MODEL]["hears"] is None
