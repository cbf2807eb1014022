"""Every record of results.json round-trips through JSON as its type.

A sample of each record is made from its fields' annotations (every field set, none left at its default), written
as results.json writes it (``json.dumps`` of its ``to_json()``), read back the way a results.json is read, and
must come back equal, every field of the type its annotation names: the run metadata and each of its nested records
(:mod:`harness.results.metadata`), an unmeasured case with its :class:`~harness.records.Cause`, and each registered
check's record. A results.json written by main's code before the metadata was typed (the shipped voice-blind
release's, written by the gate of 38ff5d9) still loads, as --baseline too, and writes back the same JSON.
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
from harness.core.json_records import JsonRecord, field_types, from_json_value
from harness.gate.baseline import load_baseline
from harness.gate.config import DEMO_RELEASE_RESULTS
from harness.records import (
    CAUSE_KINDS,
    SIGN_FLIP,
    CaseRecord,
    Cause,
    Contrast,
    Decision,
    PermutationFloor,
    UnmeasuredRecord,
)
from harness.results import parse_results, record_from_json
from harness.results.metadata import AudioProbe, RunMetadata

METADATA_RECORDS = sorted(
    {kind for kind in vars(__import__("harness.results.metadata", fromlist=["*"])).values()
     if isinstance(kind, type) and issubclass(kind, JsonRecord) and kind is not JsonRecord},
    key=lambda kind: kind.__name__,
)  # fmt: skip


CONSTRAINED = {PermutationFloor: PermutationFloor(test=SIGN_FLIP, units=(3, 4), permutations=999)}
"""Records whose fields take only some values: their sample is a valid one."""

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
    """An instance of dataclass ``kind`` with every field set to a :func:`sample` of its annotation."""
    return kind(**{name: sample(annotation, name) for name, annotation in field_types(kind).items()})


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
