"""The smallest p each permutation test can return (issue 45), against the tests themselves.

Each design floor (:class:`harness.metrics.permutation_floor.PermutationFloor`) is checked by hand on small designs, and against the
smallest p the test function returns: every data set of a small design is enumerated (every sign of the speakers'
arm differences, every grouping) and the test run with enough permutations that its Monte Carlo p estimates the
exact one to a few thousandths.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from harness.metrics.counterfactual import arm_ntvd, paired_permutation_test, sign_flip_floor, smallest_p_value
from harness.metrics.ntvd import permutation_test
from harness.metrics.permutation_floor import GROUP_PERMUTATION, SIGN_FLIP, PermutationFloor
from harness.records import Contrast

DRAWS = 20_000


def monte_carlo_tolerance(p: float) -> float:
    """Five standard errors of a Monte Carlo p from DRAWS permutations, plus its 1 / (B + 1) offset."""
    return 5.0 * math.sqrt(p * (1.0 - p) / DRAWS) + 2.0 / DRAWS


@pytest.mark.parametrize(
    "test, units, permutations, expected",
    [
        (SIGN_FLIP, (6,), None, 2 / 2**6),
        (SIGN_FLIP, (6, 6), None, 2**2 / 2**12),
        (SIGN_FLIP, (3, 0), None, 2 / 2**3),  # a direction without a unit is no block
        (SIGN_FLIP, (20,), 999, 1 / 1000),  # resolution binds
        (GROUP_PERMUTATION, (6, 6), None, 2 / 924),  # C(12, 6) = 924 groupings, two labellings each
        (GROUP_PERMUTATION, (2, 3), None, 1 / 10),
        (GROUP_PERMUTATION, (2, 2, 2), None, 6 / 90),  # 6! / (2! 2! 2!) = 90, 3! labellings
        (GROUP_PERMUTATION, (1, 1, 2), None, 2 / 12),
        (GROUP_PERMUTATION, (10, 10), 99, 1 / 100),
    ],
)
def test_design_floors_by_hand(test, units, permutations, expected):
    floor = PermutationFloor(test=test, units=units, permutations=permutations)
    assert floor.min_p == pytest.approx(expected)


def test_units_needed_is_the_smallest_design_that_reaches_alpha():
    alpha = 0.05 / 30
    one = PermutationFloor(test=SIGN_FLIP, units=(6,))
    assert one.units_needed(alpha) == 11  # 2 / 2^11 = 0.00098 <= 0.00167 < 2 / 2^10
    two = PermutationFloor(test=SIGN_FLIP, units=(6, 6))
    assert two.units_needed(alpha) == 6  # 4 / 2^12 = 0.00098; 4 / 2^10 = 0.0039
    groups = PermutationFloor(test=GROUP_PERMUTATION, units=(3, 3))
    assert groups.units_needed(alpha) == 7  # 2 / C(14, 7) = 0.00058; 2 / C(12, 6) = 0.0022
    assert "11 speakers per direction" in one.shortfall(alpha)
    assert "at least 599" in PermutationFloor(test=SIGN_FLIP, units=(30,), permutations=99).shortfall(alpha)


def test_a_direction_with_no_speakers_yet_counts_as_a_direction_of_the_design():
    """Issue 59 (a user's corpus of 4 voices per gender): the counterfactual nTVD's two swap directions held 0 + 0
    and 0 + 4 speakers heard as swapped, and the report said 11 speakers per direction would reach alpha, a
    one-direction design's need; two directions of 6 do (4 / 2^12 = 0.00098)."""
    alpha = 0.05 / 30
    for units in ((0, 0), (0, 4), (6, 6)):
        floor = PermutationFloor(test=SIGN_FLIP, units=units)
        assert floor.units_needed(alpha) == 6
        assert floor.shortfall(alpha) == ("" if units == (6, 6) else "6 speakers per direction would reach it")
    assert (
        PermutationFloor(test=SIGN_FLIP, units=(6, 6)).design_p
        <= alpha
        < PermutationFloor(test=SIGN_FLIP, units=(5, 5)).design_p
    )


def test_smallest_p_value_keeps_its_one_direction_formula_and_splits_directions():
    assert smallest_p_value(1) == 1.0 and smallest_p_value(2) == 0.5 and smallest_p_value(10) == 2 / 1024
    assert smallest_p_value(12, directions=2) == 4 / 4096
    with pytest.raises(ValueError, match="directions <= speakers"):
        smallest_p_value(2, directions=3)


def absolute_sum(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.abs((second - first).sum(axis=-1))


@pytest.mark.parametrize("speakers", [1, 2, 3, 4])
def test_every_data_set_of_a_one_direction_design_gives_p_at_least_two_over_two_to_the_s(speakers):
    """Every sign of S speakers' arm differences (distinct sizes): the smallest p the paired test returns is
    2 / 2^S, reached when all differences share a sign."""
    magnitudes = np.arange(1, speakers + 1, dtype=float)
    smallest = 1.0
    for signs in itertools.product((-1.0, 1.0), repeat=speakers):
        first = np.zeros((speakers, 1))
        second = (np.array(signs) * magnitudes)[:, None]
        result = paired_permutation_test(first, second, absolute_sum, n_permutations=DRAWS, seed=speakers)
        # 2^S <= B: every pattern enumerated, so the floor is the design's and the p exact (issue 57).
        assert result.floor == PermutationFloor(test=SIGN_FLIP, units=(speakers,), permutations=None)
        smallest = min(smallest, result.p_value)
    assert smallest == pytest.approx(2 / 2**speakers)


def test_a_speaker_whose_arms_are_equal_is_no_unit():
    first = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    second = first.copy()
    second[0, 0] += 1.0
    assert sign_flip_floor(first, second, None).units == (1,)
    assert sign_flip_floor(first, second, 99, blocks=np.array(["a", "b", "a"])).units == (1, 0)
    result = paired_permutation_test(first, second, absolute_sum, n_permutations=DRAWS, seed=0)
    assert result.floor.min_p == 1.0 and result.p_value == pytest.approx(1.0)


def complete_swap_table(per_direction: int, directions: int) -> pd.DataFrame:
    """Every speaker answers ``before`` in the identity arm and ``after`` in the swap arm: nTVD 100 per direction."""
    rows = []
    for d in range(directions):
        for s in range(per_direction):
            speaker = f"d{d}s{s}"
            for r in range(3):
                recording = f"{speaker}r{r}"
                rows.append((speaker, recording, "identity", f"g{d}", "job", f"before{d}"))
                rows.append((speaker, recording, "swap", f"g{d}", "job", f"after{d}"))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])


@pytest.mark.parametrize("per_direction, directions", [(3, 2), (2, 2), (2, 3), (4, 1)])
def test_the_vibe_arm_split_over_directions_gives_p_at_least_two_to_the_d_over_two_to_the_s(per_direction, directions):
    """The largest possible effect (every answer moves): the arm nTVD's p is 2^D / 2^S, not 2 / 2^S, since swapping
    every speaker of a direction gives that direction the same nTVD."""
    result = arm_ntvd(complete_swap_table(per_direction, directions), tau=1, n_permutations=DRAWS, seed=1)
    speakers = per_direction * directions
    expected = 2**directions / 2**speakers
    assert result.test.floor == PermutationFloor(test=SIGN_FLIP, units=(per_direction,) * directions, permutations=None)
    assert result.test.floor.design_p == pytest.approx(expected)
    assert result.test.exact and result.test.p_value == pytest.approx(expected)


def separated_groups_table(sizes: tuple[int, ...]) -> pd.DataFrame:
    """Each group's speakers all name their group's own value: the largest nTVD any grouping can give."""
    rows = [
        (f"g{g}s{s}", f"g{g}", "job", f"value{g}")
        for g, size in enumerate(sizes)
        for s in range(size)
        for _ in range(2)
    ]
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


@pytest.mark.parametrize("sizes", [(2, 2), (2, 3), (3, 3), (2, 2, 2), (1, 1, 2)])
def test_the_ntvd_group_permutation_gives_p_at_least_its_relabelling_share(sizes):
    """With the groups fully separated the observed nTVD is the largest; only the groupings that relabel groups of
    one size reproduce it, so p is K prod(n_g!) / S!."""
    result = permutation_test(separated_groups_table(sizes), tau=1, n_permutations=DRAWS, seed=2)
    expected = PermutationFloor(test=GROUP_PERMUTATION, units=sizes).design_p
    assert result.floor == PermutationFloor(test=GROUP_PERMUTATION, units=sizes, permutations=DRAWS)
    assert result.p_value == pytest.approx(expected, abs=monte_carlo_tolerance(expected))


def test_every_grouping_of_a_small_design_gives_p_at_least_its_floor():
    """Every data set of five speakers in groups of 2 and 3 (each speaker names one of two values): the smallest p
    the nTVD test returns is the floor 1 / 10."""
    sizes, smallest = (2, 3), 1.0
    for values in itertools.product(("a", "b"), repeat=5):
        rows = [
            (f"s{i}", "g0" if i < sizes[0] else "g1", "job", value) for i, value in enumerate(values) for _ in range(2)
        ]
        table = pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])
        result = permutation_test(table, tau=1, n_permutations=4_000, seed=3)
        if np.isfinite(result.p_value):
            smallest = min(smallest, result.p_value)
    assert smallest == pytest.approx(0.1, abs=5.0 * math.sqrt(0.09 / 4_000) + 1 / 4_000)


def test_a_contrast_round_trips_its_floor_and_old_records_still_read():
    floor = PermutationFloor(test=SIGN_FLIP, units=(6, 6), permutations=999)
    contrast = Contrast.with_floor("female speakers", 12.5, 0.03, True, floor)
    assert contrast.min_p == pytest.approx(1 / 1000)
    assert Contrast.from_json(contrast.to_json(), "here") == contrast
    old = {"label": "x", "estimate": 1.0, "ci_low": None, "ci_high": None, "p": 0.5, "relevant": False, "reason": None}
    assert Contrast.from_json(old, "here").min_p is None
    with pytest.raises(ValueError, match="results.json, case c, contrast 0, floor: unknown key"):
        Contrast.from_json(
            old | {"floor": {"test": SIGN_FLIP, "units": [2], "size": 3}},
            "results.json, case c, contrast 0",
            strict=True,
        )
    with pytest.raises(ValueError, match="contrast 0, floor: PermutationFloor: test must be one of"):
        Contrast.from_json(old | {"floor": {"test": "bootstrap", "units": [2]}}, "contrast 0")


def test_the_suite_sizing_figures_in_the_docs_are_the_design_floors_of_the_default_gate():
    """Issue 59, item 9: the suite docs gave no sizing advice (4 voices per gender left 11 of 72 cases unmeasured).
    docs/corpora.md's voices per group are the smallest designs that reach the default gate's corrected alpha."""
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "corpora.md").read_text().split())
    alpha = 0.05 / 43  # gate.alpha over the default gate's cases, one comparison each
    ntvd = PermutationFloor(test=GROUP_PERMUTATION, units=(1, 1)).units_needed(alpha)
    three_groups = PermutationFloor(test=GROUP_PERMUTATION, units=(1, 1, 1)).units_needed(alpha)
    swap = PermutationFloor(test=SIGN_FLIP, units=(1, 1)).units_needed(alpha)
    one_direction = PermutationFloor(test=SIGN_FLIP, units=(1,)).units_needed(alpha / 2)  # two directions, apart
    assert f"**{ntvd} voices per group** for the VIBE nTVD cases of a two-group dimension ({three_groups} with" in text
    assert f"**{swap} voices per swap direction** heard as swapped" in text
    assert f"**{one_direction} per direction** for the counterfactual ASR and stereotype cases" in text
