"""Row classes for the nested values of check records (issue 60 item 2).

A record's nested payload (nTVD's ``example_pair``, BASIS's ``gap``, ...) is a small frozen class of its check's
``record.py``, read as attributes by the view, the templates and the report. The contract here:

- no field of a check's record class is ``Any``, ``dict[str, Any]`` or a list of dicts, except the fields listed in
  :data:`NOT_YET_TYPED`, which the test prints; that list may only shrink (an entry that is typed now fails the test
  until it is removed, and a new loose field fails it too);
- every shipped results file loads with its row classes as classes and writes their JSON back key for key;
- a row that lacks a key (a writer that renamed one) is refused on loading, naming the case and the row's path.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest

from harness.checks import CHECKS, check_part
from harness.core.json_records import JsonRecord, field_types, row_fields
from harness.records import CaseRecord
from harness.results import parse_results, record_from_json

from support.records import case
from support.series import classification_case

REPO = Path(__file__).resolve().parents[1]

NOT_YET_TYPED: dict[str, set[str]] = {
    "counterfactual": {
        "artifact",
        "directions",
        "distributions",
        "flip_rates",
        "manipulation",
        "perceived",
        "perceiver_accuracy",
        "sham",
        "shifts",
        "speaker_distance",
    },  # fmt: skip
    "icat": {"per_group"},
    "score_ratio": {"comparisons", "semantics"},
    "wer_ratio": {"comparisons", "semantics"},
}
"""The check record fields still loosely typed, by check: counterfactual's (its sham arm and perceiver accuracy
came with issue 58 as the rest of its payload is, and are typed with it, issue 60); the others are next. The list may
only shrink."""

SHIPPED_RESULTS = sorted(
    [*(REPO / "harness" / "data").rglob("results.json"), *(REPO / "tests" / "support" / "results").glob("*.json")]
)


def loose(kind: Any) -> bool:
    """Whether annotation ``kind`` is or holds ``Any``, a bare ``dict`` or ``list``, or a list of dicts."""
    if kind is Any or kind in (dict, list):
        return True
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is list and arguments and typing.get_origin(arguments[0]) is dict:
        return True
    return any(loose(argument) for argument in arguments)


def check_fields(check: str) -> dict[str, Any]:
    """The fields a check's own record classes declare (those of ``harness/checks/<folder>/``, not
    :class:`harness.records.CaseRecord`'s), with their resolved annotations."""
    kind = check_part(check, "record")
    hints = field_types(kind)
    return {
        name: hints[name]
        for klass in kind.__mro__
        if klass.__module__.startswith("harness.checks.")
        for name in getattr(klass, "__annotations__", {})
        if name in hints
    }


def test_the_detector_finds_loose_annotations():
    assert [loose(kind) for kind in (Any, dict[str, Any], list[dict[str, Any]], dict[str, Any] | None)] == [True] * 4
    assert loose(dict[str, dict[str, Any]]) and loose(list[dict[str, int]])
    assert not any(loose(kind) for kind in (str, dict[str, float | None], list[list[str]], dict[str, list[str]]))


def test_no_check_record_field_is_loosely_typed_beyond_the_listed_ones():
    found = {check: {name for name, kind in check_fields(check).items() if loose(kind)} for check in sorted(CHECKS)}
    found = {check: names for check, names in found.items() if names}
    listed = sum(len(names) for names in NOT_YET_TYPED.values())
    print(f"check record fields still loosely typed ({listed}):")
    for check, names in NOT_YET_TYPED.items():
        print(f"  {check}: {', '.join(sorted(names))}")
    new = {check: names - NOT_YET_TYPED.get(check, set()) for check, names in found.items()}
    assert not any(new.values()), f"type these fields with a row class of the check's record.py: {new}"
    typed_now = {check: names - found.get(check, set()) for check, names in NOT_YET_TYPED.items()}
    assert not any(typed_now.values()), f"typed now: remove them from NOT_YET_TYPED: {typed_now}"


def test_the_row_classes_are_frozen_json_records():
    for check in sorted(CHECKS):
        kind = check_part(check, "record")
        for name in row_fields(kind) - set(kind.TYPED_FIELDS):
            rows = [a for a in _classes(field_types(kind)[name]) if issubclass(a, JsonRecord)]
            assert rows, (check, name)
            assert all(row.__dataclass_params__.frozen for row in rows), (check, name)


def _classes(kind: Any) -> list[type]:
    found = [kind] if isinstance(kind, type) else []
    return found + [inner for argument in typing.get_args(kind) for inner in _classes(argument)]


@pytest.mark.parametrize("path", SHIPPED_RESULTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_shipped_results_file_reads_its_rows_as_classes_and_writes_them_back_key_for_key(path):
    original = json.loads(path.read_text())
    results = parse_results(original, str(path))
    rows = 0
    pairs = list(zip(original["cases"], results.cases))
    pairs += [(written["measured"], record.measured) for written, record in pairs if getattr(record, "measured", None)]
    for written, record in pairs:
        if not isinstance(record, CaseRecord):
            continue
        for name in row_fields(type(record)) - set(record.TYPED_FIELDS):
            if written.get(name) is None:
                continue
            rows += 1
            value = getattr(record, name)
            assert isinstance(value, JsonRecord) or all(isinstance(item, JsonRecord) for item in value), name
            assert record.to_json()[name] == written[name], (record.id, name)
    assert rows > 0
    if original.get("schema_version") == 3:
        assert {key: value for key, value in results.to_json().items() if key in original} == original


def test_a_row_that_lacks_a_key_is_refused_naming_its_path():
    """A writer that renamed ``answer`` in an example pair's side: loading names the case, the row and the key."""
    side = {"group": "f", "speaker": "s1", "value": "yoga", "heard": None, "voice": None, "reply": "yoga"}
    pair = {"attribute": "activity", "content_id": "c1", "sides": [side, side]}
    with pytest.raises(ValueError, match=r"r\.json, example_pair, sides\[0\]: lacks key\(s\) \['answer'\]"):
        record_from_json(case(example_pair=pair), "r.json")
    basis = classification_case("m", "gender", night=0)
    basis["gap"] = {"value": 9.0, "ci_low": 1.0, "ci_high": 17.0, "top": "f", "worst": "m"}
    with pytest.raises(ValueError, match=r"r\.json, gap: lacks key\(s\) \['best'\]"):
        record_from_json(basis, "r.json")
