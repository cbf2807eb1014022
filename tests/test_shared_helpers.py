"""The helpers every layer shares live once, in harness.core, and keep the values their copies had."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import core
from harness.models.base import stable_hash


@pytest.mark.parametrize(
    ("parts", "pinned"),
    [
        ((0, "icat", "sim:fair", "gender"), 244052294),
        ((20260817, "classification", "cascade:whisper:tiny.en+smollm2:135m-instruct", "age"), 2720870272),
        ((1, None, 2.5, "é", np.int64(3)), 3711355197),
    ],
)
def test_bootstrap_seed_is_the_stable_hash_seed_it_replaces(parts, pinned):
    assert core.bootstrap_seed(*parts) == pinned
    assert core.bootstrap_seed(*parts) == int(stable_hash(list(parts))[:8], 16)


def test_the_old_homes_reexport_the_core_helpers():
    from harness.basis import tables
    from harness.checks import base
    from harness.extraction import fields

    assert tables.bootstrap_seed is core.bootstrap_seed
    assert tables.number is core.finite_or_none and base.finite_or_none is core.finite_or_none
    assert fields.REFUSAL is core.REFUSAL == "refusal"


def test_require_columns_names_what_is_missing_and_can_require_rows():
    table = pd.DataFrame({"a": [], "b": []})
    core.require_columns(table, ["a"])
    with pytest.raises(ValueError, match=r"scores lacks column\(s\) \['c'\]; it has \['a', 'b'\]"):
        core.require_columns(table, ["a", "c"], "scores")
    with pytest.raises(ValueError, match="scores: the table has no rows"):
        core.require_columns(table, ["a"], "scores", nonempty=True)
    with pytest.raises(TypeError, match="scores: expected a pandas DataFrame, got dict"):
        core.require_columns({"a": [1]}, ["a"], "scores")
