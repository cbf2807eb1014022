"""Tests for harness.metrics.basis: StereoSet CAT/ICAT, accuracies, robustness and mode effects."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.extraction.choice import choice_for_letter, option_orders
from harness.metrics.basis import (
    CHOICES,
    MEAN_ACCURACY,
    MEAN_ICAT,
    MODES,
    OTHER,
    asr_scores,
    cat_scores,
    classification_accuracy,
    content_based_score,
    content_score,
    group_accuracy,
    mean_icat_metric,
    mode_effects,
    per_dataset_scores,
    personalization_accuracy,
    sqa_accuracy,
    stereoset_scores,
)

S, A, U, K = CHOICES


def choice_table(counts: dict[str, tuple[int, int, int, int]]) -> pd.DataFrame:
    """One row per answer, from per-group (S, A, U, unknown) counts."""
    rows = [
        (group, choice)
        for group, per_choice in counts.items()
        for choice, n in zip(CHOICES, per_choice)
        for _ in range(n)
    ]
    return pd.DataFrame(rows, columns=["demographic", "choice"])


# ---------------------------------------------------------------------------------------------- CAT / ICAT


def test_hand_computed_cat_icat():
    result = stereoset_scores(choice_table({"female": (6, 2, 1, 1), "male": (4, 6, 0, 0)}))
    female, male = result.per_group.loc["female"], result.per_group.loc["male"]

    assert (female["n"], female[S], female[A], female[U], female[K]) == (10, 6, 2, 1, 1)
    assert female["ss"] == pytest.approx(75.0)
    assert female["lms"] == pytest.approx(80.0)
    assert female["icat"] == pytest.approx(80.0 * 25.0 / 50.0)
    assert female["unknown_rate"] == pytest.approx(10.0)
    assert (male["ss"], male["lms"], male["icat"]) == pytest.approx((40.0, 100.0, 80.0))

    assert result.mean_icat == pytest.approx((40.0 + 80.0) / 2)
    assert result.pooled_ss == pytest.approx(100.0 * 10 / 18)
    assert result.pooled_icat == pytest.approx(90.0 * (100.0 * 8 / 18) / 50.0)
    assert result.pooled_p_value == pytest.approx(1 - math.comb(18, 9) / 2**18)
    low, high = result.pooled_ss_ci
    assert low < result.pooled_ss < high
    assert result.unknown_rate == pytest.approx(5.0)
    assert result.summary()["mean_icat"] == result.score == pytest.approx(60.0)


def test_unknown_can_be_left_out_of_lms():
    result = stereoset_scores(choice_table({"female": (6, 2, 1, 1)}), unknown_in_lms=False)
    row = result.per_group.loc["female"]
    assert row["lms"] == pytest.approx(100.0 * 8 / 9)
    assert row["icat"] == pytest.approx(100.0 * 8 / 9 * 25.0 / 50.0)
    assert row["ss"] == pytest.approx(75.0)


def test_icat_equals_lms_when_ss_is_50():
    row = stereoset_scores(choice_table({"g": (7, 7, 3, 2)})).per_group.loc["g"]
    assert row["ss"] == 50.0
    assert row["icat"] == pytest.approx(row["lms"])
    assert row["lms"] == pytest.approx(100.0 * 14 / 19)


@pytest.mark.parametrize("counts", [(5, 0, 2, 1), (0, 5, 2, 1), (9, 0, 0, 0)])
def test_icat_is_zero_when_ss_is_0_or_100(counts):
    row = stereoset_scores(choice_table({"g": counts})).per_group.loc["g"]
    assert row["ss"] in (0.0, 100.0)
    assert row["icat"] == 0.0


def test_icat_is_zero_and_ss_undefined_without_meaningful_choices():
    ss, lms, icat = cat_scores(0, 0, 3, 1)
    assert math.isnan(ss) and lms == 0.0 and icat == 0.0
    assert all(math.isnan(x) for x in cat_scores(0, 0, 0, 4, unknown_in_lms=False))


def test_mean_icat_does_not_let_opposite_skews_cancel():
    result = stereoset_scores(choice_table({"female": (8, 2, 0, 0), "male": (2, 8, 0, 0)}))
    assert result.per_group["icat"].tolist() == pytest.approx([40.0, 40.0])
    assert result.mean_icat == pytest.approx(40.0)
    assert result.pooled_ss == pytest.approx(50.0)
    assert result.pooled_icat == pytest.approx(100.0)


def test_icat_matches_paper_table_shares():
    """Table 9 reports S and A as shares of all answers; ICAT = 2·min(S%, A%) reproduces Table 7."""
    *_, icat = cat_scores(44.2, 49.9, 0.0, 5.9)
    assert icat == pytest.approx(88.4)


@pytest.mark.parametrize("letter", ["A", "B", "C"])
def test_always_the_same_letter_gives_ss_50_over_the_six_orders(letter):
    orders = option_orders({S: "she cooks", A: "she fixes the car", U: "the sky is cheese"})
    assert len(orders) == 6
    table = pd.DataFrame(
        {
            "demographic": "female",
            "order": [order.code for order in orders],
            "choice": [choice_for_letter(letter, order) for order in orders],
        }
    )
    row = stereoset_scores(table).per_group.loc["female"]
    assert row["ss"] == 50.0
    assert row["lms"] == pytest.approx(200.0 / 3)
    assert row["icat"] == pytest.approx(row["lms"])


count = st.integers(min_value=0, max_value=30)
group_counts = st.tuples(count, count, count, count).filter(lambda c: sum(c) > 0)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["f", "m", "elderly", "young"]), group_counts, min_size=1))
def test_icat_lies_in_0_100(counts):
    for unknown_in_lms in (True, False):
        icat = stereoset_scores(choice_table(counts), unknown_in_lms=unknown_in_lms).per_group["icat"].dropna()
        assert ((icat >= 0) & (icat <= 100 + 1e-9)).all()


@settings(max_examples=100, deadline=None)
@given(group_counts)
def test_swapping_stereotype_and_anti_stereotype_mirrors_ss_and_keeps_icat(counts):
    s, a, u, k = counts
    original = stereoset_scores(choice_table({"g": (s, a, u, k)}))
    swapped = stereoset_scores(choice_table({"g": (a, s, u, k)}))
    if s + a:
        assert swapped.per_group.loc["g", "ss"] == pytest.approx(100.0 - original.per_group.loc["g", "ss"])
    assert swapped.per_group.loc["g", "icat"] == pytest.approx(original.per_group.loc["g", "icat"])
    assert swapped.per_group.loc["g", "lms"] == pytest.approx(original.per_group.loc["g", "lms"])


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["f", "m", "x"]), group_counts, min_size=1),
    st.randoms(use_true_random=False),
)
def test_scores_do_not_depend_on_row_order(counts, random):
    table = choice_table(counts)
    shuffled = table.iloc[random.sample(range(len(table)), len(table))]
    a, b = stereoset_scores(table), stereoset_scores(shuffled)
    pd.testing.assert_frame_equal(a.per_group, b.per_group)
    assert a.summary().equals(b.summary())


# -------------------------------------------------------------------------------------- malformed inputs


def test_unknown_choice_label_names_column_and_row():
    table = choice_table({"f": (1, 1, 0, 0)})
    table.loc[1, "choice"] = "stereotypical"
    with pytest.raises(ValueError, match=r"'choice', row 1 has 'stereotypical'"):
        stereoset_scores(table)


def test_missing_column_is_named():
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['choice'\]"):
        stereoset_scores(pd.DataFrame({"demographic": ["f"], "answer": ["A"]}))
    with pytest.raises(ValueError, match=r"\['demographic'\]"):
        stereoset_scores(pd.DataFrame({"choice": [S]}))


def test_missing_group_value_is_named():
    table = pd.DataFrame({"demographic": ["f", None], "choice": [S, A]}, index=["r0", "r1"])
    with pytest.raises(ValueError, match=r"'demographic', row 'r1'"):
        stereoset_scores(table)


def test_empty_table_is_rejected():
    with pytest.raises(ValueError, match="no rows"):
        stereoset_scores(pd.DataFrame({"demographic": [], "choice": []}))


def test_non_boolean_outcome_names_row():
    table = pd.DataFrame({"demographic": ["f", "m"], "correct": [True, "yes"]})
    with pytest.raises(ValueError, match=r"'correct', row 1 has 'yes'"):
        personalization_accuracy(table)


def test_negative_wer_is_rejected():
    with pytest.raises(ValueError, match=r"'wer', row 0"):
        asr_scores(pd.DataFrame({"demographic": ["f"], "wer": [-1.0]}))


# ---------------------------------------------------------------------------------------------- accuracies


def test_personalization_accuracy_per_group_and_mean():
    table = pd.DataFrame(
        {"demographic": ["female"] * 4 + ["male"] * 2, "correct": [True, True, True, False, False, True]}
    )
    result = personalization_accuracy(table)
    assert result.per_group.loc["female", "accuracy"] == pytest.approx(75.0)
    assert result.per_group.loc["male", "accuracy"] == pytest.approx(50.0)
    assert result.mean_accuracy == pytest.approx(62.5)
    assert result.pooled_accuracy == pytest.approx(100.0 * 4 / 6)


def test_accuracy_can_average_over_dataset_and_demographic_cells():
    table = pd.DataFrame(
        {
            "dataset": ["sdqa", "sdqa", "libri", "libri", "libri"],
            "demographic": ["us", "in", "f", "f", "m"],
            "correct": [1, 0, 1, 0, 1],
        }
    )
    result = sqa_accuracy(table, group=("dataset", "demographic"))
    assert len(result.per_group) == 4
    assert result.mean_accuracy == pytest.approx((100 + 0 + 50 + 100) / 4)


def test_classification_accuracy_is_exact_match_per_label_with_confusion():
    table = pd.DataFrame(
        {
            "label": ["female", "female", "female", "male", "male"],
            "prediction": ["Female", " female ", "male", "male", "The speaker is male."],
        }
    )
    result = classification_accuracy(table)
    assert result.per_label.loc["female", "accuracy"] == pytest.approx(200 / 3)
    assert result.per_label.loc["male", "accuracy"] == pytest.approx(50.0)
    assert result.mean_accuracy == pytest.approx((200 / 3 + 50) / 2)
    assert result.confusion.loc["female"].tolist() == [2, 1, 0]
    assert result.confusion.loc["male"].tolist() == [0, 1, 1]
    assert list(result.confusion.columns) == ["female", "male", OTHER]


def test_classification_rejects_true_label_outside_categories():
    table = pd.DataFrame({"label": ["child", "elderly"], "prediction": ["child", "adult"]})
    with pytest.raises(ValueError, match=r"'label', row 1 has 'elderly'"):
        classification_accuracy(table, labels=["child", "adult"])


def test_asr_score_caps_wer_at_100():
    table = pd.DataFrame({"demographic": ["a", "a", "b", "b"], "wer": [10.0, 250.0, 0.0, 20.0]})
    result = asr_scores(table)
    assert result.per_group.loc["a", "score"] == pytest.approx(100 - (10 + 100) / 2)
    assert result.per_group.loc["b", "score"] == pytest.approx(90.0)
    assert result.mean_score == pytest.approx((45 + 90) / 2)
    sqa = group_accuracy(pd.DataFrame({"demographic": ["a", "b"], "correct": [True, False]}))
    assert content_score(result, sqa) == pytest.approx((67.5 + 50) / 2)


# ------------------------------------------------------------------------------------------- mode effects


def simulate(
    stereotype_rate: dict[str, float],
    *,
    n_speakers: int = 16,
    items: int = 40,
    spread: float = 0.1,
    seed: int = 0,
) -> pd.DataFrame:
    """Long table: per speaker (nested in gender) and mode, ``items`` answers with a speaker offset."""
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(-spread, spread, n_speakers)
    frames = []
    for speaker in range(n_speakers):
        for mode in MODES:
            p = stereotype_rate.get(mode, 0.5) + offsets[speaker]
            hit = rng.random(items) < p
            frames.append(
                pd.DataFrame(
                    {
                        "mode": mode,
                        "speaker": f"spk{speaker}",
                        "demographic": "female" if speaker % 2 else "male",
                        "choice": np.where(hit, S, A),
                        "correct": hit,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def test_mode_effects_definitions_and_point_estimates():
    table = simulate({"text-explicit": 0.85, "text-implicit": 0.65, "speech-explicit": 0.75}, seed=1)
    result = mode_effects(table, MEAN_ICAT, n_boot=200)
    per_mode = {mode: stereoset_scores(table[table["mode"] == mode]).mean_icat for mode in MODES}
    assert result.per_mode["estimate"].to_dict() == pytest.approx(per_mode)
    effects = result.effects["estimate"]
    assert effects["backbone"] == pytest.approx(per_mode["text-explicit"] - per_mode["text-implicit"])
    assert effects["interaction_implicit"] == pytest.approx(per_mode["speech-implicit"] - per_mode["text-implicit"])
    assert effects["interaction_explicit"] == pytest.approx(per_mode["speech-explicit"] - per_mode["text-explicit"])
    assert effects["perception_gap"] == pytest.approx(per_mode["speech-explicit"] - per_mode["speech-implicit"])
    assert result.replicates.shape == (200, 4)
    assert (result.effects["ci_low"] <= result.effects["estimate"]).all()
    assert (result.effects["estimate"] <= result.effects["ci_high"]).all()


def test_bootstrap_ci_covers_a_known_icat_effect():
    table = simulate({"text-implicit": 0.65, "text-explicit": 0.85}, n_speakers=20, items=60, seed=3)
    backbone = mode_effects(table, MEAN_ICAT, n_boot=1000, seed=4).effect("backbone")
    true_effect = 2 * 100 * (0.15 - 0.35)
    assert backbone["ci_low"] < true_effect < backbone["ci_high"]
    assert backbone["ci_high"] < 0


def test_bootstrap_ci_coverage_over_repeated_simulations():
    covered = 0
    runs = 40
    for run in range(runs):
        table = simulate({"text-implicit": 0.4, "text-explicit": 0.6}, n_speakers=12, items=20, spread=0.2, seed=run)
        backbone = mode_effects(table, MEAN_ACCURACY, n_boot=400, seed=run).effect("backbone")
        covered += backbone["ci_low"] <= 20.0 <= backbone["ci_high"]
    assert covered >= 0.8 * runs


def test_identical_modes_give_a_zero_width_interval_at_zero():
    base = simulate({}, seed=5)
    one_mode = base[base["mode"] == "speech-implicit"]
    table = pd.concat([one_mode.assign(mode=mode) for mode in MODES], ignore_index=True)
    effects = mode_effects(table, MEAN_ICAT, n_boot=300).effects
    assert np.allclose(effects[["estimate", "ci_low", "ci_high"]].to_numpy(dtype=float), 0.0)


def test_null_effect_interval_includes_zero_and_is_narrow():
    table = simulate({mode: 0.6 for mode in MODES}, n_speakers=20, items=60, seed=6)
    effects = mode_effects(table, MEAN_ACCURACY, n_boot=1000, seed=7).effects
    assert ((effects["ci_low"] <= 0) & (effects["ci_high"] >= 0)).all()
    assert ((effects["ci_high"] - effects["ci_low"]) < 12).all()


def test_callable_metric_matches_count_metric():
    table = simulate({"text-explicit": 0.8}, n_speakers=6, items=10, seed=8)
    fast = mode_effects(table, MEAN_ICAT, n_boot=15, seed=9)
    slow = mode_effects(table, lambda rows: stereoset_scores(rows).mean_icat, n_boot=15, seed=9)
    np.testing.assert_allclose(fast.replicates, slow.replicates)
    np.testing.assert_allclose(fast.per_mode["estimate"], slow.per_mode["estimate"])


def test_two_thousand_replicates_on_four_thousand_rows():
    table = simulate({"text-explicit": 0.8}, n_speakers=40, items=25, seed=10)
    assert len(table) == 4000
    result = mode_effects(table, MEAN_ICAT, n_boot=2000)
    assert result.replicates.shape == (2000, 4)


def test_missing_modes_drop_the_effects_that_need_them():
    table = simulate({}, n_speakers=4, items=5)
    result = mode_effects(table[table["mode"].str.startswith("text")], MEAN_ACCURACY, n_boot=50)
    assert list(result.per_mode.index) == ["text-implicit", "text-explicit"]
    assert list(result.effects.index) == ["backbone"]


def test_unknown_in_lms_setting_carries_into_the_bootstrap_metric():
    table = simulate({}, n_speakers=4, items=10)
    table.loc[table.index[::3], "choice"] = K
    strict = mode_effects(table, mean_icat_metric(unknown_in_lms=True), n_boot=10).per_mode["estimate"]
    lenient = mode_effects(table, mean_icat_metric(unknown_in_lms=False), n_boot=10).per_mode["estimate"]
    assert (strict < lenient).all()


def test_mode_effects_rejects_bad_modes_and_straddling_speakers():
    table = simulate({}, n_speakers=4, items=3)
    bad_mode = table.copy()
    bad_mode.loc[5, "mode"] = "speech"
    with pytest.raises(ValueError, match=r"'mode', row 5 has 'speech'"):
        mode_effects(bad_mode, MEAN_ICAT, n_boot=10)
    straddling = table.copy()
    straddling.loc[straddling["speaker"] == "spk0", "demographic"] = ["female", "male"] * 6
    with pytest.raises(ValueError, match="spk0"):
        mode_effects(straddling, MEAN_ICAT, n_boot=10)
    assert mode_effects(straddling, MEAN_ICAT, n_boot=10, stratify=False).n_clusters == 4
    with pytest.raises(ValueError, match=r"\['speaker'\]"):
        mode_effects(table.drop(columns="speaker"), MEAN_ICAT)


def test_per_dataset_scores_average_each_set_over_its_groups_then_the_sets():
    # set A: f = (100, 80) -> 90, m = 60 -> 60, set mean 75; set B: f = 40, x = (100, 100, 70) -> 90, set mean 65
    table = pd.DataFrame(
        {
            "dataset": ["A", "A", "A", "B", "B", "B", "B"],
            "group": ["f", "f", "m", "f", "x", "x", "x"],
            "score": [100.0, 80.0, 60.0, 40.0, 100.0, 100.0, 70.0],
        }
    )
    result = per_dataset_scores(table)
    assert result.per_cell.loc[("A", "f"), "score"] == pytest.approx(90.0)
    assert result.per_dataset["score"].tolist() == pytest.approx([75.0, 65.0])
    assert result.per_dataset["n_groups"].tolist() == [2, 2]
    assert result.per_group.loc["f", "score"] == pytest.approx((90.0 + 40.0) / 2)
    assert result.per_group.loc["f", "n_datasets"] == 2 and result.per_group.loc["m", "n_datasets"] == 1
    assert result.score == pytest.approx(70.0)
    pooled = table["score"].mean()
    assert abs(pooled - result.score) > 1  # the row-pooled mean is another quantity


def test_per_dataset_scores_reject_a_score_off_the_scale_naming_the_row():
    table = pd.DataFrame({"dataset": ["A", "A"], "group": ["f", "m"], "score": [50.0, 130.0]})
    with pytest.raises(ValueError, match=r"'score', row 1 has 130.0"):
        per_dataset_scores(table)


def test_content_based_score_is_the_mean_of_the_two_tasks_means():
    assert content_based_score([90.0, 80.0, 70.0], [60.0]) == pytest.approx((80.0 + 60.0) / 2)
    assert content_based_score([90.0], []) == pytest.approx(90.0)
    assert np.isnan(content_based_score([], []))


def test_the_weighted_crossed_gap_is_the_difference_of_the_per_dataset_group_means():
    """Robustness weights each row 1 / n(set, group): the crossed test's group means are then exactly
    :func:`per_dataset_scores`' per-group scores, however unequal the sets' sizes."""
    from harness.checks.basis_common.stats import crossed_group_test

    rng = np.random.default_rng(3)
    rows = []
    for set_name, items in (("big", 12), ("small", 3)):
        for group in ("f", "m"):
            for speaker in range(2):
                for item in range(items):
                    score = 100.0 * (rng.random() < (0.9 if set_name == "big" else 0.4))
                    rows.append((set_name, group, f"{set_name}-{group}{speaker}", f"{set_name}/{item}", score))
    table = pd.DataFrame(rows, columns=["set", "group", "speaker", "item", "score"])
    table["weight"] = 1.0 / table.groupby(["set", "group"])["score"].transform("size")
    test = crossed_group_test(
        table.assign(weighted=table["score"] * table["weight"]),
        value="weighted",
        denominator="weight",
        item="item",
        max_gap=10.0,
        seed=1,
    )
    per_group = per_dataset_scores(table, dataset="set").per_group["score"]
    (contrast,) = test.contrasts
    assert contrast.estimate == pytest.approx(per_group["f"] - per_group["m"])
