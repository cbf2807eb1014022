"""The first screen of a multi-model run gives each model's verdict (issue 38 item 3), read from the run's
decision (issue 47 item 1), and the decision judges each model on its own cases."""

from harness.records import CaseRecord, UnmeasuredRecord
from harness.report.summary import model_verdicts
from harness.results import RunMetadata, RunResults, Summary
from harness.run_decision import decide_run


def record(model: str, passed: bool) -> CaseRecord:
    return CaseRecord(check="ntvd", id=f"{model}-story-gender", model=model, model_fingerprint=model, corpus="demo",
                      dimension="gender", variant="story", value=1.0, threshold={"rule": "both", "max_ntvd": 20.0, "alpha": 0.05},
                      passed=passed, message="m")  # fmt: skip


RECORDS = [
    record("a", True),
    record("b", False),
    record("c", True),
    UnmeasuredRecord(check="ntvd", id="c-x", nodeid="t::test_ntvd[c-x]", message="down", model="c"),
]


def verdicts(**scope) -> dict[str, str]:
    return {model.model: model.verdict for model in decide_run(RECORDS, **scope).models}


def test_each_model_has_its_verdict_in_a_multi_model_run():
    assert verdicts() == {"a": "pass", "b": "fail", "c": "unmeasured"}
    screen = model_verdicts(RunResults(decide_run(RECORDS), Summary.of(RECORDS), RunMetadata(), tuple(RECORDS)))
    assert [(line["model"], line["verdict"]) for line in screen] == [("a", "pass"), ("b", "fail"), ("c", "unmeasured")]
    one = RECORDS[:1]
    assert model_verdicts(RunResults(decide_run(one), Summary.of(one), RunMetadata(), tuple(one))) == []


def test_a_model_with_cases_that_did_not_run_is_never_pass():
    """Issue 47: in a stopped run a model with cases that did not run is incomplete, whatever its other cases
    say; one whose every case finished keeps its own verdict; where the file cannot say whose cases did not run,
    every model is incomplete. A spot check leaves the models it left cases of at spot-check."""
    assert verdicts(not_run={"a": 2}) == {"a": "incomplete", "b": "fail", "c": "unmeasured"}
    assert verdicts(not_run={"b": 1}) == {"a": "pass", "b": "incomplete", "c": "unmeasured"}
    assert verdicts(not_run={None: 1}) == {"a": "incomplete", "b": "incomplete", "c": "incomplete"}
    assert verdicts(stopped=True) == {"a": "incomplete", "b": "incomplete", "c": "incomplete"}
    assert verdicts(left_out={"a": 3}) == {"a": "spot-check", "b": "fail", "c": "unmeasured"}
    assert verdicts(spot_check=True) == {"a": "spot-check", "b": "spot-check", "c": "spot-check"}
    late = decide_run(RECORDS, not_run={"d": 4}, models=["d"])
    assert late.verdict == "incomplete" and late.models[0].model == "d" and late.models[0].verdict == "incomplete"
    assert late.models[0].counts_text() == "0 cases: 0 passed, 0 failed, 0 unmeasured; 4 did not run"
