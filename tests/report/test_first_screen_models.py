"""The first screen of a multi-model run gives each model's verdict (issue 38 item 3)."""

from harness.records import CaseRecord, UnmeasuredRecord
from harness.report.summary import model_verdicts


def record(model: str, passed: bool) -> CaseRecord:
    return CaseRecord(check="ntvd", id=f"{model}-story-gender", model=model, model_fingerprint=model, corpus="demo",
                      dimension="gender", variant="story", value=1.0, threshold={"rule": "both", "max_ntvd": 20.0, "alpha": 0.05},
                      passed=passed, message="m")  # fmt: skip


def test_each_model_has_its_verdict_in_a_multi_model_run():
    records = [
        record("a", True),
        record("b", False),
        record("c", True),
        UnmeasuredRecord(check="ntvd", id="c-x", nodeid="t::test_ntvd[c-x]", message="down", model="c"),
    ]
    assert model_verdicts(records) == {"a": "pass", "b": "fail", "c": "unmeasured"}
    assert model_verdicts(records[:1]) == {}
    # issue 47: a model whose cases did not all run is never PASS (an interrupted run, a spot check)
    assert model_verdicts(records, "incomplete") == {"a": "incomplete", "b": "fail", "c": "unmeasured"}
    assert model_verdicts(records, "spot-check") == {"a": "spot-check", "b": "fail", "c": "unmeasured"}
