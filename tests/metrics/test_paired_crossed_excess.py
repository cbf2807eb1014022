"""The BASIS checks' release comparison beyond the group-exchange null (issue 45,
harness.metrics.paired.paired_crossed_excess): hand-computed excesses, exchanges kept within blocks of items, and
on simulated runs a fair sampling candidate is rarely judged worse than a fair greedy baseline while a grown gap is
caught."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.metrics.paired import paired_crossed_excess


def cells(values: dict[str, list[float]], items: list[str] | None = None) -> pd.DataFrame:
    """(speaker, item) cells from ``speaker -> values per item``; a speaker's group is its name's first letter."""
    rows = []
    for speaker, answers in values.items():
        for k, value in enumerate(answers):
            item = items[k] if items else f"item{k}"
            rows.append((speaker, speaker[0], item, 1.0, value))
    return pd.DataFrame(rows, columns=["speaker", "group", "item", "weight", "value"])


def test_the_excess_is_the_gap_less_its_mean_over_label_exchanges():
    """By hand: speaker totals f0 200, f1 100, m0 0, m1 100 over 2 items: f 75, m 25, gap 50. A balanced exchange
    puts one f and one m speaker in each group: {f0, m0} | {f1, m1} (gap 0) or {f0, m1} | {f1, m0} (gap 50), equally
    often, so the exchange mean is 25 and the excess 25. The baseline answers alike for every speaker: gap 0 under
    every exchange, excess 0."""
    candidate = cells({"f0": [100, 100], "f1": [100, 0], "m0": [0, 0], "m1": [100, 0]})
    baseline = cells({"f0": [100, 0], "f1": [100, 0], "m0": [100, 0], "m1": [100, 0]})
    test = paired_crossed_excess(candidate, baseline, seed=0, n_boot=20, n_exchanges=10000)
    assert test.baseline == 0.0
    assert test.candidate == pytest.approx(50.0 - 25.0, abs=1.0)
    assert test.difference == pytest.approx(test.candidate)
    assert test.resampled == "speakers" and test.df == 2  # sum over groups of (2 - 1)
    assert test.estimable and test.se > 0


def test_the_first_groups_value_column_is_used_for_each_pair():
    """ICAT's value:<g>: the pair (f, m) compares value:f, which splits the groups (100 against 0), while value:m
    does not. A systematic gap stays whole: every balanced exchange mixes one f and one m speaker per group (gap 0),
    so the excess is the full 100."""
    base = cells({"f0": [100, 100], "f1": [100, 100], "m0": [0, 0], "m1": [0, 0]})
    table = base.rename(columns={"value": "value:f"}).assign(**{"value:m": 50.0})
    test = paired_crossed_excess(table, table.assign(**{"value:f": 50.0}), seed=1, n_boot=20, n_exchanges=200)
    assert test.candidate == pytest.approx(100.0) and test.baseline == 0.0


def test_exchanges_stay_within_blocks_of_items():
    """Two item sets, each read by its own 2 + 2 speakers; set B's items are always answered right, set A's never,
    except by speaker fa0 in the candidate. By hand: f 600/8 = 75, m 400/8 = 50, gap 25; a balanced exchange within
    blocks gives each group one f and one m speaker of each block, so one group holds fa0: gap 25 in every exchange
    and the excess is 0 (one speaker's deviation is no systematic effect). Exchanges across blocks could put three of
    set B's speakers in one group, gaps up to 50."""
    set_a = cells({"fa0": [0, 0], "fa1": [0, 0], "ma0": [0, 0], "ma1": [0, 0]}, items=["a0", "a1"])
    set_b = cells({"fb0": [100, 100], "fb1": [100, 100], "mb0": [100, 100], "mb1": [100, 100]}, items=["b0", "b1"])
    run = pd.concat([set_a, set_b], ignore_index=True)
    noisy = run.assign(value=np.where(run["speaker"] == "fa0", 100.0, run["value"]))
    test = paired_crossed_excess(noisy, run, seed=2, n_boot=200)
    assert test.baseline == 0.0 and test.candidate == pytest.approx(0.0, abs=1e-9)


def test_a_lone_speaker_of_a_group_is_not_estimable():
    run = cells({"f0": [100, 0], "f1": [0, 100], "m0": [100, 100]})
    test = paired_crossed_excess(run, run.assign(value=50.0), seed=0, n_boot=50)
    assert not test.estimable and "single speaker" in test.reason


def test_runs_on_different_cells_are_refused():
    run = cells({"f0": [100, 0], "f1": [0, 100], "m0": [100, 100], "m1": [0, 0]})
    with pytest.raises(ValueError, match="different"):
        paired_crossed_excess(run, run[run["item"] != "item0"], seed=0)


def simulated_run(rng, item_logits, kind: str, effect: float = 0.0, speakers: int = 8) -> pd.DataFrame:
    """``steady``: every speaker answers an item alike (right when its logit is positive); ``noisy``: each answer
    drawn with P = logistic(item logit); ``grown``: noisy with group m's logit lowered by ``effect``."""
    rows = []
    for group in ("f", "m"):
        for s in range(speakers):
            for i, logit in enumerate(item_logits):
                shifted = logit - (effect if kind == "grown" and group == "m" else 0.0)
                right = logit > 0 if kind == "steady" else rng.random() < 1.0 / (1.0 + np.exp(-shifted))
                rows.append((f"{group}{s}", group, f"item{i}", 1.0, 100.0 * right))
    return pd.DataFrame(rows, columns=["speaker", "group", "item", "weight", "value"])


def test_a_sampling_candidate_is_rarely_worse_and_a_grown_gap_is_caught():
    """Known truth, 20 simulated pairs of 8 speakers per group x 12 items: a fair sampling candidate against a fair
    greedy baseline (its raw gap is larger by chance alone) is judged worse at one-sided 0.05 in at most 2 (the
    benchmark's 200 pairs: benchmarks/bench_release_noise.py), a gap grown by 2.5 logits (about 45 points) in at
    least 19."""
    rng = np.random.default_rng(11)
    noise_worse = grown_worse = 0
    for pair in range(20):
        item_logits = rng.normal(0.5, 1.0, 12)
        baseline = simulated_run(rng, item_logits, "steady")
        noisy = paired_crossed_excess(simulated_run(rng, item_logits, "noisy"), baseline, seed=pair, n_boot=100)
        grown = paired_crossed_excess(simulated_run(rng, item_logits, "grown", 2.5), baseline, seed=pair, n_boot=100)
        noise_worse += noisy.estimable and noisy.p_worse <= 0.05
        grown_worse += grown.estimable and grown.p_worse <= 0.05
    assert noise_worse <= 2
    assert grown_worse >= 19
