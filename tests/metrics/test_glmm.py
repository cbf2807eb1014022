"""Random-intercept GLMM by adaptive Gauss-Hermite quadrature (harness.metrics.glmm)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

from harness.metrics.glmm import (
    fit_joint_wer_model,
    fit_linear_mixed,
    fit_random_intercept,
    likelihood,
    marginal_loglik,
    optimiser,
)

REFERENCE_DIR = Path(__file__).parents[1] / "support" / "reference" / "lme4"
COLUMNS = ["(Intercept)", "genderM"] + [f"x{k}" for k in range(1, 9)]


@pytest.fixture(scope="module")
def librispeech_like() -> pd.DataFrame:
    return pd.read_csv(REFERENCE_DIR / "librispeech_like.csv.gz")


@pytest.fixture(scope="module")
def lme4_reference() -> dict:
    return json.loads((REFERENCE_DIR / "reference.json").read_text())["fits"]


def reference_design(table: pd.DataFrame) -> np.ndarray:
    columns = [np.ones(len(table)), (table["gender"] == "M").to_numpy(float)]
    columns += [table[f"x{k}"].to_numpy(float) for k in range(1, 9)]
    return np.column_stack(columns)


def fit_reference(table: pd.DataFrame, family: str, nagq: int):
    design = reference_design(table)
    if family == "poisson":
        return fit_random_intercept(
            table["insertions"],
            design,
            table["speaker"],
            "poisson",
            offset=np.log(table["n_ref_words"]),
            nagq=nagq,
            column_names=COLUMNS,
        )
    return fit_random_intercept(
        table["deletions"] + table["substitutions"],
        design,
        table["speaker"],
        "binomial",
        trials=table["n_ref_words"],
        nagq=nagq,
        column_names=COLUMNS,
    )


def simulate(rng, n_clusters=40, per_cluster=30, sigma=0.5, beta=(-3.0, 0.4, 0.3), family="binomial"):
    cluster = np.repeat(np.arange(n_clusters), per_cluster)
    n = cluster.size
    design = np.column_stack([np.ones(n), (cluster % 2).astype(float), rng.normal(size=n)])
    trials = rng.integers(5, 40, n)
    eta = design @ np.asarray(beta) + rng.normal(0, sigma, n_clusters)[cluster]
    if family == "binomial":
        y = rng.binomial(trials, special.expit(eta))
    else:
        y = rng.poisson(trials * np.exp(eta))
    return y, design, cluster, trials


# ---------------------------------------------------------------------------------------------- lme4


@pytest.mark.parametrize("key", ["poisson_nagq1", "poisson_nagq10", "binomial_nagq1", "binomial_nagq10"])
def test_matches_lme4_to_1e_4(librispeech_like, lme4_reference, key):
    ref = lme4_reference[key]
    fit = fit_reference(librispeech_like, ref["family"], ref["nagq"])
    assert fit.converged, fit.message
    np.testing.assert_allclose(fit.coef[COLUMNS], pd.Series(ref["coef"])[COLUMNS], atol=1e-4, rtol=0)
    np.testing.assert_allclose(fit.se[COLUMNS], pd.Series(ref["se"])[COLUMNS], atol=1e-4, rtol=0)
    assert fit.sigma == pytest.approx(ref["sigma"], abs=1e-4)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-4)
    assert (fit.n_clusters, fit.n_obs) == (40, 2620)


@pytest.mark.parametrize("family", ["poisson", "binomial"])
def test_agq_loglik_is_full_loglik_and_lme4_reports_it_shifted(lme4_reference, family):
    ref = lme4_reference[f"{family}_nagq10"]
    assert ref["loglik"] == pytest.approx(ref["loglik_reported"] + ref["loglik_saturated"], abs=1e-9)
    assert ref["loglik"] == pytest.approx(ref["loglik_integrate"], abs=1e-5)
    assert abs(ref["loglik_reported"] - ref["loglik_integrate"]) > 100


def test_laplace_and_agq10_agree_closely_but_not_exactly(librispeech_like):
    laplace = fit_reference(librispeech_like, "binomial", 1)
    agq = fit_reference(librispeech_like, "binomial", 10)
    assert np.max(np.abs(laplace.coef - agq.coef) / agq.se) < 0.05
    assert laplace.sigma == pytest.approx(agq.sigma, rel=0.01)
    assert 1e-4 < abs(laplace.loglik - agq.loglik) < 0.5


# --------------------------------------------------------------------------------- exact likelihood


def tiny_case():
    y = np.array([0, 2, 1, 3, 0, 0, 1, 5, 4, 2])
    trials = np.array([5, 6, 4, 8, 3, 7, 5, 9, 8, 6])
    cluster = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 2])
    design = np.column_stack([np.ones(10), np.linspace(-1, 1, 10)])
    return y, trials, cluster, design


def quad_loglik(y, design, cluster, beta, sigma, row_logpmf):
    total = 0.0
    for c in np.unique(cluster):
        rows = cluster == c
        eta = design[rows] @ beta

        def integrand(b, rows=rows, eta=eta):
            return np.exp(np.sum(row_logpmf(y[rows], eta + b, rows)) + stats.norm.logpdf(b, 0, sigma))

        total += np.log(integrate.quad(integrand, -12 * sigma, 12 * sigma, epsabs=0, epsrel=1e-12, limit=200)[0])
    return total


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_loglik_matches_numerical_integration(family):
    y, trials, cluster, design = tiny_case()
    beta, sigma = np.array([-1.0, 0.5]), 0.8
    if family == "binomial":

        def row_logpmf(yy, eta, rows):
            return stats.binom.logpmf(yy, trials[rows], special.expit(eta))

        kwargs = {"trials": trials}
    else:
        offset = np.log(trials)

        def row_logpmf(yy, eta, rows):
            return stats.poisson.logpmf(yy, np.exp(eta + offset[rows]))

        kwargs = {"offset": offset}
    exact = quad_loglik(y, design, cluster, beta, sigma, row_logpmf)
    agq = marginal_loglik(y, design, cluster, family, beta, sigma, nagq=25, **kwargs)
    laplace = marginal_loglik(y, design, cluster, family, beta, sigma, nagq=1, **kwargs)
    assert agq == pytest.approx(exact, abs=1e-8)
    assert abs(laplace - exact) > 1e-5
    assert laplace == pytest.approx(exact, abs=0.1)


def test_joint_loglik_matches_numerical_integration_of_the_product():
    y, trials, cluster, design = tiny_case()
    insertions = np.array([1, 0, 0, 2, 0, 1, 0, 3, 1, 1])
    fit = fit_joint_wer_model(insertions, y, trials, design, cluster, nagq=25, estimate_loading=True)
    ins, dels = fit.coef_insertions.to_numpy(), fit.coef_delsub.to_numpy()
    total = 0.0
    for c in np.unique(cluster):
        rows = cluster == c

        def integrand(b, rows=rows):
            rate = trials[rows] * np.exp(design[rows] @ ins + fit.loading * b)
            log_ins = stats.poisson.logpmf(insertions[rows], rate)
            log_del = stats.binom.logpmf(y[rows], trials[rows], special.expit(design[rows] @ dels + b))
            return np.exp(log_ins.sum() + log_del.sum() + stats.norm.logpdf(b, 0, fit.sigma))

        total += np.log(integrate.quad(integrand, -12 * fit.sigma, 12 * fit.sigma, epsrel=1e-12, limit=200)[0])
    assert fit.loglik == pytest.approx(total, abs=1e-7)


@pytest.mark.parametrize("nagq", [1, 7])
@pytest.mark.parametrize("estimate_loading", [False, True])
def test_gradient_is_exact_derivative_of_the_quadrature(nagq, estimate_loading):
    rng = np.random.default_rng(3)
    y, design, cluster, trials = simulate(rng, n_clusters=8, per_cluster=10)
    insertions = rng.poisson(trials * 0.02)
    n = y.size
    problem = likelihood._Problem.build(
        y=np.r_[insertions, y].astype(float),
        trials=np.r_[np.zeros(n), trials].astype(float),
        is_binomial=np.r_[np.zeros(n, bool), np.ones(n, bool)],
        offset=np.r_[np.log(trials), np.zeros(n)],
        design=np.block([[design, 0 * design], [0 * design, design]]),
        cluster=np.r_[cluster, cluster],
        loaded=np.r_[np.ones(n, bool), np.zeros(n, bool)],
    )
    evaluator = likelihood._Evaluator(problem, nagq, estimate_loading)
    theta = np.r_[-3.5, 0.2, 0.1, -3.0, 0.3, 0.2, 0.6, 0.7][: 8 if estimate_loading else 7]
    gradient = evaluator.loglik_and_gradient(theta)[1]
    numeric = np.zeros_like(theta)
    for k in range(theta.size):
        step = np.zeros_like(theta)
        step[k] = 1e-6
        forward = evaluator.loglik_and_gradient(theta + step, False)[0]
        backward = evaluator.loglik_and_gradient(theta - step, False)[0]
        numeric[k] = (forward - backward) / 2e-6
    np.testing.assert_allclose(gradient, numeric, atol=2e-6, rtol=1e-6)


# ------------------------------------------------------------------------------------------ recovery


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_recovers_known_parameters(family):
    rng = np.random.default_rng(11)
    beta = (-3.0, 0.4, 0.3)
    y, design, cluster, trials = simulate(rng, n_clusters=80, per_cluster=30, sigma=0.5, beta=beta, family=family)
    kwargs = {"trials": trials} if family == "binomial" else {"offset": np.log(trials)}
    fit = fit_random_intercept(y, design, cluster, family, **kwargs)
    assert fit.converged
    assert np.all(np.abs(fit.coef.to_numpy() - beta) < 3 * fit.se.to_numpy())
    assert fit.sigma == pytest.approx(0.5, abs=0.15)
    assert list(fit.coef.index) == ["x0", "x1", "x2"]
    assert fit.random_effects.size == 80


def test_joint_fit_recovers_shared_intercept_and_loading():
    rng = np.random.default_rng(5)
    n_clusters, per = 80, 40
    cluster = np.repeat(np.arange(n_clusters), per)
    n = cluster.size
    design = np.column_stack([np.ones(n), (cluster % 2).astype(float), rng.normal(size=n)])
    words = rng.integers(5, 40, n)
    r = rng.normal(0, 0.6, n_clusters)[cluster]
    insertions = rng.poisson(words * np.exp(design @ [-4.0, 0.2, 0.2] + 0.5 * r))
    delsub = rng.binomial(words, special.expit(design @ [-3.0, -0.2, 0.3] + r))
    fit = fit_joint_wer_model(insertions, delsub, words, design, cluster, estimate_loading=True)
    assert fit.converged, fit.message
    assert fit.sigma == pytest.approx(0.6, abs=0.15)
    assert abs(fit.loading - 0.5) < 3 * np.sqrt(fit.cov.loc["loading", "loading"])
    np.testing.assert_array_less(np.abs(fit.coef_delsub.to_numpy() - [-3.0, -0.2, 0.3]), 3 * fit.se_delsub.to_numpy())
    fixed = fit_joint_wer_model(insertions, delsub, words, design, cluster)
    assert fixed.loading == 1.0 and not fixed.loading_estimated
    assert fit.loglik >= fixed.loglik - 1e-8
    assert fit.cov.loc["ins:x1", "delsub:x1"] > 0


def test_speaker_variance_at_zero_is_a_converged_singular_fit():
    rng = np.random.default_rng(2)
    y, design, cluster, trials = simulate(rng, n_clusters=30, per_cluster=20, sigma=0.0)
    fit = fit_random_intercept(y, design, cluster, "binomial", trials=trials)
    assert fit.converged, fit.message
    assert fit.sigma < 0.1
    assert np.all(np.isfinite(fit.se))


def test_quasi_separation_by_a_continuous_covariate_is_flagged_not_used():
    rng = np.random.default_rng(8)
    cluster = np.repeat(np.arange(10), 20)
    x = rng.normal(size=200)
    trials = np.full(200, 10)
    y = np.where(x > 0, trials, 0)
    fit = fit_random_intercept(y, np.column_stack([np.ones(200), x]), cluster, "binomial", trials=trials)
    assert not fit.converged
    assert "fixed effects ['x1'] are not finite or exceed 50 per RMS unit" in fit.message


# --------------------------------------------------------------------------------------- bad inputs


@pytest.fixture()
def small():
    rng = np.random.default_rng(0)
    return simulate(rng, n_clusters=10, per_cluster=10)


def test_nan_in_design_names_the_column(small):
    y, design, cluster, trials = small
    design = design.copy()
    design[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"X has 1 NaN/inf values \(columns \['dur'\]\)"):
        fit_random_intercept(y, design, cluster, "binomial", trials=trials, column_names=["a", "b", "dur"])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda y, t: (np.r_[-1, y[1:]], t), "y has 1 negative values"),
        (lambda y, t: (y + 0.5, t), "y must hold integer counts"),
        (lambda y, t: (y, t - 50), "trials has"),
        (lambda y, t: (t + 1, t), "y exceeds trials in"),
        (lambda y, t: (y[:-1], t), "y has length 99 but the design has 100 rows"),
        (lambda y, t: (np.r_[np.nan, y[1:]], t), "y has 1 NaN/inf values"),
    ],
)
def test_bad_counts_raise(small, mutate, message):
    y, design, cluster, trials = small
    y, trials = mutate(y.astype(float), trials.astype(float))
    with pytest.raises(ValueError, match=message):
        fit_random_intercept(y, design, cluster, "binomial", trials=trials)


def test_length_mismatch_of_cluster_and_offset(small):
    y, design, cluster, trials = small
    with pytest.raises(ValueError, match="cluster has length 99"):
        fit_random_intercept(y, design, cluster[:-1], "binomial", trials=trials)
    with pytest.raises(ValueError, match="offset has length 3"):
        fit_random_intercept(y, design, cluster, "poisson", offset=np.zeros(3))


def test_family_arguments_are_checked(small):
    y, design, cluster, trials = small
    with pytest.raises(ValueError, match="needs trials"):
        fit_random_intercept(y, design, cluster, "binomial")
    with pytest.raises(ValueError, match="trials is only used with family='binomial'"):
        fit_random_intercept(y, design, cluster, "poisson", trials=trials)
    with pytest.raises(ValueError, match="family must be"):
        fit_random_intercept(y, design, cluster, "gaussian", trials=trials)
    with pytest.raises(ValueError, match="nagq must be"):
        fit_random_intercept(y, design, cluster, "binomial", trials=trials, nagq=0)
    with pytest.raises(ValueError, match="at least two clusters"):
        fit_random_intercept(y, design, np.zeros_like(cluster), "binomial", trials=trials)


def test_rank_deficient_design_names_the_collinear_columns(small):
    y, design, cluster, trials = small
    x = np.column_stack([design, design[:, 2] * 2.0 + design[:, 1]])
    with pytest.raises(ValueError, match=r"rank 3 of 4\); collinear columns: \['gender', 'len', 'len2'\]"):
        fit_random_intercept(
            y, x, cluster, "binomial", trials=trials, column_names=["(Intercept)", "gender", "len", "len2"]
        )
    dummies = np.column_stack([design, 1.0 - design[:, 1]])
    with pytest.raises(ValueError, match=r"collinear columns: \['(\(Intercept\))', 'F', 'M'\]"):
        fit_random_intercept(
            y, dummies, cluster, "binomial", trials=trials, column_names=["(Intercept)", "F", "x", "M"]
        )


def test_group_level_without_errors_is_perfect_separation(small):
    y, design, cluster, trials = small
    y = np.where(design[:, 1] == 1, 0, y)
    with pytest.raises(ValueError, match=r"no events in the 50 rows where 'genderM' = 1.*perfect separation"):
        fit_random_intercept(
            y, design, cluster, "binomial", trials=trials, column_names=["(Intercept)", "genderM", "x"]
        )
    with pytest.raises(ValueError, match="the outcome is zero in every row"):
        fit_random_intercept(np.zeros_like(y), design, cluster, "poisson", offset=np.log(trials))


def test_zero_trial_rows_are_dropped_with_a_count(small):
    y, design, cluster, trials = small
    trials, y = trials.copy(), y.copy()
    trials[:3], y[:3] = 0, 0
    with pytest.warns(UserWarning, match="dropped 3 rows with N = 0"):
        fit = fit_random_intercept(y, design, cluster, "binomial", trials=trials)
    assert fit.n_dropped_zero_trials == 3
    assert fit.n_obs == y.size - 3


def test_singleton_clusters_are_counted_silently_and_all_singletons_warn(small):
    y, design, cluster, trials = small
    cluster = cluster.copy()
    cluster[:2] = [100, 101]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_random_intercept(y, design, cluster, "binomial", trials=trials)
    assert fit.n_singleton_clusters == 2
    with pytest.warns(UserWarning, match="every cluster has a single observation"):
        fit_random_intercept(y, design, np.arange(y.size), "binomial", trials=trials)


def test_joint_model_input_checks(small):
    y, design, cluster, trials = small
    with pytest.raises(ValueError, match="delsub exceeds n_words"):
        fit_joint_wer_model(y, trials + 1, trials, design, cluster)
    with pytest.raises(ValueError, match="X_delsub has 5 rows"):
        fit_joint_wer_model(y, y, trials, design, cluster, X_delsub=design[:5])
    words = trials.copy()
    words[0] = 0
    with pytest.warns(UserWarning, match="dropped 1 rows with N = 0"):
        fit = fit_joint_wer_model(np.r_[0, y[1:]], np.r_[0, y[1:]] // 2, words, design, cluster)
    assert fit.n_dropped_zero_trials == 1 and fit.n_obs == y.size - 1


# ----------------------------------------------------------------------------------- linear mixed model


@pytest.mark.parametrize("speaker_sd", [0.0, 0.5])
def test_linear_mixed_matches_statsmodels_reml(speaker_sd):
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    cluster = np.repeat(np.arange(30), 20)
    design = np.column_stack([np.ones(600), (cluster % 2).astype(float), rng.normal(size=600)])
    y = design @ [5.0, 0.3, -0.4] + rng.normal(0, speaker_sd, 30)[cluster] + rng.normal(size=600)
    fit = fit_linear_mixed(y, design, cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = sm.MixedLM(y, design, groups=cluster).fit(reml=True, method="nm", maxiter=20000)
    assert fit.converged
    assert fit.loglik >= reference.llf - 1e-6
    np.testing.assert_allclose(fit.coef, reference.fe_params, atol=1e-4)
    assert fit.sigma_residual == pytest.approx(np.sqrt(reference.scale), abs=1e-3)
    if speaker_sd == 0.0:
        ols = sm.OLS(y, design).fit()
        if fit.singular:
            np.testing.assert_allclose(fit.coef, ols.params, atol=1e-10)
    else:
        assert fit.sigma_cluster == pytest.approx(speaker_sd, abs=0.2)


def test_extreme_line_search_points_are_infeasible_not_fatal():
    rng = np.random.default_rng(9)
    y, design, cluster, trials = simulate(rng, n_clusters=10, per_cluster=20, family="poisson")
    problem = likelihood._Problem.build(
        y=y.astype(float),
        trials=np.zeros(y.size),
        is_binomial=np.zeros(y.size, bool),
        offset=np.log(trials),
        design=design,
        cluster=cluster,
        loaded=np.zeros(y.size, bool),
    )
    evaluator = likelihood._Evaluator(problem, 10, estimate_loading=False)
    for theta in ([400.0, 0.0, 0.0, 50.0], [-30.0, 60.0, -40.0, 5.0], [0.0, 0.0, 900.0, 0.5]):
        value, gradient = evaluator.loglik_and_gradient(np.array(theta))
        assert value == -np.inf or np.isfinite(value)
    reference = optimiser._maximise(problem, nagq=10, estimate_loading=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_far = optimiser._maximise(problem, nagq=10, estimate_loading=False, start=np.array([20.0, 0.0, 0.0, 5.0]))
    assert from_far.converged
    np.testing.assert_allclose(from_far.theta, reference.theta, atol=1e-6)


# ------------------------------------------------------------------------------ shared result interface


def test_results_share_params_bse_conf_int_and_summary():
    from harness.metrics.glmm import GLMMFit, MixedModelResult

    rng = np.random.default_rng(6)
    y, design, cluster, trials = simulate(rng, n_clusters=12, per_cluster=15, family="binomial")
    one = fit_random_intercept(y, design, cluster, "binomial", trials=trials, nagq=3)
    joint = fit_joint_wer_model(rng.poisson(0.05 * trials), y, trials, design, cluster, nagq=3, estimate_loading=True)
    linear = fit_linear_mixed(np.log1p(y), design, cluster)
    assert isinstance(one, GLMMFit) and isinstance(joint, GLMMFit) and isinstance(linear, MixedModelResult)

    assert list(one.params.index) == ["x0", "x1", "x2", "sigma"] and one.params["sigma"] == one.sigma
    assert list(joint.params.index[-2:]) == ["sigma", "loading"] and joint.params["loading"] == joint.loading
    assert list(linear.params.index[-2:]) == ["sigma_cluster", "sigma_residual"]
    for fit in (one, joint, linear):
        np.testing.assert_array_equal(fit.params[fit.coef.index], fit.coef)
        np.testing.assert_array_equal(fit.bse[fit.coef.index], fit.se)
        z = stats.norm.ppf(0.95)
        np.testing.assert_allclose(fit.conf_int(0.1)["low"], fit.coef - z * fit.se)
        table = fit.summary(0.1)
        assert list(table.index) == list(fit.params.index)
        assert list(table.columns) == ["estimate", "se", "z", "p", "ci_low", "ci_high"]
        np.testing.assert_allclose(table.loc[fit.coef.index, "z"], fit.coef / fit.se)
        np.testing.assert_allclose(table.loc[fit.coef.index, "p"], 2 * stats.norm.sf(np.abs(fit.coef / fit.se)))
        np.testing.assert_allclose(table.loc[fit.coef.index, "ci_high"], fit.coef + z * fit.se)
        variance = [name for name in fit.params.index if name not in fit.coef.index]
        assert table.loc[variance, ["z", "p", "ci_low", "ci_high"]].isna().all().all()
        assert table.attrs["loglik"] == fit.loglik and table.attrs["n_clusters"] == 12
    assert one.bse["sigma"] == pytest.approx(np.sqrt(one.cov.loc["sigma", "sigma"]))
    assert linear.bse[["sigma_cluster", "sigma_residual"]].isna().all()
