"""The one codec of records (issue 60, :mod:`harness.core.json_records`): what a class may declare about its JSON,
and what the codec does for every class alike."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

import numpy as np
import pytest

from harness.core.json_records import JsonRecord, to_json_value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Row(JsonRecord):
    JSON_KEYS: ClassVar[dict[str, str]] = {"anti_stereotype": "anti-stereotype"}
    WRITTEN_AS_READ: ClassVar[tuple[str, ...]] = ("left_out",)
    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("note",)
    WRITTEN_TOGETHER: ClassVar[tuple[tuple[str, ...], ...]] = (("bar", "powered"),)
    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ("sensitivity",)

    anti_stereotype: float
    units: tuple[int, ...] = ()
    left_out: str | None = None
    note: str | None = None
    bar: float | None = None
    powered: bool | None = None
    sensitivity: Any = None

    def __post_init__(self) -> None:
        if self.anti_stereotype < 0:
            raise ValueError(f"anti_stereotype must be >= 0, got {self.anti_stereotype}")


def test_a_fresh_record_writes_its_keys_as_its_class_declares():
    row = Row(anti_stereotype=np.float64(2.5), units=(3, 4), bar=20.0, sensitivity=object())
    assert row.to_json() == {"anti-stereotype": 2.5, "units": [3, 4], "left_out": None, "bar": 20.0, "powered": None}
    assert Row(anti_stereotype=1.0).to_json() == {"anti-stereotype": 1.0, "units": [], "left_out": None}


def test_a_read_record_writes_back_the_keys_it_was_read_with():
    old = {"anti-stereotype": 1.0, "units": [2]}  # written before left_out
    row = Row.from_json(old, "r.json, case 0", strict=True)
    assert row.anti_stereotype == 1.0 and row.units == (2,) and row.left_out is None
    assert row.to_json() == old
    new = {"anti-stereotype": 1.0, "units": [2], "left_out": None}
    assert Row.from_json(new, "r.json").to_json() == new


def test_numpy_scalars_become_python_values_and_non_finite_numbers_null():
    written = to_json_value({"a": np.int64(3), "b": np.bool_(True), "c": math.nan, "d": [np.float32(0.5), math.inf]})
    assert written == {"a": 3, "b": True, "c": None, "d": [0.5, None]}
    assert json.loads(json.dumps(written, allow_nan=False)) == written


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"anti-stereotype": "x"}, r"r\.json: key 'anti-stereotype' must be int or float, got 'x'"),
        ({"anti-stereotype": 1.0, "units": [1, "two"]}, r"r\.json: key 'units\[1\]' must be int, got 'two'"),
        ({"anti-stereotype": -1.0}, r"r\.json: anti_stereotype must be >= 0, got -1\.0"),
        ({"anti-stereotype": 1.0, "sensitivity": 3}, r"r\.json: unknown key\(s\) \['sensitivity'\]"),
        ({"units": []}, r"r\.json: lacks key\(s\) \['anti-stereotype'\]"),
    ],
)
def test_a_value_that_does_not_fit_is_refused_naming_its_path(data, error):
    with pytest.raises(ValueError, match=error):
        Row.from_json(data, "r.json", strict=True)
