"""One typed results model (issue 37 item 4): :class:`harness.results.RunResults` round-trips schema 3, reads
schema 1 and 2 files (cut from the shipped voice-blind results.json of commit 8548201, schema 2; the schema-1 copy
drops what schema 2 added: ``schema_version``, each case's ``decision`` and ``floors``, an unmeasured case's
``cause``, ``model``, ``corpus``, ``dimension`` and ``variant``), and names the file, case and key of whatever does
not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.records import SCHEMA_VERSION, CaseRecord, UnmeasuredRecord, case_key
from harness.results import RunMetadata, derived_decision, parse_results, read_results, write_results
from harness.results.metadata import ImportedCache, OutputCounts

FIXTURES = Path(__file__).parent / "support" / "results"
SHIPPED = Path(__file__).parents[1] / "harness" / "data" / "demo_outputs" / "voice-blind" / "results.json"
MODEL = "cascade:whisper:tiny.en+smollm2:135m-instruct"


@pytest.mark.parametrize("version", [1, 2])
def test_a_schema_1_or_2_file_is_read_as_schema_3(version, tmp_path):
    results = read_results(FIXTURES / f"schema-{version}.json")
    assert [case.check for case in results.unmeasured] == ["classification", "score_ratio"]
    assert all(case.status == "unmeasured" and not case.passed for case in results.unmeasured)
    assert {case.check for case in results.measured} == {"classification", "icat", "robustness", "ntvd", "wer_ratio"}
    assert (results.summary.cases, results.summary.unmeasured, results.verdict) == (7, 2, "fail")
    assert results.metadata.models[MODEL].startswith("cascade:")
    if version == 2:  # schema 2 kept an unmeasured case's identity; schema 1 only its id and node id
        assert case_key(results.unmeasured[1]) == ("score_ratio", MODEL, "demo", None, "gender")
        assert all(case.decision is not None for case in results.measured)
    else:
        assert results.unmeasured[1].model is None and results.unmeasured[1].cause is None
    path = write_results(tmp_path / "results.json", results)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION == 3
    assert read_results(path) == results


def test_schema_3_round_trips_and_an_unmeasured_case_keeps_its_check_and_identity(tmp_path):
    results = read_results(SHIPPED)
    document = json.loads(SHIPPED.read_text())
    assert document["schema_version"] == 3 and not any(case["check"] == "error" for case in document["cases"])
    assert parse_results(json.loads(json.dumps(results.to_json()))) == results
    # The shipped file states its decision; written back, it is the same document.
    assert results.decision == derived_decision(results.verdict, results.cases, results.scope, results.incomplete)
    written = json.loads(write_results(tmp_path / "r.json", results).read_text())
    assert written == document
    unmeasured = results.unmeasured
    # the judge scores (no judge) by input; the cases its design could not have failed keep what they measured
    assert {case.check for case in unmeasured if case.measured is None} == {"score_ratio"}
    assert all(case.measured.id == case.id for case in unmeasured if case.measured is not None)
    assert all(
        None not in (case.model, case.corpus, case.dimension) and case.id.startswith(case.model) for case in unmeasured
    )
    assert all(isinstance(case, CaseRecord | UnmeasuredRecord) for case in results.cases)
    keys = [case_key(case) for case in results.cases]
    assert len(set(keys)) == len(keys)  # the WER and judge-score ratios share ids, never keys


def test_metadata_is_typed_and_merges_the_workers_parts():
    worker = RunMetadata(models={"m": "fm"}, model_calls=2, outputs={"m": OutputCounts(generated=2, read=1)}, seed=0)
    other = RunMetadata(models={"j": "fj"}, model_calls=1, outputs={"m": OutputCounts(generated=0, read=3)}, seed=0)
    merged = RunMetadata.merge([worker, other], [ImportedCache("x.jsonl.gz", 4, {"m": 4})], workers=2)
    assert merged.models == {"m": "fm", "j": "fj"} and merged.model_calls == 3 and merged.workers == 2
    assert merged.outputs == {"m": OutputCounts(generated=2, read=4, imported=4)}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["cases"][1].update(value="high"), r"r\.json, case 1 \(.*-gender\): key 'value' must be"),
        (
            lambda d: d["cases"][1].pop("model"),
            r"r\.json, case 1 \(.*-gender\): classification record lacks key\(s\) \['model'\]",
        ),
        (lambda d: d["cases"][0].update(status="skipped"), r"r\.json, case 0 \(.*-age\): key 'status' is 'skipped'"),
        (lambda d: d["cases"][0].update(passed=True), r"r\.json, case 0 \(.*-age\): key 'passed' must be false"),
        (lambda d: d["metadata"].update(seed="zero"), r"r\.json, metadata: key 'seed' must be int or null, got 'zero'"),
        (lambda d: d["metadata"].update(colour=1), r"r\.json, metadata: unknown key\(s\) \['colour'\]"),
        (lambda d: d["summary"].update(failed=None), r"r\.json, summary: key 'failed' must be int, got None"),
        (lambda d: d.update(verdict="ok"), r"r\.json: key 'verdict' must be one of"),
    ],
)
def test_a_file_that_does_not_fit_is_one_error_naming_file_case_and_key(change, message, tmp_path):
    data = read_results(FIXTURES / "schema-2.json").to_json()
    change(data)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        read_results(path)


def test_a_legacy_unmeasured_case_whose_node_id_names_no_check_is_refused(tmp_path):
    data = json.loads((FIXTURES / "schema-2.json").read_text())
    data["cases"][0]["nodeid"] = "test_other.py::test_loudness[x]"
    with pytest.raises(ValueError, match=r"case 0 \(.*-age\): an unmeasured case whose key 'nodeid' .* names no check"):
        parse_results(data, "old.json")
