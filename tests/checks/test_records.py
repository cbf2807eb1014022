"""Typed results.json records: every check's verdict carries the record kind of its check, which survives
a round trip through JSON; a record that does not fit is rejected naming the file, the case and the key."""

import json

import pytest

from harness.checks import CHECKS, record_types
from harness.checks.semantic_aware.record import RatioRecord
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.gate import Gate, GateConfig
from harness.gate.baseline import load_baseline
from harness.records import SCHEMA_VERSION, BaselineComparison, CaseRecord, schema_version
from harness.results import record_from_json
from tests.support.gate import decided_record


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    config = GateConfig(
        models=("sim:fair",),
        judge="sim:fair",
        tasks=("advisory",),
        permutations=99,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        progress=False,
    )
    return Gate(config)


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_verdict_record_is_its_checks_kind_and_survives_json(check, gate):
    record = decided_record(gate.outcome(gate.cases(check)[0]))  # a case unmeasured by design keeps its record
    assert type(record) is record_types()[check] and record.check == check
    assert record.paired_data, f"{check}: no per-speaker data for a later baseline comparison"
    data = json.loads(json.dumps(record.to_json()))
    assert "baseline" not in data and "nodeid" not in data
    assert record_from_json(data, "results.json, case 0") == record


def ratio_record(**changes):
    return RatioRecord(
        check="wer_ratio",
        id="m-demo-gender",
        model="m",
        model_fingerprint="m@1",
        corpus="demo",
        dimension="gender",
        variant=None,
        value=1.2,
        threshold=RatioThresholds(),
        passed=True,
        message="ok",
        ci=[1.0, 1.4],
        p=None,
        q=None,
        comparisons=[],
        semantics={},
        **changes,
    )


def test_a_record_that_does_not_fit_is_named_by_file_case_and_key():
    data = ratio_record().to_json()
    with pytest.raises(ValueError, match=r"runs/1\.2/results\.json, case 3: wer_ratio record lacks key\(s\) \['ci'\]"):
        record_from_json({key: value for key, value in data.items() if key != "ci"}, "runs/1.2/results.json, case 3")
    with pytest.raises(ValueError, match=r"case 3: wer_ratio record has unknown key\(s\) \['colour'\]"):
        record_from_json(data | {"colour": "red"}, "case 3")
    with pytest.raises(ValueError, match=r"case 3: unknown check 'loudness'"):
        record_from_json(data | {"check": "loudness"}, "case 3")
    with pytest.raises(ValueError, match=r"case 3: key 'passed' must be true or false, got 'yes'"):
        record_from_json(data | {"passed": "yes"}, "case 3")


def test_set_fields_reach_json_and_unset_ones_do_not():
    new = BaselineComparison(status="new", message="new check", source="base.json", model="m")
    record = ratio_record(baseline=new, nodeid="test_wer.py::test_wer_ratio[m-demo-gender]")
    assert record.to_json()["baseline"] == new.to_json() and "absolute_passed" not in record.to_json()
    assert isinstance(record, CaseRecord)


def test_the_schema_version_is_checked(tmp_path):
    assert schema_version({}, "old.json") == 1
    assert schema_version({"schema_version": SCHEMA_VERSION}, "new.json") == SCHEMA_VERSION
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1, "cases": []}))
    with pytest.raises(
        ValueError, match=rf"{path}: schema_version {SCHEMA_VERSION + 1}; this lalm-fairness reads versions 1 to"
    ):
        load_baseline(path)
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "cases": [ratio_record().to_json() | {"passed": 1}]}))
    with pytest.raises(ValueError, match=rf"{path}, case 0 \(m-demo-gender\): key 'passed' must be true or false"):
        load_baseline(path)
