"""The run's results assembled from what pytest reports (harness.gate.run, issue 37 item 4): a gate test that
failed without a verdict record is an unmeasured record of its own check and identity, built as a typed record."""

from __future__ import annotations

import dataclasses

from harness.checks.case import Case
from harness.gate.run import RunAssembly, terminal_lines
from harness.records import Cause, UnmeasuredRecord, case_key
from harness.results import RunMetadata, parse_results

NODE = "fairness_tests/test_wer.py::test_score_ratio[m-demo-gender]"
CASE = Case(check="score_ratio", model="m", corpus="demo", dimension="gender", variant=None, id="m-demo-gender")


def assembly() -> RunAssembly:
    run = RunAssembly()
    run.scope_parts.append(
        {"gate": [["score_ratio", CASE.id]], "deselected": [], "nodes": {NODE: dataclasses.asdict(CASE)}, "off": []}
    )
    return run


def test_a_gate_test_failing_without_a_record_is_unmeasured_with_its_check():
    run = assembly()
    run.unrecorded_failures[NODE] = "KeyError: 'x'"
    results = run.results(RunMetadata(), selected=[NODE])
    (record,) = results.cases
    assert isinstance(record, UnmeasuredRecord) and record.nodeid == NODE
    assert case_key(record) == ("score_ratio", "m", "demo", None, "gender")
    assert record.cause == Cause("internal", None, "KeyError: 'x'")
    assert results.verdict == "unmeasured" and not results.scope.spot_check
    assert terminal_lines(results)[-2] == "  not measured (internal), 1 case(s): KeyError: 'x'"
    assert (
        terminal_lines(results)[-1] == "lalm-fairness: model m: UNMEASURED (1 case: 0 passed, 0 failed, 1 unmeasured)"
    )
    assert parse_results(results.to_json()) == results


def test_records_and_metadata_parts_arrive_as_json_and_are_typed():
    run = assembly()
    record = UnmeasuredRecord(check="score_ratio", id=CASE.id, model="m", corpus="demo", dimension="gender",
                              message="not measured (config): pass --judge SPEC")  # fmt: skip
    run.add_record(NODE, record.to_json())
    run.add_metadata(RunMetadata(models={"m": "fm"}, model_calls=2).to_json(), "worker gw0")
    run.add_metadata(RunMetadata(models={"j": "fj"}, model_calls=1).to_json(), "worker gw1")
    results = run.results(run.metadata(None, []), selected=[NODE])
    assert results.cases == (dataclasses.replace(record, nodeid=NODE),)
    assert results.metadata.model_calls == 3 and results.metadata.workers == 2
    assert results.metadata.models == {"m": "fm", "j": "fj"}


def test_a_failing_gate_test_whose_case_was_not_collected_here_is_named_by_its_node_id():
    run = RunAssembly()
    run.unrecorded_failures[NODE] = "boom"
    (record,) = run.results(RunMetadata(), selected=[NODE]).cases
    assert (record.check, record.id, record.model) == ("score_ratio", "m-demo-gender", None)


def test_a_case_that_never_ran_is_not_counted_as_ran():
    """Issue 59, item 8: an interrupted run's scope.ran counted every selected case (86 where 44 ran; 43 where none
    did)."""
    other = dataclasses.replace(CASE, dimension="accent", id="m-demo-accent")
    other_node = NODE.replace("gender", "accent")
    run = assembly()
    run.scope_parts[0]["gate"].append(["score_ratio", other.id])
    run.scope_parts[0]["nodes"][other_node] = dataclasses.asdict(other)
    run.add_record(NODE, UnmeasuredRecord(check="score_ratio", id=CASE.id, model="m", message="x").to_json())
    results = run.results(RunMetadata(), selected=[NODE, other_node], not_run=[other_node], interrupted=True)
    assert results.verdict == "incomplete" and (results.scope.gate_cases, results.scope.ran) == (2, 1)
    assert not results.scope.spot_check
    nothing = run.results(RunMetadata(), selected=[NODE, other_node], not_run=[NODE, other_node], interrupted=True)
    assert nothing.scope.ran == 0
