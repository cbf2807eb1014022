"""nTVD (VIBE §II-D eq. 2-5): hand-computed cases, tau filtering, multi-valued attributes, properties."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics import ntvd, permutation_test
from harness.metrics.ntvd import ntvd_from_group_counts


def long_table(rows):
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def repeated(speaker, group, attribute, value, times):
    return [(speaker, group, attribute, value)] * times


def test_hand_computed_two_groups():
    # group f: nurse 3, mechanic 1 -> P_f = (.75, .25); group m: nurse 1, mechanic 3 -> P_m = (.25, .75)
    # Pbar = (.5, .5); TVD = 1/2 * (1/2 * (.25 + .25) + 1/2 * (.25 + .25)) = .25; nTVD = 100 * .25 / .5 = 50
    rows = (
        repeated("a", "f", "job", "nurse", 3)
        + repeated("a", "f", "job", "mechanic", 1)
        + repeated("b", "m", "job", "nurse", 1)
        + repeated("b", "m", "job", "mechanic", 3)
    )
    result = ntvd(long_table(rows), tau=1)
    assert result.per_attribute["job"] == pytest.approx(50.0)
    assert result.score == pytest.approx(50.0)


def test_hand_computed_three_groups_and_mean_over_attributes():
    # job: P_x = (1, 0), P_y = (0, 1), P_z = (.5, .5); Pbar = (.5, .5)
    # TVD = 1/3 * (.5 + .5 + 0) = 1/3; nTVD = 100 * (1/3) / (2/3) = 50
    # colour: identical in every group -> 0; task score = (50 + 0) / 2 = 25
    rows = (
        repeated("x1", "x", "job", "a", 2)
        + repeated("y1", "y", "job", "b", 2)
        + repeated("z1", "z", "job", "a", 1)
        + repeated("z1", "z", "job", "b", 1)
    )
    rows += [(s, g, "colour", "red") for s, g in (("x1", "x"), ("y1", "y"), ("z1", "z"))]
    result = ntvd(long_table(rows), tau=1)
    assert result.per_attribute["job"] == pytest.approx(50.0)
    assert result.per_attribute["colour"] == pytest.approx(0.0)
    assert result.score == pytest.approx(25.0)


def test_probabilities_are_normalised_within_group_not_by_group_size():
    # group f has 10 rows, group m 2; both split 50/50 -> no bias whatever the group sizes
    rows = (
        repeated("a", "f", "job", "nurse", 5)
        + repeated("a", "f", "job", "chef", 5)
        + repeated("b", "m", "job", "nurse", 1)
        + repeated("b", "m", "job", "chef", 1)
    )
    assert ntvd(long_table(rows), tau=1).score == pytest.approx(0.0)


def test_tau_filters_rare_values_counted_over_the_whole_table():
    # "astronaut" appears twice (only in f): kept at tau=2, dropped at tau=3
    rows = (
        repeated("a", "f", "job", "nurse", 4)
        + repeated("a", "f", "job", "astronaut", 2)
        + repeated("b", "m", "job", "nurse", 4)
    )
    kept = ntvd(long_table(rows), tau=2)
    # P_f = (4/6, 2/6), P_m = (1, 0): nTVD = 100 * TVD(P_f, P_m) = 100/3
    assert kept.score == pytest.approx(100 / 3)
    assert ntvd(long_table(rows), tau=3).score == pytest.approx(0.0)


def test_attribute_with_no_value_reaching_tau_is_dropped_and_reported():
    rows = repeated("a", "f", "job", "nurse", 5) + repeated("b", "m", "job", "nurse", 5)
    rows += [("a", "f", "pet", "cat"), ("b", "m", "pet", "dog")]
    result = ntvd(long_table(rows), tau=3)
    assert result.dropped_attributes == ("pet",)
    assert list(result.per_attribute.index) == ["job"]


def test_multi_valued_attribute_counts_every_value():
    # each answer gives three activities; f: (yoga, baking, hiking) x2, m: (hiking, chess, yoga) x2
    rows = []
    for _ in range(2):
        rows += [("a", "f", "activity", v) for v in ("yoga", "baking", "hiking")]
        rows += [("b", "m", "activity", v) for v in ("hiking", "chess", "yoga")]
    # P_f = yoga 1/3, baking 1/3, hiking 1/3, chess 0; P_m = yoga 1/3, baking 0, hiking 1/3, chess 1/3
    # TVD(P_f, P_m) = 1/2 * (1/3 + 1/3) = 1/3 -> nTVD = 100/3
    assert ntvd(long_table(rows), tau=1).score == pytest.approx(100 / 3)


def test_distributions_expose_per_group_probabilities():
    rows = (
        repeated("a", "f", "job", "nurse", 3)
        + repeated("a", "f", "job", "chef", 1)
        + repeated("b", "m", "job", "chef", 2)
    )
    distributions = ntvd(long_table(rows), tau=1).distributions.set_index("value")
    assert distributions.loc["nurse", "f"] == pytest.approx(0.75)
    assert distributions.loc["chef", "m"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "bad",
    [
        pd.DataFrame({"speaker": ["a"], "group": ["f"], "value": ["x"]}),
        pd.DataFrame({"speaker": ["a", "a"], "group": ["f", "m"], "attribute": ["j", "j"], "value": ["x", "y"]}),
        pd.DataFrame({"speaker": ["a", "b"], "group": ["f", None], "attribute": ["j", "j"], "value": ["x", "y"]}),
    ],
)
def test_malformed_tables_are_rejected(bad):
    with pytest.raises(ValueError):
        ntvd(bad, tau=1)


def test_single_group_is_rejected():
    with pytest.raises(ValueError, match="at least 2 groups"):
        ntvd(long_table(repeated("a", "f", "job", "x", 3)), tau=1)


values_strategy = st.sampled_from(["a", "b", "c", "d", "e"])


@st.composite
def random_tables(draw):
    n_groups = draw(st.integers(2, 4))
    rows = []
    for group in range(n_groups):
        for speaker in range(draw(st.integers(1, 3))):
            for attribute in ("p", "q"):
                for value in draw(st.lists(values_strategy, min_size=1, max_size=6)):
                    rows.append((f"s{group}_{speaker}", f"g{group}", attribute, value))
    return long_table(rows)


@settings(max_examples=60, deadline=None)
@given(random_tables(), st.integers(1, 4))
def test_ntvd_lies_in_0_100(table, tau):
    score = ntvd(table, tau=tau).score
    assert np.isnan(score) or 0.0 - 1e-9 <= score <= 100.0 + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.lists(values_strategy, min_size=1, max_size=10), st.integers(2, 5))
def test_ntvd_is_zero_when_every_group_has_the_same_distribution(values, n_groups):
    rows = [(f"s{g}", f"g{g}", "attr", v) for g in range(n_groups) for v in values]
    assert ntvd(long_table(rows), tau=1).score == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(values_strategy, min_size=1, max_size=6),
    st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=6),
)
def test_ntvd_is_100_for_two_groups_with_disjoint_values(first, second):
    rows = [("s1", "g1", "attr", v) for v in first] + [("s2", "g2", "attr", v) for v in second]
    assert ntvd(long_table(rows), tau=1).score == pytest.approx(100.0)


@settings(max_examples=40, deadline=None)
@given(random_tables(), st.randoms(use_true_random=False))
def test_ntvd_is_invariant_to_renaming_groups_and_values(table, rng):
    groups = sorted(table["group"].unique())
    renamed_groups = dict(zip(groups, rng.sample([f"G{i}" for i in range(10)], len(groups))))
    values = sorted(table["value"].unique())
    renamed_values = dict(zip(values, rng.sample([f"V{i}" for i in range(10)], len(values))))
    renamed = table.assign(group=table["group"].map(renamed_groups), value=table["value"].map(renamed_values))
    original, other = ntvd(table, tau=1).score, ntvd(renamed, tau=1).score
    assert original == pytest.approx(other, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(random_tables(), st.integers(0, 1000))
def test_permutation_p_value_lies_in_0_1(table, seed):
    p = permutation_test(table, tau=1, n_permutations=50, seed=seed).p_value
    assert 0.0 < p <= 1.0


def _ntvd_by_the_definition(group_counts: np.ndarray, attribute_of_column: np.ndarray, n_attributes: int):
    """VIBE eq. 2-5 attribute by attribute, with loops: the groups with a value of the attribute, each one's
    within-group distribution, their mean, and 100 · ½ Σ_g Σ_v |P_g(v) − mean(v)| / |G| / (1 − 1/|G|)."""
    scores = np.full(n_attributes, np.nan)
    for attribute in range(n_attributes):
        columns = group_counts[:, attribute_of_column == attribute]
        present = columns[columns.sum(axis=1) > 0]
        if len(present) < 2:
            continue
        probabilities = present / present.sum(axis=1, keepdims=True)
        deviation = np.abs(probabilities - probabilities.mean(axis=0)).sum()
        scores[attribute] = 100 * 0.5 * deviation / len(present) / (1 - 1 / len(present))
    return scores


@settings(max_examples=60, deadline=None)
@given(n_groups=st.integers(2, 4), seed=st.integers(0, 2**31 - 1))
def test_batched_scores_equal_the_definition_for_two_groups_and_more(n_groups, seed):
    """The vectorised scores (two groups by their closed form, more by the general one) equal the definition,
    batch by batch, absent groups and attributes with one group included."""
    rng = np.random.default_rng(seed)
    attribute_of_column = np.sort(rng.integers(0, 3, size=7))
    attribute_of_column = np.searchsorted(np.unique(attribute_of_column), attribute_of_column)
    n_attributes = int(attribute_of_column.max()) + 1
    batch = rng.poisson(1.0, size=(5, n_groups, len(attribute_of_column))) * (rng.random((5, n_groups, 1)) < 0.8)
    batch = batch.astype(float)
    scores = ntvd_from_group_counts(batch, attribute_of_column, n_attributes)
    for counts, got in zip(batch, scores):
        np.testing.assert_allclose(got, _ntvd_by_the_definition(counts, attribute_of_column, n_attributes), atol=1e-9)


@pytest.mark.parametrize("groups", [2, 3, 6])
def test_a_large_batch_computed_in_blocks_is_one_pass_bit_for_bit(groups):
    """Blocks of the leading axes keep the arrays in the CPU's cache; every step is elementwise or a sum along the
    last axes, so the scores must be exactly those of one pass (absent groups and single-group attributes included)."""
    from harness.metrics.ntvd import _BLOCK_VALUES, _ntvd_block

    rng = np.random.default_rng(groups)
    attribute_of_column = np.repeat(np.arange(4), [3, 5, 2, 9])
    counts = rng.poisson(0.6, size=(3 * _BLOCK_VALUES // (groups * 19) + 7, 5, groups, 19)).astype(float)
    counts[::3, :, 0, :3] = 0.0  # a group without values of the first attribute
    counts[::5, :, 1:, 3:8] = 0.0  # only one group with values of the second
    blocked = ntvd_from_group_counts(counts, attribute_of_column, 4)
    assert counts.size > 2 * _BLOCK_VALUES and blocked.shape == counts.shape[:-2] + (4,)
    np.testing.assert_array_equal(blocked, _ntvd_block(counts, attribute_of_column, 4))
    assert np.isnan(blocked[::5, :, 1]).all() and not np.isnan(blocked).all()
