"""Speaker-level permutation test (VIBE §II-D) and Benjamini-Hochberg q-values."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from harness.metrics import fdr_bh, ntvd, permutation_test
from harness.metrics.ntvd import count_tensor, speaker_permutations

VALUES = np.array(["v0", "v1", "v2", "v3", "v4", "v5"])


def speaker_correlated_null(rng, n_speakers=12, answers_per_speaker=20, concentration=0.3):
    """Each speaker has a strong private preference over values; the group plays no part."""
    rows = []
    for speaker in range(n_speakers):
        preference = rng.dirichlet(np.full(len(VALUES), concentration))
        group = "f" if speaker < n_speakers // 2 else "m"
        for value in rng.choice(VALUES, size=answers_per_speaker, p=preference):
            rows.append((f"s{speaker}", group, "attr", value))
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def row_level_permutation_p(table, n_permutations, seed):
    """The flawed test: every answer its own exchangeable unit, as if answers were independent."""
    return permutation_test(
        table.assign(speaker=np.arange(len(table)).astype(str)), tau=1, n_permutations=n_permutations, seed=seed
    ).p_value


def test_speaker_level_test_holds_alpha_where_row_level_test_does_not():
    rng = np.random.default_rng(2024)
    n_datasets, alpha = 60, 0.05
    speaker_rejections = row_rejections = 0
    for index in range(n_datasets):
        table = speaker_correlated_null(rng)
        speaker_rejections += permutation_test(table, tau=1, n_permutations=199, seed=index).p_value < alpha
        row_rejections += row_level_permutation_p(table, 199, index) < alpha
    assert speaker_rejections / n_datasets <= 0.15
    assert row_rejections / n_datasets >= 0.6


def test_speaker_level_test_detects_a_real_group_effect():
    rng = np.random.default_rng(7)
    rows = []
    for speaker in range(16):
        group = "f" if speaker < 8 else "m"
        preference = (
            np.array([0.5, 0.3, 0.1, 0.05, 0.03, 0.02]) if group == "f" else np.array([0.02, 0.03, 0.05, 0.1, 0.3, 0.5])
        )
        rows += [(f"s{speaker}", group, "attr", v) for v in rng.choice(VALUES, size=15, p=preference)]
    table = pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])
    assert permutation_test(table, tau=1, n_permutations=999, seed=0).p_value < 0.01


def test_permutations_keep_group_sizes_and_move_whole_speakers():
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    assignments = speaker_permutations(labels, 500, seed=3)
    assert assignments.shape == (500, len(labels))
    for row in assignments:
        assert np.array_equal(np.bincount(row, minlength=3), np.bincount(labels))


def test_p_value_matches_exhaustive_enumeration():
    # 6 speakers in 3 + 3: the exact p over all 20 assignments, against a large Monte-Carlo run
    rng = np.random.default_rng(11)
    rows = []
    for speaker in range(6):
        group = "f" if speaker < 3 else "m"
        bias = 0.7 if group == "f" else 0.4
        rows += [(f"s{speaker}", group, "attr", "a" if rng.random() < bias else "b") for _ in range(10)]
    table = pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])
    tensor = count_tensor(table, tau=1)
    observed = ntvd(table, tau=1).score
    exhaustive = []
    for chosen in itertools.combinations(range(6), 3):
        speaker_group = np.ones(6, dtype=int)
        speaker_group[list(chosen)] = 0
        group_of = dict(zip(tensor.speakers, speaker_group))
        relabelled = table.assign(group=table["speaker"].map(group_of).astype(str))
        exhaustive.append(ntvd(relabelled, tau=1).score)
    exact = np.mean(np.asarray(exhaustive) >= observed - 1e-9)
    estimate = permutation_test(table, tau=1, n_permutations=20_000, seed=1).p_value
    assert estimate == pytest.approx(exact, abs=0.01)


def test_result_carries_null_and_observed():
    table = speaker_correlated_null(np.random.default_rng(0))
    result = permutation_test(table, tau=1, n_permutations=300, seed=5)
    assert result.null.shape == (300,)
    assert result.observed == pytest.approx(ntvd(table, tau=1).score)
    assert result.p_value == pytest.approx((1 + np.sum(result.null >= result.observed - 1e-9)) / 301)
    again = permutation_test(table, tau=1, n_permutations=300, seed=5)
    assert again.p_value == result.p_value


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40))
def test_bh_matches_statsmodels(p_values):
    expected = multipletests(p_values, method="fdr_bh")[1]
    assert np.allclose(fdr_bh(p_values), expected)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(1e-6, 1, allow_nan=False), min_size=1, max_size=40))
def test_q_values_are_at_least_p_and_monotone_in_p(p_values):
    p = np.asarray(p_values)
    q = fdr_bh(p)
    assert np.all(q >= p - 1e-12)
    assert np.all(q <= 1.0)
    order = np.argsort(p, kind="mergesort")
    assert np.all(np.diff(q[order]) >= -1e-12)


def test_bh_hand_computed_and_nan_kept():
    # m = 4 finite: sorted p = .01 .02 .03 .5 -> m p / i = .04 .04 .04 .5
    q = fdr_bh([0.03, np.nan, 0.01, 0.5, 0.02])
    assert np.isnan(q[1])
    assert np.allclose(q[[0, 2, 3, 4]], [0.04, 0.04, 0.5, 0.04])
