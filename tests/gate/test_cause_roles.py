"""Causes name their source (issue 47, item 4): a helper model's failure (the extractor, judge, perceiver, embedder)
is blamed on that model with the option that set it, never on the model under test; a bad helper spec is refused
naming its option; an unmeasured line names its case once."""

from __future__ import annotations

import pytest

from harness.cache import OutputCache
from harness.core.errors import CaseNotMeasured, ModelError
from harness.core.requests import DecodingParams, GenerationRequest
from harness.gate import Unmeasured
from harness.gate.outcomes import cause_of
from harness.gate.roles import Role, blamed_role
from harness.generation.cached_model import CachedModel
from harness.records import Cause, UnmeasuredRecord
from harness.report.summary import cause_text

from support.gate import gate_project

pytest_plugins = ["pytester"]

DEMO = "cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"
ROLES = [Role("perceiver", "sim:fair", "--perceiver"), Role("extractor", "vllm:Qwen/Qwen3-8B", "--extractor")]


def error_of_helper(tmp_path, spec: str) -> ModelError:
    """The error a cached model raises when asked a prompt it cannot answer (the simulators answer only the
    prompt families they know), raised through :class:`~harness.generation.cached_model.CachedModel` as a check's call is."""
    cached = CachedModel(spec, OutputCache(tmp_path / "cache"), DecodingParams(), progress=False)
    with pytest.raises(ModelError) as raised:
        cached.generate([GenerationRequest("Which group does this voice belong to?")], label="perceived group")
    return raised.value


def test_a_helper_models_failure_is_blamed_on_it_with_its_option(tmp_path):
    error = error_of_helper(tmp_path, "sim:fair")
    role = blamed_role(error, DEMO, ROLES)
    assert role == ROLES[0]
    cause = cause_of(error, DEMO, role)
    assert (cause.kind, cause.source, cause.role, cause.set_by) == ("model", "sim:fair", "perceiver", "--perceiver")
    assert cause.where == "model, the perceiver sim:fair set by --perceiver"
    assert cause.to_json()["spec"] == "sim:fair" and DEMO not in cause.where


def test_the_model_under_test_and_errors_outside_a_model_keep_their_blame(tmp_path):
    error = error_of_helper(tmp_path, "sim:fair")
    assert blamed_role(error, "sim:fair", ROLES) is None  # a helper that is the model under test is that model
    plain = cause_of(error, "sim:fair", None)
    assert plain.where == "model, sim:fair" and set(plain.to_json()) == {"kind", "source", "message"}
    try:
        raise CaseNotMeasured("too few speakers")
    except CaseNotMeasured as not_measured:
        assert blamed_role(not_measured, DEMO, ROLES) is None


def test_an_unmeasured_line_names_its_case_once():
    from harness.checks.case import Case

    case = Case(
        check="ntvd", model="sim:fair", corpus="demo", dimension="gender", variant="story", id="sim:fair-story-gender"
    )
    cause = Cause("input", None, "sim:fair-story-gender: nTVD undefined at tau 10")
    assert Unmeasured(case, cause, None, RuntimeError()).message == "not measured (input): nTVD undefined at tau 10"
    record = UnmeasuredRecord(check="ntvd", id=case.id, message="m", cause=cause)
    assert cause_text(record) == "input error: nTVD undefined at tau 10"
    helper = Cause("model", "sim:fair", "boom", role="judge", spec="sim:fair", set_by="--judge")
    assert helper.where == "model, the judge sim:fair set by --judge"
    assert cause_text(UnmeasuredRecord(check="ntvd", id="x", message="m", cause=helper)) == (
        "model error (the judge sim:fair set by --judge): boom"
    )


@pytest.mark.parametrize("option", ["--perceiver", "--judge", "--extractor"])
def test_a_bad_helper_spec_is_refused_naming_its_option(pytester, option):
    gate_project(pytester, "test_vibe.py")
    result = pytester.runpytest("-p", "no:cacheprovider", "--model", "sim:fair", option, "nosuch:thing")
    assert result.ret == 4
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1
    # the known backends listed include any a test of the same process registered, so only the shipped ones are held
    assert errors[0].startswith(
        f"ERROR: lalm-fairness: {option} nosuch:thing: model spec 'nosuch:thing': unknown backend 'nosuch'; known "
        "backends: ['cascade', "
    )
    assert all(f"'{name}'" in errors[0] for name in ("hf", "openai", "sim", "smollm2", "vllm", "voice", "whisper"))
