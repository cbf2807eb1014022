"""The helpers every layer shares live once, in harness.core, and keep the values their copies had."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.core import answers, values


@pytest.mark.parametrize(
    ("parts", "pinned"),
    [
        ((0, "icat", "sim:fair", "gender"), 244052294),
        ((20260817, "classification", "cascade:whisper:tiny.en+smollm2:135m-instruct", "age"), 2720870272),
        ((1, None, 2.5, "é", np.int64(3)), 3711355197),
    ],
)
def test_derived_seed_is_the_stable_hash_seed_it_replaces(parts, pinned):
    assert values.derived_seed(*parts) == pinned
    assert values.derived_seed(*parts) == int(values.stable_hash(list(parts))[:8], 16)


def test_the_extraction_statuses_live_in_core():
    from harness.extraction import fields

    assert fields.REFUSAL is answers.REFUSAL == "refusal"


def test_require_columns_names_what_is_missing_and_can_require_rows():
    table = pd.DataFrame({"a": [], "b": []})
    values.require_columns(table, ["a"])
    with pytest.raises(ValueError, match=r"scores lacks column\(s\) \['c'\]; it has \['a', 'b'\]"):
        values.require_columns(table, ["a", "c"], "scores")
    with pytest.raises(ValueError, match="scores: the table has no rows"):
        values.require_columns(table, ["a"], "scores", nonempty=True)
    with pytest.raises(TypeError, match="scores: expected a pandas DataFrame, got dict"):
        values.require_columns({"a": [1]}, ["a"], "scores")
