"""The counterfactual measures (harness.metrics.counterfactual) on data of known truth: the paired speaker-level
permutation test keeps its level under the null and gains power with the effect; each measure's value on tables
worked by hand; bad tables are refused naming the recording or row."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from harness.metrics.counterfactual import (
    COLUMN_SEPARATOR,
    _arm_rows,
    arm_exchange_index,
    arm_ntvd,
    choice_flips,
    flip_rates,
    in_row_blocks,
    largest_shifts,
    paired_excess_bootstrap,
    paired_permutation_test,
    paired_wer_difference,
    perceived_shares,
    release_statistic,
    retained_values,
    speaker_arm_sums,
    with_arm_counterparts,
)
from harness.metrics.paired import group_sums, paired_speaker_bootstrap, paired_speaker_test

ALPHA = 0.05


def choice_table(rng: np.random.Generator, speakers: int, items: int, effect: float) -> pd.DataFrame:
    """Each speaker has its own stereotype propensity (Beta(2, 2)); the swap arm adds ``effect`` to it. Both arms
    answer the same items, so answers are paired within recording."""
    rows = []
    for speaker in range(speakers):
        propensity = rng.beta(2.0, 2.0)
        for item in range(items):
            for arm, probability in (("identity", propensity), ("swap", min(1.0, propensity + effect))):
                choice = "stereotype" if rng.random() < probability else "anti-stereotype"
                rows.append((f"s{speaker}", f"s{speaker}-i{item}", arm, choice))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "choice"])


def rejection_rate(effect: float, datasets: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejected = 0
    for index in range(datasets):
        table = choice_table(rng, speakers=16, items=6, effect=effect)
        result = choice_flips(table, n_permutations=199, seed=index)
        rejected += result.test.p_value <= ALPHA
    return rejected / datasets


def test_paired_test_keeps_its_level_under_the_null():
    rate = rejection_rate(0.0, datasets=300, seed=1)
    standard_error = np.sqrt(ALPHA * (1 - ALPHA) / 300)
    assert rate <= ALPHA + 2.5 * standard_error
    assert rate >= ALPHA - 2.5 * standard_error


def test_paired_test_gains_power_with_the_effect():
    rates = [rejection_rate(effect, datasets=80, seed=2) for effect in (0.0, 0.08, 0.16, 0.3)]
    assert rates == sorted(rates) and rates[0] < rates[1] < rates[3]
    assert rates[-1] >= 0.8


def test_p_value_is_one_plus_exceedances_over_b_plus_one_when_drawn():
    first = np.arange(1.0, 13.0)[:, None]  # 12 moving speakers: 4,096 patterns > B = 999, so drawn
    same = paired_permutation_test(first, first, lambda a, b: np.abs(b - a)[:, 0], n_permutations=99)
    assert same.observed == 0.0 and same.p_value == 1.0
    shifted = paired_permutation_test(first, first + 5.0, lambda a, b: np.abs(b - a)[:, 0], n_permutations=999)
    assert not shifted.exact and shifted.n_permutations == 999
    exceed = int(np.count_nonzero(shifted.null >= shifted.observed - 1e-9 * shifted.observed))
    assert shifted.p_value == pytest.approx((1 + exceed) / 1000)


def test_p_value_is_exact_when_every_pattern_fits_in_b():
    """Issue 57: 2^S <= B enumerates every swap pattern once; p = #{T >= observed} / 2^S, no Monte Carlo noise."""
    first = np.array([[1.0], [2.0], [3.0]])
    shifted = paired_permutation_test(first, first + 5.0, lambda a, b: np.abs(b - a)[:, 0], n_permutations=999)
    # Three speakers: a swap of all three or none gives the observed |difference|: 2 of the 8 patterns.
    assert shifted.exact and shifted.n_permutations == 8 and shifted.p_value == 0.25
    assert shifted.floor.permutations is None and shifted.floor.min_p == 0.25
    twelve = np.arange(1.0, 13.0)[:, None]
    unanimous = paired_permutation_test(twelve, twelve + 20.0, lambda a, b: np.abs(b - a)[:, 0], n_permutations=10_000)
    assert unanimous.exact and unanimous.p_value == 2 / 4096
    # The same seed-free answer whatever the seed: exact.
    again = paired_permutation_test(twelve, twelve + 20.0, lambda a, b: np.abs(b - a)[:, 0], 10_000, seed=7)
    assert again.p_value == unanimous.p_value


def test_swaps_move_all_of_a_speakers_recordings_together():
    """One speaker with a huge effect and many recordings cannot be significant alone: the speaker is the unit."""
    rows = [("s0", f"r{i}", arm, "stereotype" if arm == "swap" else "anti-stereotype")
            for i in range(50) for arm in ("identity", "swap")]  # fmt: skip
    rows += [(f"s{k}", f"r{k}-{i}", arm, "anti-stereotype") for k in (1, 2) for i in range(3) for arm in ("identity", "swap")]  # fmt: skip
    result = choice_flips(pd.DataFrame(rows, columns=["speaker", "recording", "arm", "choice"]), n_permutations=999)
    assert result.flip_rate == pytest.approx(50 / 56)
    assert result.test.p_value > 0.3


def vibe_table(swapped_recordings: int, recordings: int = 60, speakers: int = 10) -> pd.DataFrame:
    """Story-like answers: the identity arm always "engineer"; the swap arm "nurse" for the first
    ``swapped_recordings`` recordings; a second attribute never changes."""
    rows = []
    for index in range(recordings):
        speaker, recording = f"s{index % speakers}", f"r{index:02d}"
        for arm in ("identity", "swap"):
            job = "nurse" if arm == "swap" and index < swapped_recordings else "engineer"
            rows += [(speaker, recording, arm, "occupation", job), (speaker, recording, arm, "city", "Paris")]
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value"])


def test_arm_ntvd_flip_rates_and_shifts_on_known_answers():
    result = arm_ntvd(vibe_table(swapped_recordings=60), tau=5, n_permutations=999)
    assert result.per_attribute == {"all": {"city": pytest.approx(0.0), "occupation": pytest.approx(100.0)}}
    assert result.score == pytest.approx(50.0)
    assert result.test.p_value < 0.01
    assert result.distributions.loc[("all", "occupation", "nurse"), "swap"] == 1.0
    shifts = largest_shifts(result.distributions)
    assert shifts[["shift", "value"]].values.tolist() == [["from", "engineer"], ["to", "nurse"]]

    half = arm_ntvd(vibe_table(swapped_recordings=30), tau=5, n_permutations=99)
    assert half.per_attribute["all"]["occupation"] == pytest.approx(50.0)
    rates = flip_rates(vibe_table(swapped_recordings=15))
    assert rates.loc["occupation"].to_dict() == {"recordings": 60, "flipped": 15, "flip_rate": 0.25}
    assert rates.loc["city", "flip_rate"] == 0.0

    unchanged = arm_ntvd(vibe_table(swapped_recordings=0), tau=5, n_permutations=99)
    assert unchanged.score == 0.0 and unchanged.test.p_value == 1.0


def test_a_multi_valued_attribute_flips_when_any_value_changes():
    rows = [("s0", "r0", "identity", "activity", "golf"), ("s0", "r0", "identity", "activity", "chess"),
            ("s0", "r0", "swap", "activity", "chess"), ("s0", "r0", "swap", "activity", "golf"),
            ("s0", "r1", "identity", "activity", "golf"), ("s0", "r1", "swap", "activity", "yoga")]  # fmt: skip
    rates = flip_rates(pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value"]))
    assert rates.loc["activity"].to_dict() == {"recordings": 2, "flipped": 1, "flip_rate": 0.5}


def test_choice_flips_and_stereotype_share_change():
    rows = []
    for item, (before, after) in enumerate([("stereotype", "stereotype"), ("anti-stereotype", "stereotype"),
                                            ("anti-stereotype", "anti-stereotype"), ("unrelated", "stereotype")]):  # fmt: skip
        rows += [("s0", f"i{item}", "identity", before), ("s0", f"i{item}", "swap", after)]
    result = choice_flips(pd.DataFrame(rows, columns=["speaker", "recording", "arm", "choice"]), n_permutations=9)
    assert result.items == 4 and result.flip_rate == 0.5
    assert result.stereotype_share == {"identity": 25.0, "swap": 75.0} and result.share_change == 50.0


def test_paired_wer_difference():
    rows = [("s0", "r0", "identity", 1, 10), ("s0", "r0", "swap", 3, 10),
            ("s1", "r1", "identity", 0, 5), ("s1", "r1", "swap", 0, 5)]  # fmt: skip
    result = paired_wer_difference(
        pd.DataFrame(rows, columns=["speaker", "recording", "arm", "errors", "words"]), n_permutations=99
    )
    assert result.wer == {"identity": pytest.approx(100 / 15), "swap": pytest.approx(20.0)}
    assert result.difference == pytest.approx(20.0 - 100 / 15)
    assert result.mean_recording_difference == pytest.approx(10.0)
    assert result.recordings == 2


def test_perceived_shares_per_direction():
    table = pd.DataFrame(
        {
            "source_group": ["male"] * 4 + ["female"] * 2,
            "target_group": ["female"] * 4 + ["male"] * 2,
            "perceived_group": ["female", "female", "female", None, "female", "male"],
        }
    )
    shares = perceived_shares(table)
    assert shares.loc[("male", "female")].to_dict() == {"clips": 4, "perceived_as_target": 3, "share": 0.75}
    assert shares.loc[("female", "male"), "share"] == 0.5


def test_bad_tables_are_refused_naming_the_problem():
    table = vibe_table(swapped_recordings=3)
    choices = pd.DataFrame([("s0", "i0", "identity", "stereotype"), ("s0", "i1", "identity", "stereotype"),
                            ("s0", "i1", "swap", "stereotype")], columns=["speaker", "recording", "arm", "choice"])  # fmt: skip
    with pytest.raises(ValueError, match="recording 'i0' lacks an answer in one of the arms"):
        choice_flips(choices)
    with pytest.raises(ValueError, match="lacks column\\(s\\) \\['speaker'\\]"):
        arm_ntvd(table.drop(columns="speaker"))
    with pytest.raises(ValueError, match="no attribute value occurs 1000 times"):
        arm_ntvd(table, tau=1000)
    with pytest.raises(ValueError, match="needs two different arms"):
        flip_rates(table, arms=("swap", "swap"))
    wer = pd.DataFrame([("s0", "r0", "identity", 1, 0), ("s0", "r0", "swap", 1, 4)],
                       columns=["speaker", "recording", "arm", "errors", "words"])  # fmt: skip
    with pytest.raises(ValueError, match="row 0 has no reference words"):
        paired_wer_difference(wer)


def _arm_rows_by_groupby(table: pd.DataFrame, arms, *, drop_unpaired: bool) -> pd.DataFrame:
    """The arm rows as ``_arm_rows`` selected them by grouping on the recording's text (before its integer codes)."""
    rows = table[table["arm"].isin(arms)]
    arms_per_recording = rows.groupby("recording")["arm"].nunique()
    unpaired = arms_per_recording.index[arms_per_recording < 2]
    if drop_unpaired:
        return rows[rows["recording"].map(arms_per_recording).to_numpy() >= 2]
    if len(unpaired):
        raise ValueError(f"recording {unpaired[0]!r} lacks an answer in one of the arms {list(arms)}")
    return rows


@pytest.mark.parametrize("drop_unpaired", [True, False])
def test_arm_rows_by_codes_equal_the_groupby_selection(drop_unpaired):
    rng = np.random.default_rng(3)
    complete = vibe_table(swapped_recordings=40).sample(frac=1.0, random_state=1)  # recordings in no order
    partial = complete.drop(index=rng.choice(complete.index, size=25, replace=False))  # some in one arm only
    for table, arms in itertools.product(
        [pd.concat([frame, frame.assign(arm="original")], ignore_index=True) for frame in (complete, partial)],
        [("identity", "swap"), ("original", "identity")],
    ):
        try:
            expected = _arm_rows_by_groupby(table, arms, drop_unpaired=drop_unpaired)
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc).split(" lacks")[0]):
                _arm_rows(table, arms, ("attribute", "value"), "test", drop_unpaired=drop_unpaired)
            continue
        pd.testing.assert_frame_equal(
            _arm_rows(table, arms, ("attribute", "value"), "test", drop_unpaired=drop_unpaired), expected
        )


def test_a_recording_of_two_speakers_is_refused_naming_it():
    table = vibe_table(swapped_recordings=6)
    table.loc[(table["recording"] == "r03") & (table["arm"] == "swap"), "speaker"] = "someone else"
    with pytest.raises(ValueError, match="recording 'r03' is attributed to two speakers"):
        arm_ntvd(table, tau=1)


def test_a_recording_answered_in_one_arm_only_is_left_out_and_counted():
    """A refusal in one arm leaves its recording without values there: it is not compared, and it is counted."""
    table = vibe_table(swapped_recordings=60)
    refused = table.drop(index=table.index[(table["recording"] == "r00") & (table["arm"] == "swap")])
    result = arm_ntvd(refused, tau=5, n_permutations=99)
    assert result.recordings == 59 and result.unpaired_recordings == 1
    assert flip_rates(refused).loc["occupation", "recordings"] == 59


def test_directions_are_measured_apart_so_opposite_swaps_do_not_cancel():
    """Male -> female swaps turn "engineer" into "nurse", female -> male swaps the reverse: pooled, both arms hold
    30 of each and the nTVD would be 0; per direction each is 100."""
    rows = []
    for index in range(60):
        source = "male" if index % 2 else "female"
        speaker, recording = f"{source}{index % 10}", f"r{index:02d}"
        before, after = ("engineer", "nurse") if source == "male" else ("nurse", "engineer")
        rows += [(speaker, recording, "identity", source, "occupation", before),
                 (speaker, recording, "swap", source, "occupation", after)]  # fmt: skip
    table = pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])
    result = arm_ntvd(table, tau=5, n_permutations=999)
    assert result.per_direction == {"female": pytest.approx(100.0), "male": pytest.approx(100.0)}
    assert result.score == pytest.approx(100.0) and result.test.p_value < 0.01
    assert arm_ntvd(table, direction=None, tau=5, n_permutations=99).score == pytest.approx(0.0)
    shifts = largest_shifts(result.distributions).set_index(["direction", "shift"])["value"]
    assert shifts[("male", "to")] == "nurse" and shifts[("female", "to")] == "engineer"


def test_smallest_p_value_bounds_the_monte_carlo_p():
    from harness.metrics.counterfactual import smallest_p_value

    assert smallest_p_value(1) == 1.0 and smallest_p_value(2) == 0.5 and smallest_p_value(10) == 2 / 1024
    first = np.zeros((3, 1))
    result = paired_permutation_test(first, first + 1.0, lambda a, b: np.abs(b - a)[:, 0], n_permutations=4999, seed=3)
    assert result.p_value == pytest.approx(smallest_p_value(3), abs=0.03)


def with_directions(table: pd.DataFrame) -> pd.DataFrame:
    """Even speakers female, odd male: two swap directions."""
    return table.assign(source_group=["female" if int(s[1:]) % 2 == 0 else "male" for s in table["speaker"]])


def one_replicate(table: pd.DataFrame, kind: str, **options) -> float:
    """The release statistic of ``table`` on its own speakers (one replicate, every weight 1)."""
    sums = speaker_arm_sums(table, kind)
    columns = [c for c in sums.columns if c != "group"]
    statistic = release_statistic(kind, columns, **options)
    return float(statistic(group_sums(sums, np.ones((1, len(sums)))))[0])


def test_the_release_statistic_of_one_checkpoint_is_its_absolute_measure():
    """On one checkpoint's own sums, the release statistic equals the absolute test's measure: the arm nTVD (per
    direction, then averaged), and the largest |swap - identity| over directions for WER and stereotype shares."""
    vibe = with_directions(vibe_table(swapped_recordings=30))
    sums = speaker_arm_sums(vibe, "vibe")
    retained = retained_values([sums], tau=5)
    assert one_replicate(vibe, "vibe", retained=retained) == pytest.approx(
        arm_ntvd(vibe, tau=5, n_permutations=9).score
    )

    rng = np.random.default_rng(3)
    wer = with_directions(
        pd.DataFrame(
            [(f"s{s}", f"s{s}-r{r}", arm, int(rng.integers(0, 4 + 3 * (arm == "swap") * (s % 2))), 10)
             for s in range(8) for r in range(5) for arm in ("identity", "swap")],
            columns=["speaker", "recording", "arm", "errors", "words"],
        )
    )  # fmt: skip
    by_direction = [
        abs(paired_wer_difference(rows, n_permutations=9).difference) for _, rows in wer.groupby("source_group")
    ]
    assert one_replicate(wer, "wer") == pytest.approx(max(by_direction))

    choices = with_directions(choice_table(np.random.default_rng(4), speakers=8, items=6, effect=0.3))
    by_direction = [
        abs(choice_flips(rows, n_permutations=9).share_change) for _, rows in choices.groupby("source_group")
    ]
    assert one_replicate(choices, "stereotype") == pytest.approx(max(by_direction))


def test_retained_values_are_fixed_once_for_both_checkpoints():
    """A value rare in one checkpoint but frequent in the other is compared in both; the arm columns of a value that
    only one checkpoint states count as zero in the other."""
    frequent = speaker_arm_sums(with_directions(vibe_table(swapped_recordings=30)), "vibe")
    unchanged = speaker_arm_sums(with_directions(vibe_table(swapped_recordings=0)), "vibe")
    retained = retained_values([unchanged, frequent], tau=5)
    assert ("occupation", "nurse") in retained["female"] and ("occupation", "nurse") in retained["male"]
    assert ("occupation", "nurse") not in retained_values([unchanged], tau=5)["female"]


def test_the_paired_release_comparison_finds_a_grown_effect_and_keeps_its_level():
    """Known truth: two fair checkpoints (no swap effect) are rarely judged worse (one-sided 5%), and a candidate
    whose swap moves the answers (a swapped answer is "nurse" with probability 0.9 instead of 0.5) is judged worse
    than a fair baseline."""
    rng = np.random.default_rng(11)

    def checkpoint(effect: float) -> pd.DataFrame:
        rows = []
        for s in range(24):
            for r in range(6):
                for arm in ("identity", "swap"):
                    flip = arm == "swap" and rng.random() < effect
                    job = "nurse" if flip or rng.random() < 0.5 else "engineer"
                    rows.append((f"s{s}", f"s{s}-r{r}", arm, "occupation", job))
        return with_directions(pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value"]))

    def p_worse(candidate: pd.DataFrame, baseline: pd.DataFrame, seed: int) -> float:
        tables = [speaker_arm_sums(t, "vibe") for t in (candidate, baseline)]
        columns = sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"})
        tables = [t.reindex(columns=["group", *columns], fill_value=0.0) for t in tables]
        statistic = release_statistic("vibe", columns, retained=retained_values(tables, tau=5))
        return paired_speaker_test(
            paired_speaker_bootstrap(*tables, statistic, n_boot=400, seed=seed), "higher"
        ).p_worse

    null = [p_worse(checkpoint(0.0), checkpoint(0.0), seed) for seed in range(40)]
    assert np.mean(np.array(null) <= ALPHA) <= 0.15
    grown = [p_worse(checkpoint(0.8), checkpoint(0.0), seed) for seed in range(10)]
    assert np.mean(np.array(grown) <= ALPHA) >= 0.9


def test_a_value_only_the_swap_arm_states_is_compared_in_its_attribute():
    """The release statistic's columns come from both arms: a value that only the swap arm states ("London", after
    every identity column) sorts inside its attribute (the per-attribute sums need contiguous columns), and the
    statistic still equals the arm nTVD."""
    rows = []
    for index in range(40):
        speaker, recording = f"s{index % 8}", f"r{index:02d}"
        for arm in ("identity", "swap"):
            job = "nurse" if arm == "swap" else "engineer"
            city = "London" if arm == "swap" and index % 2 else "Paris"
            rows += [(speaker, recording, arm, "occupation", job), (speaker, recording, arm, "city", city)]
    table = with_directions(pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value"]))
    sums = speaker_arm_sums(table, "vibe")
    assert one_replicate(table, "vibe", retained=retained_values([sums], tau=5)) == pytest.approx(
        arm_ntvd(table, tau=5, n_permutations=9).score
    )


def simulated_checkpoint(rng: np.random.Generator, content: np.ndarray, kind: str, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's answers on both arms, one attribute of ``content.shape[2]`` values, each recording answered
    from its own distribution ``content[speaker, recording]``: ``steady`` answers alike on both arms (greedy),
    ``noisy`` redraws the answer on every arm (sampling; voice-fair), ``grown`` is noisy and its swap arm answers the
    direction's stereotyped value (female -> v0, male -> v5) with probability ``effect``."""
    rows = []
    speakers, recordings, values = content.shape
    for s in range(speakers):
        group = "female" if s % 2 == 0 else "male"
        for r in range(recordings):
            answer = f"v{rng.choice(values, p=content[s, r])}"
            for arm in ("identity", "swap"):
                value = answer if kind == "steady" or arm == "identity" else f"v{rng.choice(values, p=content[s, r])}"
                if kind == "grown" and arm == "swap" and rng.random() < effect:
                    value = "v0" if group == "female" else f"v{values - 1}"
                rows.append((f"s{s:02d}", f"s{s:02d}-r{r}", arm, "occupation", value, group))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value", "source_group"])


def excess_test(candidate: pd.DataFrame, baseline: pd.DataFrame, seed: int, kind: str = "vibe"):
    """The counterfactual check's release comparison on two long tables: the arm-exchange excess, tested one-sided."""
    tables = [speaker_arm_sums(table, kind) for table in (candidate, baseline)]
    columns = with_arm_counterparts(sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"}))
    tables = [table.reindex(columns=["group", *columns], fill_value=0.0) for table in tables]
    retained = retained_values(tables, tau=10) if kind == "vibe" else None
    statistic = release_statistic(kind, columns, retained=retained)
    result = paired_excess_bootstrap(*tables, statistic, arm_exchange_index(columns), n_boot=300, seed=seed)
    return result, paired_speaker_test(result, "higher")


def test_a_noisy_fair_candidate_is_no_regression_against_a_steady_fair_baseline():
    """Known truth (issue 45): a voice-fair candidate whose answers are redrawn on every arm has a large raw arm nTVD
    (every redrawn answer differs between the arms by chance) but no systematic effect; against a fair baseline that
    answers alike on both arms (excess exactly 0) it is judged worse in at most a few of 40 pairs, where the raw
    statistic judges most of them worse."""
    judged_worse = raw_worse = 0
    for seed in range(40):
        rng = np.random.default_rng([45, seed])
        content = rng.dirichlet(np.ones(6), size=(24, 6))
        candidate, baseline = (simulated_checkpoint(rng, content, kind) for kind in ("noisy", "steady"))
        result, test = excess_test(candidate, baseline, seed)
        assert result.baseline == 0.0
        judged_worse += test.p_worse <= ALPHA
        tables = [speaker_arm_sums(table, "vibe") for table in (candidate, baseline)]
        columns = with_arm_counterparts(sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"}))
        tables = [table.reindex(columns=["group", *columns], fill_value=0.0) for table in tables]
        raw = release_statistic("vibe", columns, retained=retained_values(tables, tau=10))
        raw_worse += paired_speaker_test(paired_speaker_bootstrap(*tables, raw, n_boot=300, seed=seed), "higher").p_worse <= ALPHA  # fmt: skip
    assert judged_worse <= 4, judged_worse
    assert raw_worse >= 30, raw_worse


def test_a_grown_systematic_effect_is_a_regression_beyond_the_noise():
    """A candidate whose swap arm answers the stereotyped value half of the time is judged
    worse than a steady fair baseline, and than a noisy fair one, in nearly every pair."""
    caught = 0
    for seed in range(20):
        rng = np.random.default_rng([46, seed])
        content = rng.dirichlet(np.ones(6), size=(24, 6))
        grown = simulated_checkpoint(rng, content, "grown", effect=0.5)
        baseline = simulated_checkpoint(rng, content, "steady" if seed % 2 else "noisy")
        result, test = excess_test(grown, baseline, seed)
        assert result.candidate > 5.0
        caught += test.p_worse <= ALPHA
    assert caught >= 19, caught


def test_a_checkpoint_against_itself_never_regresses():
    """The same sums, the same draws and the same arm exchanges: every replicate's difference is 0."""
    rng = np.random.default_rng(7)
    table = simulated_checkpoint(rng, rng.dirichlet(np.ones(6), size=(24, 6)), "grown", effect=0.3)
    result, test = excess_test(table, table, seed=1)
    assert result.difference == 0.0 and np.all(result.replicates == 0.0)
    assert not test.estimable


def test_the_excess_is_the_effect_less_its_arm_exchange_expectation_worked_by_hand():
    """WER, one direction of S = 8 speakers, 10 words each, every speaker one error more on the swap arm: T = 10
    points; exchanging the arms of k speakers gives |8 - 2k| * 10 / 8 points, whose expectation over k ~ Bin(8, 1/2)
    is sum_k C(8, k) / 256 * |8 - 2k| * 10 / 8 = 2.734; the excess is T less it, 7.266 (up to the Monte Carlo error
    of the exchanges)."""
    from scipy.stats import binom

    rows = [(f"s{s}", f"s{s}-r", arm, 1 + (arm == "swap"), 10, "female") for s in range(8) for arm in ("identity", "swap")]  # fmt: skip
    table = pd.DataFrame(rows, columns=["speaker", "recording", "arm", "errors", "words", "source_group"])
    expected_null = sum(binom.pmf(k, 8, 0.5) * abs(8 - 2 * k) * 10 / 8 for k in range(9))
    sums = speaker_arm_sums(table, "wer")
    columns = [c for c in sums.columns if c != "group"]
    statistic = release_statistic("wer", columns)
    result = paired_excess_bootstrap(sums, sums, statistic, arm_exchange_index(columns), n_boot=10, n_exchanges=4000)
    assert result.candidate == pytest.approx(10.0 - expected_null, abs=0.15)


def test_exchange_index_maps_every_column_onto_its_other_arm():
    columns = with_arm_counterparts(["identity\toccupation\tnurse", "swap\toccupation\tengineer"])
    assert columns == [
        "identity\toccupation\tengineer",
        "identity\toccupation\tnurse",
        "swap\toccupation\tengineer",
        "swap\toccupation\tnurse",
    ]
    assert arm_exchange_index(columns).tolist() == [2, 3, 0, 1]
    with pytest.raises(ValueError, match="has no counterpart"):
        arm_exchange_index(["identity\toccupation\tnurse"])
    with pytest.raises(ValueError, match="names arm 'original'"):
        with_arm_counterparts(["original\toccupation\tnurse"])


@pytest.mark.parametrize("kind", ["vibe", "wer"])
def test_a_release_statistic_in_row_blocks_is_one_pass_bit_for_bit(kind):
    """The arm-exchange nulls are evaluated in row blocks that fit the CPU's cache; each row of a release statistic
    depends on that row alone, so the values must be exactly those of one pass."""
    rng = np.random.default_rng(3)
    if kind == "vibe":
        pairs = [("occupation", job) for job in ("nurse", "engineer", "teacher")] + [("hobby", "chess")]
        columns = [f"{arm}{COLUMN_SEPARATOR}{a}{COLUMN_SEPARATOR}{v}" for arm in ("identity", "swap") for a, v in pairs]
        statistic = release_statistic("vibe", columns, retained={"m->f": pairs, "f->m": pairs[:2]})
    else:
        columns = [f"{arm}{COLUMN_SEPARATOR}{name}" for arm in ("identity", "swap") for name in ("errors", "words")]
        statistic = release_statistic("wer", columns)
    sums = {direction: rng.poisson(3.0, size=(20_000, len(columns))).astype(float) for direction in ("m->f", "f->m")}
    sums["f->m"][::7] = 0.0  # rows with nothing: NaN in one direction
    np.testing.assert_array_equal(in_row_blocks(statistic, sums, block_values=4_096), statistic(sums))
