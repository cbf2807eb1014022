"""Statistics at the edges (issue 13, part 8): a group without insertions, singular fits, the vanilla interval
and rows that cannot be fitted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.metrics import score_ratio, wer_model
from harness.metrics.ratio_table import SINGULAR_NOTE
from harness.metrics.simulation import simulate_wer_table
from harness.metrics.wer_ratio import (
    METHOD_NO_SPEAKER,
    METHOD_SEMANTIC,
    METHOD_SPEAKER,
    METHOD_VANILLA,
    judge_score_ratio,
    wer_ratio,
)


@pytest.fixture(scope="module")
def no_insertions_in_f():
    sim = simulate_wer_table(1, n_speakers=10, utterances_per_speaker=20)
    table = sim.table.copy()
    table.loc[table["group"] == "F", "insertions"] = 0
    return table, wer_ratio(table, covariates=["x_difficulty"], numerator="F", n_boot=200)


def test_a_group_without_insertions_still_gets_every_row(no_insertions_in_f):
    table, result = no_insertions_in_f
    methods = result.methods
    assert list(methods.index) == [METHOD_VANILLA, METHOD_NO_SPEAKER, METHOD_SPEAKER, METHOD_SEMANTIC]
    assert methods["converged"].all() and np.isfinite(methods[["ratio", "ci_low", "ci_high"]].to_numpy(float)).all()
    errors = table["insertions"] + table["deletions"] + table["substitutions"]
    wer = errors.groupby(table["group"]).sum() / table["n_ref_words"].groupby(table["group"]).sum()
    assert methods.loc[METHOD_VANILLA, "ratio"] == pytest.approx(wer["F"] / wer["M"], rel=1e-12)
    assert "insertions left out" not in methods.loc[METHOD_VANILLA, "message"]
    for method in (METHOD_NO_SPEAKER, METHOD_SPEAKER, METHOD_SEMANTIC):
        assert "insertions left out: group F has none (perfect separation" in methods.loc[method, "message"]
    # the GLM on the group alone reproduces each group's deletion+substitution proportion
    delsub = (table["deletions"] + table["substitutions"]).groupby(table["group"]).sum()
    rate = delsub / table["n_ref_words"].groupby(table["group"]).sum()
    assert methods.loc[METHOD_NO_SPEAKER, "ratio"] == pytest.approx(rate["F"] / rate["M"], rel=1e-6)
    assert result.fits[METHOD_SPEAKER].kind == "joint-delsub"


def test_the_deletion_substitution_rows_refit_in_the_speaker_bootstrap():
    sim = simulate_wer_table(3, n_speakers=8, utterances_per_speaker=12, n_noise_covariates=0)
    table = sim.table.copy()
    table.loc[table["group"] == "M", "insertions"] = 0
    row = wer_ratio(table, numerator="F", n_boot=100, n_model_boot=6).methods.loc[METHOD_SPEAKER]
    assert row["boot_ci_low"] < row["ratio"] < row["boot_ci_high"]


def test_a_singular_fit_says_so_in_lme4s_words_and_uses_the_glm_df():
    sim = simulate_wer_table(
        2, n_speakers=6, utterances_per_speaker=20, sigma=0.0, confounding=0.0, n_noise_covariates=0
    )
    result = wer_ratio(sim.table, numerator="F", n_boot=100)
    row, fit = result.methods.loc[METHOD_SPEAKER], result.fits[METHOD_SPEAKER]
    assert fit.singular and fit.fit.sigma < 1e-4
    assert row["message"] == f"converged; {SINGULAR_NOTE}" and SINGULAR_NOTE.startswith("boundary (singular) fit")
    assert row["df"] == len(sim.table) - 4  # utterances minus the 2 x 2 fixed effects
    half_width = stats.t.ppf(0.975, row["df"]) * row["se_log_ratio"]
    assert np.log(row["ci_high"] / row["ratio"]) == pytest.approx(half_width, rel=1e-9)
    assert SINGULAR_NOTE not in result.methods.loc[METHOD_NO_SPEAKER, "message"]


def test_a_fit_with_speaker_variance_keeps_the_between_within_interval():
    sim = simulate_wer_table(5, n_speakers=10, utterances_per_speaker=20, sigma=0.5, n_noise_covariates=0)
    row = wer_ratio(sim.table, numerator="F", n_boot=100).methods.loc[METHOD_SPEAKER]
    assert SINGULAR_NOTE not in row["message"] and row["df"] == 8
    half_width = stats.t.ppf(0.975, 8) * row["se_log_ratio"] * np.sqrt(10 / 8)
    assert np.log(row["ci_high"] / row["ratio"]) == pytest.approx(half_width, rel=1e-9)


def test_judge_score_rows_announce_a_singular_fit_the_same_way():
    rng = np.random.default_rng(0)
    speakers = np.repeat(np.arange(8), 10)  # every speaker gives the same ten scores: speaker variance 0
    scores = np.concatenate([rng.permutation([3, 4, 5, 5, 6, 6, 7, 7, 8, 9]) for _ in range(8)]).astype(float)
    table = pd.DataFrame({"speaker": [f"s{k}" for k in speakers], "group": np.where(speakers % 2 == 0, "F", "M"),
                          "score": scores})  # fmt: skip
    methods = judge_score_ratio(table, numerator="F").methods
    assert methods.loc[METHOD_SPEAKER, "message"].endswith(SINGULAR_NOTE)
    assert score_ratio.SINGULAR_NOTE is SINGULAR_NOTE


def test_the_vanilla_interval_is_the_linearised_welch_t_interval():
    table = pd.DataFrame({
        "speaker": ["a", "a", "b", "c", "d", "e", "e"], "group": ["F", "F", "F", "F", "M", "M", "M"],
        "insertions": [1, 0, 2, 0, 1, 0, 1], "deletions": [1, 2, 0, 3, 1, 1, 0], "substitutions": [2, 1, 3, 1, 0, 2, 1],
        "n_ref_words": [10, 12, 9, 15, 11, 8, 14],
    })  # fmt: skip
    row = wer_ratio(table, numerator="F", n_boot=200).methods.loc[METHOD_VANILLA]
    variances, sizes = [], []
    for errors, words in (([7, 5, 4], [22, 9, 15]), ([2, 5], [11, 22])):
        e, w = np.array(errors, float), np.array(words, float)
        rate = e.sum() / w.sum()
        variances.append(len(e) / (len(e) - 1) * np.sum((e - rate * w) ** 2) / e.sum() ** 2)
        sizes.append(len(e))
    total = sum(variances)
    df = total**2 / sum(v**2 / (m - 1) for v, m in zip(variances, sizes))
    ratio = (16 / 46) / (7 / 33)
    assert row["ratio"] == pytest.approx(ratio)
    assert row["df"] == pytest.approx(df) and row["se_log_ratio"] == pytest.approx(np.sqrt(total))
    assert row["ci_low"] == pytest.approx(ratio * np.exp(-stats.t.ppf(0.975, df) * np.sqrt(total)))
    assert row["ci_method"] == "linearised t" and np.isfinite(row["boot_ci_low"])


def test_a_row_whose_model_cannot_be_fitted_leaves_the_others(monkeypatch):
    sim = simulate_wer_table(6, n_speakers=8, utterances_per_speaker=10, n_noise_covariates=0)

    def refuse(*args, **kwargs):
        raise ValueError("X: column 'x_difficulty' is constant")

    monkeypatch.setattr(wer_model, "fit_joint_wer_model", refuse)
    methods = wer_ratio(sim.table, covariates=["x_difficulty"], numerator="F", n_boot=100).methods
    assert methods.loc[[METHOD_VANILLA, METHOD_NO_SPEAKER], "converged"].all()
    for method in (METHOD_SPEAKER, METHOD_SEMANTIC):
        row = methods.loc[method]
        assert not row["converged"] and row["significant"] is None and np.isnan(row["ratio"])
        assert row["message"] == "not fitted: X: column 'x_difficulty' is constant"
