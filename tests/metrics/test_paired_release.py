"""The paired tests of the release path (harness.metrics.paired): calibrated on data with known truth, paired
on the same resampling draws, and never a regression where the contrast cannot vary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.metrics.paired import (
    largest_gap,
    paired_crossed_gap,
    paired_speaker_bootstrap,
    paired_speaker_test,
    ratio_per_group,
)

GROUPS = ("f", "m")


def crossed_run(
    rng, speaker_effects, item_effects, gap: float = 0.0, speakers: int = 3, items: int = 8
) -> pd.DataFrame:
    """One run's (speaker, item) cells: correct (0/100) with P = logistic(0.5 + speaker + item - gap for group m);
    the speakers' and items' effects are fixed (the same recordings and items in every run), the answers drawn anew."""
    rows = []
    for g, group in enumerate(GROUPS):
        for s in range(speakers):
            for i in range(items):
                logit = 0.5 + speaker_effects[g * speakers + s] + item_effects[i] - (gap if group == "m" else 0.0)
                rows.append((f"{group}{s}", group, f"item{i}", 1.0, 100.0 * (rng.random() < 1 / (1 + np.exp(-logit)))))
    return pd.DataFrame(rows, columns=["speaker", "group", "item", "weight", "value"])


def test_identical_runs_cannot_vary_and_are_not_estimable():
    rng = np.random.default_rng(0)
    run = crossed_run(rng, rng.normal(0, 1, 6), rng.normal(0, 1, 8))
    test = paired_crossed_gap(run, run.copy(), seed=1, n_boot=400)
    assert not test.estimable and "cannot vary" in test.reason and np.isnan(test.p_worse)


def test_a_fair_candidate_against_a_fair_baseline_is_rarely_significantly_worse():
    """Known truth: both runs come from the same model (no group gap), with the speakers' and items' effects
    shared. Over 300 pairs the one-sided p falls below 0.05 in at most 7.5% (binomial 99% upper bound of 5%)."""
    rng = np.random.default_rng(7)
    p_values = []
    for _ in range(300):
        speakers, items = rng.normal(0, 0.8, 6), rng.normal(0, 0.8, 8)
        test = paired_crossed_gap(
            crossed_run(rng, speakers, items),
            crossed_run(rng, speakers, items),
            seed=int(rng.integers(1 << 30)),
            n_boot=300,
        )
        if test.estimable:
            p_values.append(test.p_worse)
    assert len(p_values) > 250
    assert np.mean(np.array(p_values) < 0.05) <= 0.075


def test_a_real_worsening_is_found_and_its_interval_covers_it():
    rng = np.random.default_rng(3)
    speakers, items = rng.normal(0, 0.5, 16), rng.normal(0, 0.5, 24)
    baseline = crossed_run(rng, speakers, items, speakers=8, items=24)
    candidate = crossed_run(rng, speakers, items, gap=2.5, speakers=8, items=24)
    test = paired_crossed_gap(candidate, baseline, seed=5, n_boot=1000)
    assert test.estimable and test.worsening > 20 and test.p_worse < 0.005
    assert test.ci_low < test.difference < test.ci_high and test.resampled == "speakers x items"


def test_same_draws_for_both_runs_and_for_each_value_column():
    """Pairing: a candidate that differs from the baseline only by a constant shift of one group's value per
    answer moves every replicate by the same amount, so the contrast cannot vary."""
    rng = np.random.default_rng(2)
    run = crossed_run(rng, rng.normal(0, 1, 6), rng.normal(0, 1, 8))
    baseline = run.assign(
        value=np.where(run["group"] == "f", 60.0, 0.0) + 0.4 * run["value"]
    )  # f above m in every resample
    shifted = baseline.assign(value=np.where(baseline["group"] == "f", baseline["value"] + 5.0, baseline["value"]))
    test = paired_crossed_gap(shifted, baseline, seed=3, n_boot=300)
    assert not test.estimable and test.difference == pytest.approx(5.0)


def test_runs_on_different_cells_are_refused():
    rng = np.random.default_rng(1)
    run = crossed_run(rng, rng.normal(0, 1, 6), rng.normal(0, 1, 8))
    with pytest.raises(ValueError, match="different"):
        paired_crossed_gap(run, run[run["item"] != "item0"], seed=1, n_boot=100)


def test_the_speaker_bootstrap_test_widens_for_few_speakers_and_uses_t():
    """With 2 speakers per group the standard error is sqrt(2) times the bootstrap one and df = 2."""
    rng = np.random.default_rng(4)
    candidate = pd.DataFrame(
        {"group": ["a", "a", "b", "b"], "correct": [5, 7, 6, 3], "total": [10] * 4}, index=["s1", "s2", "s3", "s4"]
    )
    baseline = candidate.assign(correct=[6, 6, 5, 5])
    result = paired_speaker_bootstrap(
        candidate, baseline, largest_gap(ratio_per_group(0, 1), scale=100.0), seed=int(rng.integers(100))
    )
    test = paired_speaker_test(result, "higher")
    assert test.df == 2 and test.se == pytest.approx(np.sqrt(2) * np.std(result.replicates, ddof=1))
    assert test.difference == pytest.approx(result.difference)


def test_replicates_left_without_data_are_dropped_without_a_numpy_warning():
    """Issue 23: paired.py printed numpy's raw "All-NaN slice" RuntimeWarning when a resample left every group empty."""
    import warnings

    table = pd.DataFrame(
        {"group": ["a", "a", "b", "b"], "correct": [3, 0, 4, 0], "total": [10, 0, 10, 0]},
        index=["s1", "s2", "s3", "s4"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_speaker_bootstrap(
            table, table.assign(correct=[5, 0, 2, 0]), largest_gap(ratio_per_group(0, 1), scale=100.0), seed=3
        )
    assert 0 < len(result.replicates) < 1000 and np.isfinite(result.replicates).all()


def wer_checkpoint(rng, spread: float, words: np.ndarray, effect: float = 0.0) -> pd.DataFrame:
    """Per speaker (24, alternately f and m): word errors drawn at rate 0.2 * exp(N(0, ``spread``)), times
    exp(``effect``) for group f; ``spread`` is chance variation between speakers, ``effect`` the group's."""
    groups = np.array(["f" if s % 2 == 0 else "m" for s in range(len(words))])
    rate = 0.2 * np.exp(rng.normal(0.0, spread, len(words))) * np.where(groups == "f", np.exp(effect), 1.0)
    errors = rng.binomial(words, np.clip(rate, 0.0, 1.0)).astype(float)
    index = [f"s{s:02d}" for s in range(len(words))]
    return pd.DataFrame({"group": groups, "errors": errors, "words": words.astype(float)}, index=index)


def test_more_spread_between_speakers_is_no_regression_and_a_group_effect_is_one():
    """Issue 45, the WER ratio: a fair candidate whose speakers differ more by chance (spread 0.5 against 0.1) has a
    larger |log WER ratio| with no group effect; beyond the group-exchange null it is judged worse in at most a few
    of 40 pairs, and a group effect (f errs exp(0.4) = 1.5 times as often) is caught in nearly all of 20."""
    from harness.metrics.paired import largest_log_ratio, paired_group_exchange_excess

    def worse(candidate, baseline, seed):
        result = paired_group_exchange_excess(candidate, baseline, largest_log_ratio, n_boot=300, seed=seed)
        return paired_speaker_test(result, "higher").p_worse <= 0.05

    noisy = caught = 0
    for seed in range(40):
        rng = np.random.default_rng([45, seed])
        words = rng.integers(60, 120, 24)
        noisy += worse(wer_checkpoint(rng, 0.5, words), wer_checkpoint(rng, 0.1, words), seed)
        if seed < 20:
            caught += worse(wer_checkpoint(rng, 0.1, words, effect=0.4), wer_checkpoint(rng, 0.1, words), seed)
    assert noisy <= 4, noisy
    assert caught >= 18, caught


def test_the_group_exchange_excess_worked_by_hand_and_against_itself():
    """Two speakers per group, group f's WER 40%, group m's 10%, 100 words each: |log ratio| = log 4. Of the 6
    equally likely label permutations 2 keep the groups (log 4) and 4 mix them (each group 25%: 0), so the null
    expectation is log 4 / 3 and the excess 2 log 4 / 3. Against itself every replicate's difference is 0: not
    estimable, never a regression."""
    from harness.metrics.paired import largest_log_ratio, paired_group_exchange_excess

    table = pd.DataFrame(
        {"group": ["f", "f", "m", "m"], "errors": [40.0, 40.0, 10.0, 10.0], "words": [100.0] * 4},
        index=["a", "b", "c", "d"],
    )
    result = paired_group_exchange_excess(table, table, largest_log_ratio, n_boot=20, n_exchanges=4000, seed=0)
    assert result.candidate == pytest.approx(2 * np.log(4) / 3, abs=0.03)
    assert result.difference == 0.0 and not paired_speaker_test(result, "higher").estimable
