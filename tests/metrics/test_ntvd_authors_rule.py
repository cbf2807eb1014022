"""nTVD where a group states no retained value of an attribute: the VIBE authors' rule (|G| per attribute, an
attribute with fewer than two groups left out, nothing comparable is NaN), in the score, inside the permutation
null and in the paired regression test, against a plain reference written from the rule."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics.ntvd import (
    count_tensor,
    ntvd,
    paired_ntvd_difference,
    permutation_null,
    permutation_test,
    speaker_permutations,
)


def long_table(rows):
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def reference_ntvd(table: pd.DataFrame, tau: int) -> float:
    """The rule, one attribute and one group at a time: values counted over the whole table reach tau; the groups
    of an attribute are those stating one of its retained values; fewer than two groups leave the attribute out."""
    counts = table.groupby(["attribute", "value"]).size()
    scores = []
    for attribute in sorted(table["attribute"].unique()):
        kept = [value for (name, value), count in counts.items() if name == attribute and count >= tau]
        rows = table[(table["attribute"] == attribute) & table["value"].isin(kept)]
        distributions = [
            rows[rows["group"] == group]["value"].value_counts(normalize=True).reindex(kept, fill_value=0.0)
            for group in sorted(rows["group"].unique())
        ]
        if len(distributions) < 2:
            continue
        mean = sum(distributions) / len(distributions)
        tvd = sum(0.5 * (distribution - mean).abs().sum() for distribution in distributions) / len(distributions)
        scores.append(100.0 * tvd / (1.0 - 1.0 / len(distributions)))
    return float(np.mean(scores)) if scores else float("nan")


def test_the_issue_case_gives_the_authors_zero():
    # hobby is stated by group F only: left out, so the task score is job's 0 (an all-zero P_M would give 25).
    table = long_table([("s1", "F", "job", "nurse"), ("s2", "M", "job", "nurse"), ("s1", "F", "hobby", "golf")])
    result = ntvd(table, tau=1)
    assert result.score == 0.0
    assert list(result.per_attribute.index) == ["job"]
    assert result.single_group_attributes == ("hobby",)
    assert result.groups_left_out == {"hobby": ("M",)}


def test_a_group_left_out_of_one_attribute_changes_its_group_count():
    # colour: x says red, y says blue, z never states a colour -> |G| = 2, disjoint -> 100 (not the 3-group 75).
    rows = [
        ("x1", "x", "colour", "red"),
        ("y1", "y", "colour", "blue"),
        ("x1", "x", "job", "a"),
        ("y1", "y", "job", "a"),
        ("z1", "z", "job", "a"),
    ]
    result = ntvd(long_table(rows), tau=1)
    assert result.per_attribute["colour"] == pytest.approx(100.0)
    assert result.per_attribute["job"] == pytest.approx(0.0)
    assert result.score == pytest.approx(50.0)
    assert result.groups_left_out == {"colour": ("z",)}
    assert result.single_group_attributes == ()


def test_nothing_comparable_is_nan_and_unmeasured_by_the_test():
    table = long_table([("s1", "F", "hobby", "golf"), ("s1", "F", "hobby", "golf"), ("s2", "M", "job", "nurse")])
    assert np.isnan(ntvd(table, tau=1).score)
    test = permutation_test(table, tau=1, n_permutations=20, seed=0)
    assert np.isnan(test.observed) and np.isnan(test.p_value)
    assert np.isnan(ntvd(table, tau=5).score)


@st.composite
def sparse_tables(draw):
    """Tables in which some speakers state only some attributes, so that a group may state none of one."""
    n_groups = draw(st.integers(2, 3))
    rows = []
    for group in range(n_groups):
        for speaker in range(draw(st.integers(1, 3))):
            for attribute in ("p", "q", "r"):
                values = draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=4))
                rows.extend((f"s{group}_{speaker}", f"g{group}", attribute, value) for value in values)
            rows.append((f"s{group}_{speaker}", f"g{group}", "p", "a"))
    return long_table(rows)


@settings(max_examples=80, deadline=None)
@given(sparse_tables(), st.integers(1, 3))
def test_score_matches_the_reference(table, tau):
    expected = reference_ntvd(table, tau)
    observed = ntvd(table, tau=tau).score
    assert (np.isnan(expected) and np.isnan(observed)) or observed == pytest.approx(expected, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(sparse_tables(), st.integers(1, 3), st.integers(0, 10_000))
def test_the_permutation_null_applies_the_rule_to_every_permutation(table, tau, seed):
    tensor = count_tensor(table, tau)
    if len(tensor.attributes) == 0:
        return
    assignments = speaker_permutations(tensor.speaker_group, 8, seed)
    null = permutation_null(tensor, assignments)
    speakers = list(tensor.speakers)
    for row, assignment in zip(null, assignments):
        group_of = {speaker: str(tensor.groups[code]) for speaker, code in zip(speakers, assignment)}
        relabelled = table.assign(group=table["speaker"].astype(str).map(group_of))
        expected = reference_ntvd(relabelled, tau)
        assert (np.isnan(expected) and np.isnan(row)) or row == pytest.approx(expected, abs=1e-9)


def test_a_permutation_with_nothing_comparable_counts_against_significance():
    # Only a (F) and b (M) state a hobby (c and d state a job once, below tau = 2): a permutation that puts a and b
    # in one group leaves hobby out and has nothing to compare (NaN); it counts as reaching the observed value.
    rows = [("a", "F", "hobby", "golf")] * 2 + [("b", "M", "hobby", "chess")] * 2
    rows += [("c", "F", "job", "x"), ("d", "M", "job", "y")]
    test = permutation_test(long_table(rows), tau=2, n_permutations=300, seed=1)
    nothing = np.isnan(test.null)
    assert test.observed == pytest.approx(100.0)
    assert 0 < nothing.sum() < len(test.null)
    reaching = nothing | (test.null >= test.observed - 1e-9)
    assert test.p_value == pytest.approx((1 + reaching.sum()) / (len(test.null) + 1))
    assert test.p_value > (1 + (test.null[~nothing] >= test.observed - 1e-9).sum()) / (len(test.null) + 1)


def test_the_paired_test_uses_the_same_rule():
    # The candidate's hobby is stated by F only: left out there, so its score is job's; the baseline's is measured.
    candidate = long_table(
        [("s1", "F", "job", "nurse"), ("s2", "M", "job", "nurse"), ("s1", "F", "hobby", "golf")]
        + [("s1", "F", "hobby", "chess")]
    )
    baseline = long_table(
        [("s1", "F", "job", "nurse"), ("s2", "M", "job", "nurse"), ("s1", "F", "hobby", "golf")]
        + [("s2", "M", "hobby", "chess")]
    )
    result = paired_ntvd_difference(candidate, baseline, tau=1, n_permutations=50, seed=0)
    assert result.candidate == pytest.approx(0.0)
    assert result.baseline == pytest.approx(50.0)
    assert result.difference == pytest.approx(-50.0)


@settings(max_examples=40, deadline=None)
@given(sparse_tables(), st.integers(1, 3))
def test_the_paired_tests_observed_scores_follow_the_rule(table, tau):
    expected = reference_ntvd(table, tau)
    result = paired_ntvd_difference(table, table, tau=tau, n_permutations=20, seed=0)
    for observed in (result.candidate, result.baseline):
        assert (np.isnan(expected) and np.isnan(observed)) or observed == pytest.approx(expected, abs=1e-9)
