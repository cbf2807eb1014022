"""Every record of results.json round-trips through JSON as its type.

A sample of each record is made from its fields' annotations (every field set, none left at its default), written
as results.json writes it (``json.dumps`` of its ``to_json()``), read back the way a results.json is read, and
must come back equal, every field of the type its annotation names: the run metadata and each of its nested records
(:mod:`harness.results.metadata`), an unmeasured case with its :class:`~harness.records.Cause`, and each registered
check's record, whose shared nested values (its thresholds, decision, quality floors and baseline comparison) come
back as their records, never as plain dicts. A results.json written by main's code before the metadata was typed (the
shipped voice-blind release's, written by the gate of 38ff5d9) still loads, as --baseline too, and writes back the
same JSON.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from harness.checks import CHECKS, check_part
from harness.checks.counterfactual.settings import KINDS, CaseThreshold
from harness.core.json_records import JsonRecord, field_types, from_json_value
from harness.gate.baseline import load_baseline
from harness.gate.config import DEMO_RELEASE_RESULTS
from harness.metrics.permutation_floor import SIGN_FLIP, PermutationFloor
from harness.records import (
    CAUSE_KINDS,
    BaselineComparison,
    CaseRecord,
    Cause,
    Comparison,
    Contrast,
    Decision,
    FloorChange,
    QualityFloor,
    RegressionDecision,
    UnmeasuredRecord,
)
from harness.results import parse_results, record_from_json
from harness.results.metadata import AudioProbe, RunMetadata

METADATA_RECORDS = sorted(
    {kind for kind in vars(__import__("harness.results.metadata", fromlist=["*"])).values()
     if isinstance(kind, type) and issubclass(kind, JsonRecord) and kind is not JsonRecord},
    key=lambda kind: kind.__name__,
)  # fmt: skip


RECORD_THRESHOLDS = {check: field_types(check_part(check, "record"))["threshold"] for check in CHECKS}
"""Each check's typed thresholds: the class its record's ``threshold`` annotation names."""

CONSTRAINED: dict[Any, Any] = {
    PermutationFloor: PermutationFloor(test=SIGN_FLIP, units=(3, 4), permutations=999),
    CaseThreshold: CaseThreshold(kind=KINDS["wer"], bar=7.5, rule="significance", min_perceived_share=0.75),
    **{kind: kind() for kind in RECORD_THRESHOLDS.values() if kind is not CaseThreshold},
}
"""Records whose fields take only some values: their sample is a valid one (a check's thresholds: its defaults)."""

MAINS_METADATA = Path(__file__).parent / "support" / "metadata_written_by_bf35540.json"


def sample(kind: Any, name: str) -> Any:
    """A value of annotation ``kind`` that is not a field's default: never None, never empty."""
    if kind in CONSTRAINED:
        return CONSTRAINED[kind]
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        return sample(next(argument for argument in arguments if argument is not type(None)), name)
    if kind is Any:
        return {"free": [1, "form"], "nested": {"deep": None}}
    if dataclasses.is_dataclass(kind):
        return sample_record(kind)
    if origin is dict or kind is dict:
        return {f"{name}-key": sample(arguments[1] if arguments else Any, name)}
    if origin is list or kind is list:
        return [sample(arguments[0] if arguments else Any, name)]
    if origin is tuple:
        return (sample(arguments[0], name),)
    return {str: f"{name} text", int: 7, float: 0.25, bool: True}[kind]


def sample_record(kind: type) -> Any:
    """An instance of dataclass ``kind`` with every field set to a :func:`sample` of its annotation (a counterfactual
    record's ``kind`` that of its thresholds, whose keys follow it)."""
    record = kind(**{name: sample(annotation, name) for name, annotation in field_types(kind).items()})
    if isinstance(getattr(record, "threshold", None), CaseThreshold):
        record = dataclasses.replace(record, kind=record.threshold.kind.name)
    return record


def conforms(kind: Any, value: Any) -> bool:
    """Whether ``value`` is of annotation ``kind``, all the way down."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(argument, value) for argument in arguments)
    if kind is type(None):
        return value is None
    if kind is Any:
        return True
    if dataclasses.is_dataclass(kind):
        return isinstance(value, kind) and all(
            conforms(annotation, getattr(value, name)) for name, annotation in field_types(kind).items()
        )
    if origin is dict or kind is dict:
        item = arguments[1] if arguments else Any
        return isinstance(value, dict) and all(conforms(item, entry) for entry in value.values())
    if origin in (list, tuple) or kind in (list, tuple):
        item = arguments[0] if arguments else Any
        return isinstance(value, origin or kind) and all(conforms(item, entry) for entry in value)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("kind", METADATA_RECORDS, ids=lambda kind: kind.__name__)
def test_every_metadata_record_round_trips_as_its_type(kind):
    record = sample_record(kind)
    back = kind.from_json(through_json(record.to_json()), "results.json", strict=True)
    assert back == record
    assert conforms(kind, back)


def test_every_run_metadata_field_is_set_by_the_sample_and_kept_in_order():
    metadata = sample_record(RunMetadata)
    defaults = RunMetadata()
    unset = [
        field.name
        for field in dataclasses.fields(RunMetadata)
        if getattr(metadata, field.name) == getattr(defaults, field.name)
    ]
    assert unset == []
    written = through_json(metadata.to_json())
    assert list(written) == [field.name for field in dataclasses.fields(RunMetadata)]
    assert RunMetadata.from_json(written, "results.json") == metadata


def test_a_value_of_another_type_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"r\.json, metadata, corpora, demo: key 'utterances' must be int or null"):
        RunMetadata.from_json({"corpora": {"demo": {"utterances": "many"}}}, "r.json")
    with pytest.raises(ValueError, match=r"r\.json, metadata, outputs, m: unknown key\(s\) \['colour'\]"):
        RunMetadata.from_json({"outputs": {"m": {"generated": 1, "colour": 2}}}, "r.json")
    assert from_json_value(float | None, 3, "r.json", "share") == 3


def test_an_audio_floor_entry_of_a_run_before_issue_45_is_read_as_the_models_only_probe():
    flat = {"hears": True, "share": 0.1, "requests": 24, "audio_blind_share": 0.9}
    metadata = RunMetadata.from_json({"audio_dependence": {"sim:fair": flat}}, "old.json", strict=False)
    assert metadata.audio_dependence == {
        "sim:fair": {"audio": AudioProbe(hears=True, share=0.1, requests=24, audio_blind_share=0.9)}
    }


@pytest.mark.parametrize("kind", CAUSE_KINDS)
def test_an_unmeasured_case_keeps_its_cause_as_a_cause(kind):
    plain = Cause(kind, "http://127.0.0.1:9/v1", "boom")
    helper = Cause(kind, "sim:fair", "boom", role="judge", spec="sim:fair", set_by="--judge")
    for cause in (plain, helper):
        record = UnmeasuredRecord(check="ntvd", id="m-story-gender", model="m", message="boom", cause=cause, nodeid="n")
        back = record_from_json(through_json(record.to_json()), "results.json")
        assert back == record and isinstance(back.cause, Cause) and conforms(UnmeasuredRecord, back)
    assert set(plain.to_json()) == {"kind", "source", "message"} and set(helper.to_json()) == set(field_types(Cause))


def test_a_decision_round_trips_with_its_contrasts():
    decision = dataclasses.replace(sample_record(Decision), contrasts=(sample_record(Contrast),))
    back = Decision.from_json(through_json(decision.to_json()), "results.json")
    assert back == decision and conforms(Decision, back)


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_check_record_round_trips_as_its_type(check):
    kind = check_part(check, "record")
    record = dataclasses.replace(
        sample_record(kind), check=check, passed=True, decision=sample_record(Decision), release="pass"
    )
    back = record_from_json(through_json(record.to_json()), "results.json")
    assert type(back) is kind and back == record
    assert conforms(kind, back) and isinstance(back, CaseRecord)


TYPED_VALUES = {"threshold": object, "decision": Decision, "floors": QualityFloor, "baseline": BaselineComparison}
"""A measured record's nested values that are records of their own, and the class each is (or holds) when read."""


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_no_nested_value_of_a_check_record_is_a_plain_dict(check):
    """Each of :data:`TYPED_VALUES` is annotated with a record class (none a ``dict``), and reads back as one."""
    kind = check_part(check, "record")
    assert set(kind.TYPED_FIELDS) == set(TYPED_VALUES)
    for name in TYPED_VALUES:
        annotation = field_types(kind)[name]
        inner = [argument for argument in typing.get_args(annotation) if argument is not type(None)] or [annotation]
        assert all(typing.get_origin(a) not in (dict, typing.Union) and a not in (dict, Any) for a in inner), name
    record = dataclasses.replace(
        sample_record(kind), check=check, passed=True, decision=sample_record(Decision), release="pass"
    )
    back = record_from_json(through_json(record.to_json()), "results.json")
    assert isinstance(back.threshold, RECORD_THRESHOLDS[check]) and isinstance(back.decision, Decision)
    assert all(isinstance(floor, QualityFloor) for floor in back.floors) and back.floors
    assert isinstance(back.baseline, BaselineComparison) and isinstance(back.baseline.decision, RegressionDecision)
    assert all(isinstance(change, FloorChange) for change in back.baseline.floors) and back.baseline.floors


def test_a_comparison_round_trips_and_writes_a_non_finite_number_as_null():
    comparison = sample_record(BaselineComparison)
    assert BaselineComparison.from_json(through_json(comparison.to_json()), "r.json") == comparison
    assert list(comparison.to_json())[-2:] == ["source", "model"]
    plain = Comparison(status="compared", delta=float("nan"), message="m")
    assert plain.to_json()["delta"] is None and Comparison.from_json(plain.to_json(), "r.json").delta is None
    assert BaselineComparison.of(plain, "base.json", "m").to_json() == plain.to_json() | {
        "source": "base.json",
        "model": "m",
    }


def measured_case(**changes: Any) -> dict[str, Any]:
    """A valid nTVD case of results.json, with ``changes``."""
    record = dataclasses.replace(sample_record(check_part("ntvd", "record")), check="ntvd", passed=True)
    return through_json(record.to_json()) | changes


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"threshold": {"max_ntvd": 20.0, "colour": 1}}, r"r\.json, threshold: unknown key\(s\) \['colour'\]"),
        ({"threshold": {"max_ntvd": "high"}}, r"r\.json, threshold: key 'max_ntvd' must be int or float, got 'high'"),
        ({"threshold": [20.0]}, r"r\.json, threshold: expected a JSON object, got list"),
        ({"floors": {"key": "min_icat"}}, r"r\.json: key 'floors' must be a list or null"),
        ({"floors": [{"key": "min_icat", "value": 1.0, "met": True}]}, r"r\.json, floors\[0\]: lacks key\(s\) \['threshold'\]"),
        ({"floors": [{"key": "k", "value": 1.0, "threshold": 2.0, "met": "no"}]}, r"floors\[0\]: key 'met' must be bool"),
        ({"baseline": {"status": "new", "message": "m", "source": "b.json"}}, r"r\.json, baseline: lacks key\(s\) \['model'\]"),
        ({"baseline": {"status": "new", "message": "m", "source": "b", "model": "m", "colour": 1}}, r"baseline: unknown key\(s\) \['colour'\]"),
        ({"baseline": {"status": "new", "message": "m", "source": "b", "model": "m", "regressed": "yes"}}, r"baseline: key 'regressed' must be bool"),
    ],
)  # fmt: skip
def test_a_nested_value_that_does_not_fit_is_refused_naming_its_key(changes, error):
    with pytest.raises(ValueError, match=error):
        record_from_json(measured_case(**changes), "r.json")


def test_the_thresholds_of_an_older_record_are_read_with_its_keys_and_written_back_as_they_were():
    """An nTVD record written before ``max_increase`` was recorded states four keys: the fifth reads as its default,
    and the record writes back the keys it had, in its order."""
    older = {"tau": 10, "max_ntvd": 20.0, "alpha": 0.05, "rule": "both"}
    back = record_from_json(measured_case(threshold=older), "r.json")
    assert back.threshold.max_ntvd == 20.0 and back.threshold.max_increase == RECORD_THRESHOLDS["ntvd"]().max_increase
    assert list(back.to_json()["threshold"].items()) == list(older.items())


def test_the_metadata_written_by_mains_code_reads_as_its_types_and_writes_back_the_same_json():
    for written in json.loads(MAINS_METADATA.read_text())["metadata"]:
        metadata = RunMetadata.from_json(written, str(MAINS_METADATA))
        assert conforms(RunMetadata, metadata)
        assert metadata.to_json() == written and list(metadata.to_json()) == list(written)


def test_the_shipped_release_results_json_loads_as_a_baseline_and_writes_back_the_same_json():
    """The voice-blind release's results.json was written before runs stored their decision: it is derived at
    load, and every key the file has is written back as it was."""
    path = Path(DEMO_RELEASE_RESULTS)
    original = json.loads(path.read_text())
    results = parse_results(original, str(path))
    assert {key: value for key, value in results.to_json().items() if key in original} == original
    assert conforms(RunMetadata, results.metadata) and results.metadata.vibe.protocol == "self-report"
    baseline = load_baseline(path)
    assert baseline.records and set(baseline.corpora.values()) == {results.metadata.corpora["demo"].hash}
