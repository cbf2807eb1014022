"""Expected-WER and judge-score group ratios by method row (harness.metrics.wer_ratio)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import special

from harness.metrics import wer_model
from harness.metrics import wer_ratio as wr
from harness.metrics.glmm import fit_joint_wer_model
from harness.metrics.score_ratio import judge_score_ratio
from harness.metrics.simulation import simulate_wer_table
from harness.metrics.wer_ratio import (
    METHOD_NO_SPEAKER,
    METHOD_SEMANTIC,
    METHOD_SPEAKER,
    METHOD_VANILLA,
    expected_wer,
    wer_ratio,
)


@pytest.fixture(scope="module")
def confounded():
    """§IV in miniature: difficulty confounded with group, no true group effect."""
    return simulate_wer_table(7, n_speakers=30, utterances_per_speaker=30, sigma=0.3, confounding=0.6)


@pytest.fixture(scope="module")
def confounded_result(confounded):
    return wer_ratio(confounded.table, covariates=list(confounded.covariates), numerator="F", denominator="M")


def test_vanilla_ratio_is_the_corpus_wer_ratio_and_the_glm_reproduces_it(confounded, confounded_result):
    table = confounded.table
    errors = table["insertions"] + table["deletions"] + table["substitutions"]
    wer = (errors.groupby(table["group"]).sum() / table["n_ref_words"].groupby(table["group"]).sum()).to_dict()
    methods = confounded_result.methods
    assert methods.loc[METHOD_VANILLA, "ratio"] == pytest.approx(wer["F"] / wer["M"], rel=1e-12)
    assert methods.loc[METHOD_NO_SPEAKER, "ratio"] == pytest.approx(wer["F"] / wer["M"], rel=1e-6)
    vanilla_width = methods.loc[METHOD_VANILLA, "ci_high"] / methods.loc[METHOD_VANILLA, "ci_low"]
    glm_width = methods.loc[METHOD_NO_SPEAKER, "ci_high"] / methods.loc[METHOD_NO_SPEAKER, "ci_low"]
    assert glm_width < vanilla_width


def test_semantic_adjustment_removes_the_spurious_gap(confounded, confounded_result):
    assert confounded.true_ratio == pytest.approx(1.0, abs=1e-12)
    methods = confounded_result.methods
    assert list(methods.index) == [METHOD_VANILLA, METHOD_NO_SPEAKER, METHOD_SPEAKER, METHOD_SEMANTIC]
    assert methods["converged"].all()
    assert methods.loc[METHOD_VANILLA, "significant"] is True
    assert methods.loc[METHOD_VANILLA, "ci_low"] > 1.0
    assert methods.loc[METHOD_SPEAKER, "significant"] is True
    assert methods.loc[METHOD_SEMANTIC, "significant"] is False
    assert methods.loc[METHOD_SEMANTIC, "ci_low"] < 1.0 < methods.loc[METHOD_SEMANTIC, "ci_high"]
    assert confounded_result.n_speakers == 30 and confounded_result.n_utterances == 900


def test_expected_wer_matches_its_formula_by_brute_force(confounded):
    table = confounded.table
    design = pd.DataFrame({"(Intercept)": 1.0, "group[F]": (table["group"] == "F").astype(float)})
    fit = fit_joint_wer_model(
        table["insertions"],
        table["deletions"] + table["substitutions"],
        table["n_ref_words"],
        design,
        table["speaker"],
    )
    words = table["n_ref_words"].to_numpy(float)
    value = expected_wer(fit, design, "group[F]", 1.0, words)
    r = np.random.default_rng(0).normal(0.0, fit.sigma, 400_000)
    ins, dels = fit.coef_insertions, fit.coef_delsub
    eta_ins = ins["(Intercept)"] + ins["group[F]"]
    eta_del = dels["(Intercept)"] + dels["group[F]"]
    monte_carlo = np.exp(eta_ins + r).mean() + special.expit(eta_del + r).mean()
    assert value == pytest.approx(monte_carlo, rel=2e-3)


def test_joint_delta_method_carries_the_shared_speaker_covariance():
    sim = simulate_wer_table(3, n_speakers=40, utterances_per_speaker=40, sigma=0.6, n_noise_covariates=1)
    joint = wer_ratio(sim.table, covariates=list(sim.covariates), n_boot=0, numerator="F")
    separate = wer_ratio(sim.table, covariates=list(sim.covariates), n_boot=0, numerator="F", speaker_model="separate")
    for method in (METHOD_SPEAKER, METHOD_SEMANTIC):
        assert joint.methods.loc[method, "se_log_ratio"] > 1.1 * separate.methods.loc[method, "se_log_ratio"]
    fit = joint.fits[METHOD_SEMANTIC].fit
    assert fit.cov.loc["ins:group[F]", "delsub:group[F]"] > 0


def test_model_rows_can_carry_a_speaker_bootstrap_interval():
    sim = simulate_wer_table(4, n_speakers=12, utterances_per_speaker=15, sigma=0.3, n_noise_covariates=0)
    result = wer_ratio(sim.table, covariates=["x_difficulty"], n_boot=200, n_model_boot=8, numerator="F")
    row = result.methods.loc[METHOD_SEMANTIC]
    assert row["boot_ci_low"] < row["ratio"] < row["boot_ci_high"]
    vanilla = result.methods.loc[
        METHOD_VANILLA
    ]  # its interval is the linearised t; the percentile bootstrap stays beside it
    assert (
        vanilla["ci_method"] == "linearised t" and vanilla["boot_ci_low"] < vanilla["ratio"] < vanilla["boot_ci_high"]
    )


def test_a_non_converged_fit_is_flagged_and_never_called_significant(confounded, monkeypatch):
    original = wer_model.fit_joint_wer_model

    def failing(*args, **kwargs):
        return dataclasses.replace(original(*args, **kwargs), converged=False, message="did not converge")

    monkeypatch.setattr(wer_model, "fit_joint_wer_model", failing)
    result = wer_ratio(confounded.table, covariates=list(confounded.covariates), n_boot=50, numerator="F")
    for method in (METHOD_SPEAKER, METHOD_SEMANTIC):
        assert not result.methods.loc[method, "converged"]
        assert result.methods.loc[method, "significant"] is None
        assert result.methods.loc[method, "message"] == "did not converge"
    assert result.methods.loc[METHOD_VANILLA, "significant"] is not None


def test_covariate_sets_give_one_semantic_row_each(confounded):
    result = wer_ratio(
        confounded.table,
        covariates={"Embed-AGG": ["x_difficulty", "x_noise1"], "Embed-EOWL": ["x_difficulty"]},
        n_boot=50,
    )
    assert f"{METHOD_SEMANTIC}: Embed-AGG" in result.methods.index
    assert f"{METHOD_SEMANTIC}: Embed-EOWL" in result.methods.index
    assert (result.numerator, result.denominator) == ("F", "M")


def test_empty_references_are_dropped_with_a_count(confounded):
    table = confounded.table.copy()
    table.loc[:4, ["n_ref_words", "deletions", "substitutions"]] = 0
    with pytest.warns(UserWarning, match="dropped 5 utterances with n_ref_words = 0"):
        result = wer_ratio(table, n_boot=20)
    assert result.n_dropped_empty_reference == 5
    assert result.n_utterances == len(table) - 5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.drop(columns=["substitutions"]), r"lacks column\(s\) \['substitutions'\]"),
        (lambda t: t.assign(group=np.where(np.arange(len(t)) % 3 == 0, "X", t["group"])), "exactly two levels"),
        (lambda t: t.assign(deletions=t["n_ref_words"] + 1), "exceed n_ref_words"),
        (lambda t: t.assign(x_noise1=np.where(np.arange(len(t)) == 0, np.nan, t["x_noise1"])), "'x_noise1' has 1 NaN"),
        (lambda t: t.assign(insertions=-t["insertions"] - 1), "'insertions' has 900 negative"),
        (lambda t: t.assign(insertions=t["insertions"] + 0.5), "'insertions' must hold integer counts"),
    ],
)
def test_bad_tables_raise(confounded, mutate, message):
    with pytest.raises(ValueError, match=message):
        wer_ratio(mutate(confounded.table), covariates=["x_noise1"], n_boot=10)


def test_numerator_must_be_a_level(confounded):
    with pytest.raises(ValueError, match="do not match levels"):
        wer_ratio(confounded.table, numerator="female", n_boot=10)
    with pytest.raises(ValueError, match="not a string"):
        wer_ratio(confounded.table, covariates="x_noise1", n_boot=10)


# ------------------------------------------------------------------------------------- judge scores


def judge_simulation(seed: int, with_speakers: bool) -> pd.DataFrame:
    """Paper §IV-A: 800 simple + 200 hard questions voiced by M, 200 + 800 by F; score N(6,1) simple,
    N(5,1) hard; embedding-like covariates separate the two sets."""
    rng = np.random.default_rng(seed)
    hard = np.r_[np.zeros(800), np.ones(200), np.zeros(200), np.ones(800)]
    group = np.r_[np.full(1000, "M"), np.full(1000, "F")]
    score = rng.normal(6.0 - hard, 1.0)
    table = pd.DataFrame({"group": group, "score": score})
    table["pc1"] = hard + rng.normal(0, 0.05, 2000)
    for k in range(2, 9):
        table[f"pc{k}"] = rng.normal(size=2000)
    if with_speakers:
        table["speaker"] = np.r_[np.repeat(np.arange(20), 50), np.repeat(np.arange(20, 40), 50)]
    return table


@pytest.mark.parametrize("with_speakers", [False, True])
def test_judge_scores_vanilla_is_spurious_and_semantic_adjustment_is_not(with_speakers):
    table = judge_simulation(1, with_speakers)
    result = judge_score_ratio(
        table, covariates=[f"pc{k}" for k in range(1, 9)], numerator="M", denominator="F", n_boot=300
    )
    methods = result.methods
    assert methods.loc[METHOD_VANILLA, "ratio"] == pytest.approx(1.124, abs=0.03)
    assert methods.loc[METHOD_VANILLA, "significant"] is True
    assert methods.loc[METHOD_NO_SPEAKER, "ratio"] == pytest.approx(methods.loc[METHOD_VANILLA, "ratio"], rel=1e-9)
    semantic = wr.METHOD_SEMANTIC if with_speakers else wr.METHOD_NO_SPEAKER_SEMANTIC
    assert methods.loc[semantic, "significant"] is False
    assert methods.loc[semantic, "ratio"] == pytest.approx(1.0, abs=0.03)
    assert (METHOD_SPEAKER in methods.index) is with_speakers
    assert result.n_speakers == (40 if with_speakers else None)


@pytest.mark.slow
def test_delta_interval_coverage_on_simulated_data():
    covered = []
    for seed in range(60):
        sim = simulate_wer_table(
            1000 + seed,
            n_speakers=40,
            utterances_per_speaker=40,
            sigma=0.5,
            group_effect_insertions=0.1,
            group_effect_delsub=0.2,
            n_noise_covariates=1,
        )
        result = wer_ratio(sim.table, covariates=list(sim.covariates), n_boot=0, numerator="F")
        row = result.methods.loc[METHOD_SEMANTIC]
        covered.append(row["ci_low"] <= sim.true_ratio <= row["ci_high"])
    assert np.mean(covered) >= 0.85
