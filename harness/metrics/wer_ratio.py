"""Group ratios of expected WER and of judge scores, by the method rows of the paper's tables (§III-V).

Expected WER (paper §III-A, eq. 1-5). With the fitted insertion (Poisson, offset ``log N``) and
deletion+substitution (Binomial(N)) components and speaker intercept ``r ~ N(0, sigma^2)``, the
population-average expected WER of group level ``g`` is standardised over the pooled utterances ``j`` of
both groups (their covariates ``x_j`` and lengths ``N_j``, with the group indicator set to ``g``)::

    WER_g = sum_j N_j ( exp(x_j(g)' theta_ins + s_ins^2 / 2) + E_z[expit(x_j(g)' theta_del + s_del z)] )
            / sum_j N_j,                                                        z ~ N(0, 1)

where ``s_ins = loading * sigma`` and ``s_del = sigma`` for the joint fit (``sigma_ins``, ``sigma_del`` for
separate fits, 0 for a GLM). The Poisson term is closed-form; the Binomial one uses 40-point
Gauss-Hermite quadrature. The fairness estimate is ``R = WER_numerator / WER_denominator`` with the
delta-method standard error ``se^2 = grad(log R)' V grad(log R)`` over all parameters, ``V`` the inverse
observed information of the fit (for the joint fit this carries the covariance the shared speaker
intercept induces between the two components). A group contrast between speakers is informed by only
``m`` speakers, and Wald intervals with ML variance components under-cover at small ``m``, so the
speaker-model rows use the between-within small-sample correction: with ``q`` design columns constant within speaker (intercept, a speaker-level group) and
``df = m - q``, the interval is ``exp(log R +- t_{df, 1-alpha/2} sqrt(m / df) se)`` (``sqrt(m / df)`` is
the ML-to-REML variance correction of the balanced linear case, in which the interval is then exact).
Measured on 1,000 simulated LibriSpeech-sized data sets (40 speakers, ``benchmarks/bench_glmm.py
--coverage 1000``): joint fit 94.0% coverage (92.9% with a plain z interval), separate fits 86.9%.
The GLM row uses ``z_{1-alpha/2} se``. Optionally every model row also gets a speaker-cluster bootstrap
interval (percentile, speakers resampled within group levels, model refitted).

Method rows (paper Tables III-IV):

* ``vanilla``: corpus WER ratio ``sum errors / sum N`` per group, speaker-cluster bootstrap interval;
* ``regression w/o speaker w/o semantics``: Poisson and Binomial GLMs on the group indicator;
* ``regression w/ speaker w/o semantics``: the joint random-intercept GLMM on the group indicator;
* ``regression w/ speaker w/ semantics``: the joint GLMM on the group indicator and the semantic
  covariates (one row per covariate set when several are given).

Judge scores (paper §IV-V): a linear model of the score on the group indicator (and covariates), with a
speaker random intercept (:func:`harness.metrics.glmm.fit_linear_mixed`, REML) when speakers are known and
OLS otherwise (statsmodels' ``MixedLM`` with its default optimiser returns a non-finite REML likelihood and
garbage fixed effects flagged ``converged`` when the speaker variance is 0, as in the §IV design); the
ratio of the predicted group means standardised over the pooled covariates, ``(xbar(g1)' b) /
(xbar(g0)' b)``, with a delta-method interval on the log scale using a t quantile (``n - p`` degrees of
freedom for OLS, speakers minus speaker-level columns for the mixed model).

A row whose fit did not converge keeps its numbers for diagnosis but has ``converged = False`` and
``significant = None``: it must not be used to pass or fail a gate.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import special, stats

from harness.metrics.glmm import JointWERFit, fit_joint_wer_model, fit_linear_mixed, fit_random_intercept

METHOD_VANILLA = "vanilla"
METHOD_NO_SPEAKER = "regression w/o speaker w/o semantics"
METHOD_SPEAKER = "regression w/ speaker w/o semantics"
METHOD_SEMANTIC = "regression w/ speaker w/ semantics"
METHOD_NO_SPEAKER_SEMANTIC = "regression w/o speaker w/ semantics"

WER_COLUMNS = ("speaker", "group", "insertions", "deletions", "substitutions", "n_ref_words")
RESULT_COLUMNS = (
    "ratio",
    "ci_low",
    "ci_high",
    "significant",
    "converged",
    "ci_method",
    "se_log_ratio",
    "df",
    "boot_ci_low",
    "boot_ci_high",
    "value_numerator",
    "value_denominator",
    "message",
)

_QUADRATURE_NODES = 40
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite.hermgauss(_QUADRATURE_NODES)
_INTERCEPT = "(Intercept)"


@dataclasses.dataclass(frozen=True)
class RatioTable:
    """One row per method (index), columns ``RESULT_COLUMNS``.

    ``ratio`` is ``numerator / denominator`` of the metric (expected WER or mean judge score);
    ``ci_low``/``ci_high`` the interval of ``ci_method`` (``bootstrap`` for vanilla, ``delta`` for model
    rows); ``boot_ci_*`` the speaker-cluster bootstrap interval where one was computed; ``significant`` is
    true when the interval excludes 1 and ``None`` for a non-converged row. ``value_*`` are the per-group
    metric values behind the ratio. ``fits`` holds the fitted model objects by method.
    """

    methods: pd.DataFrame
    metric: str
    numerator: str
    denominator: str
    n_utterances: int
    n_speakers: int | None
    n_dropped_empty_reference: int
    fits: Mapping[str, object] = dataclasses.field(repr=False, compare=False)

    def row(self, method: str) -> pd.Series:
        return self.methods.loc[method]


@dataclasses.dataclass(frozen=True)
class SimulatedWER:
    """A simulated per-utterance WER table and its true expected-WER ratio (same estimand as
    :func:`wer_ratio`, evaluated at the true parameters on the table's own pooled covariates)."""

    table: pd.DataFrame
    true_ratio: float
    covariates: tuple[str, ...]


def wer_ratio(
    table: pd.DataFrame,
    *,
    covariates: Sequence[str] | Mapping[str, Sequence[str]] = (),
    numerator: str | None = None,
    denominator: str | None = None,
    nagq: int = 10,
    n_boot: int = 1000,
    n_model_boot: int = 0,
    alpha: float = 0.05,
    seed: int = 0,
    speaker_model: str = "joint",
    estimate_loading: bool = False,
    small_sample: bool = True,
) -> RatioTable:
    """Expected-WER ratio ``numerator / denominator`` by the paper's four method rows (module docstring).

    ``table`` has one row per utterance with columns ``speaker, group, insertions, deletions,
    substitutions, n_ref_words`` and the covariate columns. ``group`` must have exactly two levels;
    without ``numerator``/``denominator`` the sorted levels are used as (numerator, denominator).
    ``covariates`` is a list of columns (one semantic row) or a mapping name -> columns (one row each).
    Utterances with ``n_ref_words = 0`` are dropped with a warning (WER is undefined for them).
    ``n_boot`` sets the vanilla bootstrap; ``n_model_boot > 0`` adds a speaker-cluster bootstrap interval
    (refitting) to every model row. ``speaker_model="separate"`` fits the two GLMMs separately and uses a
    block-diagonal covariance (ignoring the shared speaker effect; kept for comparison).
    ``small_sample=False`` drops the between-within correction of the speaker-model intervals.
    """
    if speaker_model not in ("joint", "separate"):
        raise ValueError(f"speaker_model must be 'joint' or 'separate', got {speaker_model!r}")
    covariate_sets = _covariate_sets(covariates)
    data, numerator, denominator, n_dropped = _prepare_wer_table(
        table, sorted({c for cols in covariate_sets.values() for c in cols}), numerator, denominator
    )
    rng = np.random.default_rng(seed)
    rows: dict[str, dict[str, object]] = {}
    fits: dict[str, object] = {}

    ratio, low, high = _vanilla_wer_bootstrap(data, numerator, n_boot, alpha, rng)
    wer_num, wer_den = _corpus_wer(data, numerator), _corpus_wer(data, denominator)
    rows[METHOD_VANILLA] = _row(ratio, low, high, True, "bootstrap", np.nan, wer_num, wer_den)

    glm = _WERModel.fit_glm(data, numerator)
    fits[METHOD_NO_SPEAKER] = glm
    rows[METHOD_NO_SPEAKER] = glm.row(data, numerator, alpha)

    specs = [(METHOD_SPEAKER, ())]
    specs += [
        (METHOD_SEMANTIC if name is None else f"{METHOD_SEMANTIC}: {name}", tuple(cols))
        for name, cols in covariate_sets.items()
    ]
    for method, cols in specs:
        model = _WERModel.fit_mixed(data, numerator, cols, nagq, speaker_model, estimate_loading)
        fits[method] = model
        row = model.row(data, numerator, alpha, small_sample)
        if n_model_boot > 0:
            row["boot_ci_low"], row["boot_ci_high"], failed = model.bootstrap(
                data, numerator, n_model_boot, alpha, rng
            )
            if failed:
                row["message"] += f"; {failed} of {n_model_boot} bootstrap refits did not converge (excluded)"
        rows[method] = row

    return RatioTable(
        methods=_methods_frame(rows),
        metric="expected_wer",
        numerator=numerator,
        denominator=denominator,
        n_utterances=len(data),
        n_speakers=int(data["speaker"].nunique()),
        n_dropped_empty_reference=n_dropped,
        fits=fits,
    )


def expected_wer(
    fit: JointWERFit, covariate_table: pd.DataFrame, group_indicator: str, level: float, n_words: np.ndarray
) -> float:
    """Population-average expected WER of a joint fit with the indicator column ``group_indicator`` set
    to ``level`` for every pooled utterance (module docstring formula)."""
    design = covariate_table.assign(**{_INTERCEPT: 1.0, group_indicator: float(level)})
    ins, dels = fit.coef_insertions, fit.coef_delsub
    return _expected_wer_from_parts(
        design[list(ins.index)].to_numpy(float) @ ins.to_numpy(),
        design[list(dels.index)].to_numpy(float) @ dels.to_numpy(),
        fit.loading * fit.sigma,
        fit.sigma,
        np.asarray(n_words, dtype=float),
    )


def judge_score_ratio(
    table: pd.DataFrame,
    *,
    score: str = "score",
    group: str = "group",
    speaker: str | None = "speaker",
    covariates: Sequence[str] | Mapping[str, Sequence[str]] = (),
    numerator: str | None = None,
    denominator: str | None = None,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> RatioTable:
    """Ratio of mean judge scores ``numerator / denominator`` (paper §IV-B, §V, AIR-Bench-Chat style).

    Rows: ``vanilla`` (ratio of group means; bootstrap over speakers when ``speaker`` is a column of
    ``table``, over utterances otherwise, resampling within group levels), the OLS regression on the group
    indicator, and, when speakers are known, the linear mixed model with a speaker random intercept,
    without and with the semantic ``covariates``. Without speakers the semantic row is an OLS fit.
    """
    covariate_sets = _covariate_sets(covariates)
    needed = [score, group] + sorted({c for cols in covariate_sets.values() for c in cols})
    has_speaker = speaker is not None and speaker in table.columns
    if has_speaker:
        needed.append(speaker)
    _require_columns(table, needed)
    data = table[needed].reset_index(drop=True).copy()
    _check_finite(data, [score] + sorted({c for cols in covariate_sets.values() for c in cols}))
    numerator, denominator = _two_levels(data[group], numerator, denominator, group)
    data["_indicator"] = (data[group] == numerator).astype(float)
    rng = np.random.default_rng(seed)
    rows: dict[str, dict[str, object]] = {}
    fits: dict[str, object] = {}

    mean_num = float(data.loc[data["_indicator"] == 1, score].mean())
    mean_den = float(data.loc[data["_indicator"] == 0, score].mean())
    units = data[speaker] if has_speaker else pd.Series(np.arange(len(data)))
    low, high = _bootstrap_mean_ratio(
        data[score].to_numpy(float), data["_indicator"].to_numpy(), units, n_boot, alpha, rng
    )
    rows[METHOD_VANILLA] = _row(mean_num / mean_den, low, high, True, "bootstrap", np.nan, mean_num, mean_den)

    specs = [(METHOD_NO_SPEAKER, (), False)]
    if has_speaker:
        specs.append((METHOD_SPEAKER, (), True))
    semantic_method = METHOD_SEMANTIC if has_speaker else METHOD_NO_SPEAKER_SEMANTIC
    specs += [
        (semantic_method if name is None else f"{semantic_method}: {name}", tuple(cols), has_speaker)
        for name, cols in covariate_sets.items()
    ]
    for method, cols, mixed in specs:
        design = pd.DataFrame({_INTERCEPT: 1.0, f"{group}[{numerator}]": data["_indicator"]})
        for c in cols:
            design[c] = data[c].astype(float)
        rows[method], fits[method] = _linear_ratio_row(
            data[score].to_numpy(float), design, data[speaker] if mixed else None, alpha
        )

    return RatioTable(
        methods=_methods_frame(rows),
        metric="mean_score",
        numerator=numerator,
        denominator=denominator,
        n_utterances=len(data),
        n_speakers=int(data[speaker].nunique()) if has_speaker else None,
        n_dropped_empty_reference=0,
        fits=fits,
    )


def simulate_wer_table(
    seed: int | np.random.Generator,
    *,
    n_speakers: int = 40,
    utterances_per_speaker: int = 65,
    sigma: float = 0.5,
    group_effect_insertions: float = 0.0,
    group_effect_delsub: float = 0.0,
    difficulty_effect: float = 1.0,
    confounding: float = 0.6,
    n_noise_covariates: int = 3,
    intercept_insertions: float = -4.3,
    intercept_delsub: float = -3.4,
) -> SimulatedWER:
    """Paper §IV-style simulation in WER form, with one speaker intercept shared by both components.

    Half the speakers are in group ``"F"``, half in ``"M"``. Each utterance has a semantic difficulty
    covariate ``x_difficulty ~ N(+-confounding, 1)`` (``+`` for ``F``: difficulty is confounded with the
    group) and ``n_noise_covariates`` pure-noise semantic covariates; ``N ~`` a log-normal length in 5..60.
    Errors follow eq. 4-5 with ``difficulty_effect`` on both logits and the group effects on ``F``
    (default 0: no true group effect). ``true_ratio`` is the expected-WER ratio ``F / M`` at the true
    parameters.
    """
    rng = np.random.default_rng(seed)
    speaker_group = np.where(np.arange(n_speakers) < n_speakers // 2, "F", "M")
    speaker_of = np.repeat(np.arange(n_speakers), utterances_per_speaker)
    is_f = (speaker_group[speaker_of] == "F").astype(float)
    n = speaker_of.size
    n_words = np.clip(np.round(np.exp(rng.normal(np.log(17.0), 0.65, n))), 5, 60)
    difficulty = rng.normal(confounding * (2 * is_f - 1), 1.0)
    noise = rng.normal(size=(n, n_noise_covariates))
    r = rng.normal(0.0, sigma, n_speakers)[speaker_of]
    eta_ins_fixed = intercept_insertions + difficulty_effect * difficulty
    eta_del_fixed = intercept_delsub + difficulty_effect * difficulty
    insertions = rng.poisson(n_words * np.exp(eta_ins_fixed + group_effect_insertions * is_f + r))
    delsub = rng.binomial(n_words.astype(int), special.expit(eta_del_fixed + group_effect_delsub * is_f + r))
    deletions = rng.binomial(delsub, 0.3)
    table = pd.DataFrame(
        {
            "speaker": [f"s{k:03d}" for k in speaker_of],
            "group": speaker_group[speaker_of],
            "insertions": insertions,
            "deletions": deletions,
            "substitutions": delsub - deletions,
            "n_ref_words": n_words.astype(int),
            "x_difficulty": difficulty,
        }
    )
    names = ["x_difficulty"]
    for k in range(n_noise_covariates):
        table[f"x_noise{k + 1}"] = noise[:, k]
        names.append(f"x_noise{k + 1}")
    true_wer = [
        _expected_wer_from_parts(
            eta_ins_fixed + group_effect_insertions * level,
            eta_del_fixed + group_effect_delsub * level,
            sigma,
            sigma,
            n_words,
        )
        for level in (1.0, 0.0)
    ]
    return SimulatedWER(table=table, true_ratio=true_wer[0] / true_wer[1], covariates=tuple(names))


# --------------------------------------------------------------------------------------------------------
# Expected-WER models


@dataclasses.dataclass(frozen=True)
class _WERModel:
    """A fitted pair of components in a common parameter vector with its covariance.

    ``unpack(params) -> (theta_ins, theta_del, s_ins, s_del)``; ``columns`` are the design columns shared
    by both components; ``refit`` rebuilds the model on a resampled table (bootstrap).
    """

    kind: str
    columns: tuple[str, ...]
    params: np.ndarray
    cov: np.ndarray
    converged: bool
    message: str
    fit: object
    nagq: int = 10
    estimate_loading: bool = False

    def unpack(self, params: np.ndarray):
        p = len(self.columns)
        if self.kind == "glm":
            return params[:p], params[p : 2 * p], 0.0, 0.0
        if self.kind == "separate":
            return params[:p], params[p + 1 : 2 * p + 1], params[p], params[2 * p + 1]
        sigma = params[2 * p]
        loading = params[2 * p + 1] if self.estimate_loading else 1.0
        return params[:p], params[p : 2 * p], loading * sigma, sigma

    @classmethod
    def fit_glm(cls, data: pd.DataFrame, numerator: str) -> _WERModel:
        design = _design(data, numerator, ())
        exog = design.to_numpy(float)
        words = data["n_ref_words"].to_numpy(float)
        delsub = (data["deletions"] + data["substitutions"]).to_numpy(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ins_fit = sm.GLM(
                data["insertions"].to_numpy(float), exog, family=sm.families.Poisson(), offset=np.log(words)
            ).fit()
            del_fit = sm.GLM(
                np.column_stack([delsub, words - delsub]), exog, family=sm.families.Binomial()
            ).fit()
        converged = bool(ins_fit.converged and del_fit.converged)
        p = exog.shape[1]
        cov = np.zeros((2 * p, 2 * p))
        cov[:p, :p] = ins_fit.cov_params()
        cov[p:, p:] = del_fit.cov_params()
        return cls(
            kind="glm",
            columns=tuple(design.columns),
            params=np.concatenate([ins_fit.params, del_fit.params]),
            cov=cov,
            converged=converged,
            message="converged" if converged else "IRLS did not converge",
            fit=(ins_fit, del_fit),
        )

    @classmethod
    def fit_mixed(
        cls,
        data: pd.DataFrame,
        numerator: str,
        covariates: Sequence[str],
        nagq: int,
        speaker_model: str,
        estimate_loading: bool,
        start: object | None = None,
    ) -> _WERModel:
        design = _design(data, numerator, covariates)
        words = data["n_ref_words"].to_numpy(float)
        delsub = (data["deletions"] + data["substitutions"]).to_numpy(float)
        speakers = data["speaker"].to_numpy()
        columns = tuple(design.columns)
        if speaker_model == "joint":
            fit = fit_joint_wer_model(
                data["insertions"].to_numpy(float),
                delsub,
                words,
                design,
                speakers,
                nagq=nagq,
                estimate_loading=estimate_loading,
                start=start,
            )
            return cls(
                kind="joint",
                columns=columns,
                params=fit.params.to_numpy(float),
                cov=fit.cov.to_numpy(float),
                converged=fit.converged,
                message=fit.message,
                fit=fit,
                nagq=nagq,
                estimate_loading=estimate_loading,
            )
        ins_fit = fit_random_intercept(
            data["insertions"].to_numpy(float), design, speakers, "poisson", offset=np.log(words), nagq=nagq
        )
        del_fit = fit_random_intercept(delsub, design, speakers, "binomial", trials=words, nagq=nagq)
        k = len(columns) + 1
        cov = np.zeros((2 * k, 2 * k))
        cov[:k, :k] = ins_fit.cov.to_numpy(float)
        cov[k:, k:] = del_fit.cov.to_numpy(float)
        params = np.concatenate([ins_fit.coef, [ins_fit.sigma], del_fit.coef, [del_fit.sigma]])
        converged = ins_fit.converged and del_fit.converged
        return cls(
            kind="separate",
            columns=columns,
            params=params,
            cov=cov,
            converged=converged,
            message="; ".join({ins_fit.message, del_fit.message}),
            fit=(ins_fit, del_fit),
            nagq=nagq,
        )

    def log_ratio(self, params: np.ndarray, pooled: _PooledDesign) -> float:
        theta_ins, theta_del, s_ins, s_del = self.unpack(params)
        wer = [
            _expected_wer_from_parts(design @ theta_ins, design @ theta_del, s_ins, s_del, pooled.n_words)
            for design in (pooled.numerator, pooled.denominator)
        ]
        return float(np.log(wer[0]) - np.log(wer[1]))

    def delta_se(self, pooled: _PooledDesign) -> float:
        gradient = np.zeros(self.params.size)
        for k in range(self.params.size):
            step = 1e-6 * max(1.0, abs(self.params[k]))
            forward, backward = self.params.copy(), self.params.copy()
            forward[k] += step
            backward[k] -= step
            gradient[k] = (self.log_ratio(forward, pooled) - self.log_ratio(backward, pooled)) / (2 * step)
        used = gradient != 0
        variance = gradient[used] @ self.cov[np.ix_(used, used)] @ gradient[used]
        return float(np.sqrt(variance)) if variance >= 0 else np.nan

    def row(
        self, data: pd.DataFrame, numerator: str, alpha: float, small_sample: bool = True
    ) -> dict[str, object]:
        """The method row: ratio, delta-method interval (module docstring), per-group expected WER."""
        pooled = _PooledDesign.build(data, numerator, self.columns)
        log_ratio = self.log_ratio(self.params, pooled)
        se = self.delta_se(pooled)
        theta_ins, theta_del, s_ins, s_del = self.unpack(self.params)
        values = [
            _expected_wer_from_parts(design @ theta_ins, design @ theta_del, s_ins, s_del, pooled.n_words)
            for design in (pooled.numerator, pooled.denominator)
        ]
        half_width, df = _normal_quantile(alpha) * se, np.nan
        if small_sample and self.kind != "glm":
            n_speakers = int(data["speaker"].nunique())
            speaker_level = _speaker_level_columns(data, _design(data, numerator, self.columns[2:]))
            df = n_speakers - speaker_level
            if df < 1:
                raise ValueError(f"{n_speakers} speakers leave no degrees of freedom for {speaker_level} "
                                 "speaker-level fixed effects")
            half_width = stats.t.ppf(1.0 - alpha / 2.0, df) * se * np.sqrt(n_speakers / df)
        row = _row(
            np.exp(log_ratio),
            np.exp(log_ratio - half_width),
            np.exp(log_ratio + half_width),
            self.converged,
            "delta",
            se,
            values[0],
            values[1],
        )
        row["df"] = float(df)
        row["message"] = self.message
        return row

    def bootstrap(
        self, data: pd.DataFrame, numerator: str, n_boot: int, alpha: float, rng: np.random.Generator
    ) -> tuple[float, float, int]:
        """Speaker-cluster percentile bootstrap of the ratio, refitting from this fit's estimates."""
        covariates = tuple(c for c in self.columns[2:])
        by_speaker = {k: v for k, v in data.groupby("speaker", sort=False)}
        strata = _speaker_strata(data)
        ratios, failed = [], 0
        for b in range(n_boot):
            parts = []
            for speakers in strata:
                for k, spk in enumerate(rng.choice(speakers, size=speakers.size, replace=True)):
                    parts.append(by_speaker[spk].assign(speaker=f"{spk}#{k}"))
            sample = pd.concat(parts, ignore_index=True)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    refit = self._refit(sample, numerator, covariates)
            except ValueError:
                failed += 1
                continue
            if not refit.converged:
                failed += 1
                continue
            ratios.append(refit.log_ratio(refit.params, _PooledDesign.build(sample, numerator, refit.columns)))
        if not ratios:
            return np.nan, np.nan, failed
        low, high = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
        return float(np.exp(low)), float(np.exp(high)), failed

    def _refit(self, sample: pd.DataFrame, numerator: str, covariates: tuple[str, ...]) -> _WERModel:
        if self.kind == "glm":
            return _WERModel.fit_glm(sample, numerator)
        start = self.fit if self.kind == "joint" else None
        return _WERModel.fit_mixed(
            sample, numerator, covariates, self.nagq, self.kind, self.estimate_loading, start=start
        )


@dataclasses.dataclass(frozen=True)
class _PooledDesign:
    """The pooled utterances' design with the group indicator set to each level, and their lengths."""

    numerator: np.ndarray
    denominator: np.ndarray
    n_words: np.ndarray

    @classmethod
    def build(cls, data: pd.DataFrame, numerator: str, columns: Sequence[str]) -> _PooledDesign:
        design = _design(data, numerator, columns[2:])
        indicator = design.columns[1]
        return cls(
            numerator=design.assign(**{indicator: 1.0}).to_numpy(float),
            denominator=design.assign(**{indicator: 0.0}).to_numpy(float),
            n_words=data["n_ref_words"].to_numpy(float),
        )


def _expected_wer_from_parts(
    eta_ins: np.ndarray, eta_del: np.ndarray, s_ins: float, s_del: float, n_words: np.ndarray
) -> float:
    nodes, weights = _HERMITE_NODES, _HERMITE_WEIGHTS
    insertion_rate = np.exp(eta_ins + 0.5 * s_ins**2)
    delsub_prob = special.expit(eta_del[:, None] + np.sqrt(2.0) * s_del * nodes[None, :]) @ weights / np.sqrt(np.pi)
    return float(np.sum(n_words * (insertion_rate + delsub_prob)) / np.sum(n_words))


# --------------------------------------------------------------------------------------------------------
# Vanilla and linear-model rows


def _corpus_wer(data: pd.DataFrame, level: str) -> float:
    rows = data[data["group"] == level]
    errors = rows["insertions"] + rows["deletions"] + rows["substitutions"]
    return float(errors.sum() / rows["n_ref_words"].sum())


def _vanilla_wer_bootstrap(
    data: pd.DataFrame, numerator: str, n_boot: int, alpha: float, rng: np.random.Generator
) -> tuple[float, float, float]:
    errors = data["insertions"] + data["deletions"] + data["substitutions"]
    per_speaker = (
        pd.DataFrame(
            {"speaker": data["speaker"], "group": data["group"], "errors": errors, "words": data["n_ref_words"]}
        )
        .groupby(["speaker", "group"], sort=False)[["errors", "words"]]
        .sum()
        .reset_index()
    )
    wer = {}
    boot = {}
    for level_is_numerator in (True, False):
        part = per_speaker[(per_speaker["group"] == numerator) == level_is_numerator]
        e, w = part["errors"].to_numpy(float), part["words"].to_numpy(float)
        wer[level_is_numerator] = e.sum() / w.sum()
        picks = rng.integers(0, e.size, size=(n_boot, e.size))
        boot[level_is_numerator] = e[picks].sum(axis=1) / w[picks].sum(axis=1)
    ratio = wer[True] / wer[False]
    if n_boot <= 0:
        return ratio, np.nan, np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = boot[True] / boot[False]
    low, high = np.nanquantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(ratio), float(low), float(high)


def _bootstrap_mean_ratio(
    score: np.ndarray, indicator: np.ndarray, units: pd.Series, n_boot: int, alpha: float, rng: np.random.Generator
) -> tuple[float, float]:
    if n_boot <= 0:
        return np.nan, np.nan
    frame = pd.DataFrame({"unit": units.to_numpy(), "g": indicator, "s": score})
    per_unit = frame.groupby(["unit", "g"], sort=False)["s"].agg(["sum", "count"]).reset_index()
    means = []
    for level in (1.0, 0.0):
        part = per_unit[per_unit["g"] == level]
        sums, counts = part["sum"].to_numpy(float), part["count"].to_numpy(float)
        picks = rng.integers(0, sums.size, size=(n_boot, sums.size))
        means.append(sums[picks].sum(axis=1) / counts[picks].sum(axis=1))
    low, high = np.quantile(means[0] / means[1], [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _linear_ratio_row(
    score: np.ndarray, design: pd.DataFrame, speakers: pd.Series | None, alpha: float
) -> tuple[dict[str, object], object]:
    """Ratio of predicted group means with a t interval: ``df = n - p`` (OLS) or ``df = m - q`` (speakers
    minus speaker-level columns, the between-within degrees of freedom, for the mixed model)."""
    exog = design.to_numpy(float)
    if speakers is None:
        fit = sm.OLS(score, exog).fit()
        converged, message = True, "converged"
        beta, cov = np.asarray(fit.params), np.asarray(fit.cov_params())
        df = float(fit.df_resid)
    else:
        fit = fit_linear_mixed(score, design, speakers.to_numpy())
        converged, message = fit.converged, fit.message
        if fit.singular:
            message += " (speaker variance estimated at 0)"
        beta, cov = fit.coef.to_numpy(), fit.cov.to_numpy()
        frame = pd.DataFrame({"speaker": speakers.to_numpy()})
        df = float(fit.n_clusters - _speaker_level_columns(frame, design))
        if df < 1:
            raise ValueError(f"{fit.n_clusters} speakers leave no degrees of freedom for the speaker-level columns")
    mean_row = exog.mean(axis=0)
    x_num, x_den = mean_row.copy(), mean_row.copy()
    x_num[1], x_den[1] = 1.0, 0.0
    m_num, m_den = float(x_num @ beta), float(x_den @ beta)
    if m_num <= 0 or m_den <= 0:
        raise ValueError("predicted group means must be positive for a ratio of scores")
    gradient = x_num / m_num - x_den / m_den
    se = float(np.sqrt(gradient @ cov @ gradient))
    log_ratio = np.log(m_num / m_den)
    half_width = stats.t.ppf(1.0 - alpha / 2.0, df) * se
    row = _row(np.exp(log_ratio), np.exp(log_ratio - half_width), np.exp(log_ratio + half_width), converged,
               "delta", se, m_num, m_den)
    row["df"] = df
    row["message"] = message
    return row, fit


# --------------------------------------------------------------------------------------------------------
# Tables and validation


def _row(ratio, low, high, converged, ci_method, se, value_num, value_den) -> dict[str, object]:
    significant = None
    if converged and np.isfinite(low) and np.isfinite(high):
        significant = bool(low > 1.0 or high < 1.0)
    return {
        "ratio": float(ratio),
        "ci_low": float(low),
        "ci_high": float(high),
        "significant": significant,
        "converged": bool(converged),
        "ci_method": ci_method,
        "se_log_ratio": float(se),
        "df": np.nan,
        "boot_ci_low": np.nan,
        "boot_ci_high": np.nan,
        "value_numerator": float(value_num),
        "value_denominator": float(value_den),
        "message": "converged" if converged else "not converged",
    }


def _methods_frame(rows: dict[str, dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(rows, orient="index")[list(RESULT_COLUMNS)]
    frame.index.name = "method"
    frame["significant"] = frame["significant"].astype(object)
    return frame


def _covariate_sets(covariates) -> dict[str | None, tuple[str, ...]]:
    if isinstance(covariates, str):
        raise ValueError("covariates must be a list of column names or a mapping name -> columns, not a string")
    if isinstance(covariates, Mapping):
        return {str(name): tuple(cols) for name, cols in covariates.items() if len(cols)}
    cols = tuple(covariates)
    return {None: cols} if cols else {}


def _require_columns(table: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"table is missing columns {missing}")


def _check_finite(data: pd.DataFrame, columns: Sequence[str]) -> None:
    for c in columns:
        values = pd.to_numeric(data[c], errors="coerce").to_numpy(float)
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(f"column {c!r} has {int(bad.sum())} NaN/inf or non-numeric values")


def _two_levels(groups: pd.Series, numerator, denominator, label: str) -> tuple[str, str]:
    if groups.isna().any():
        raise ValueError(f"column {label!r} has {int(groups.isna().sum())} missing values")
    levels = sorted(groups.unique().tolist(), key=str)
    if len(levels) != 2:
        raise ValueError(f"column {label!r} must have exactly two levels, found {levels}")
    if numerator is None and denominator is None:
        return levels[0], levels[1]
    if numerator is None:
        numerator = next(level for level in levels if level != denominator)
    if denominator is None:
        denominator = next(level for level in levels if level != numerator)
    if {numerator, denominator} != set(levels):
        raise ValueError(f"numerator/denominator {numerator!r}/{denominator!r} do not match levels {levels}")
    return numerator, denominator


def _prepare_wer_table(
    table: pd.DataFrame, covariates: Sequence[str], numerator, denominator
) -> tuple[pd.DataFrame, str, str, int]:
    _require_columns(table, list(WER_COLUMNS) + list(covariates))
    data = table[list(WER_COLUMNS) + list(covariates)].reset_index(drop=True).copy()
    if data["speaker"].isna().any():
        raise ValueError(f"column 'speaker' has {int(data['speaker'].isna().sum())} missing values")
    counts = ["insertions", "deletions", "substitutions", "n_ref_words"]
    _check_finite(data, counts + list(covariates))
    for c in counts:
        values = data[c].to_numpy(float)
        if np.any(values < 0):
            raise ValueError(f"column {c!r} has {int(np.sum(values < 0))} negative values")
        if np.any(values != np.round(values)):
            raise ValueError(f"column {c!r} must hold integer counts")
    over = data["deletions"] + data["substitutions"] > data["n_ref_words"]
    if over.any():
        raise ValueError(f"deletions + substitutions exceed n_ref_words in {int(over.sum())} rows")
    empty = data["n_ref_words"] == 0
    n_dropped = int(empty.sum())
    if n_dropped:
        warnings.warn(
            f"dropped {n_dropped} utterances with n_ref_words = 0 (WER undefined; their "
            f"{int(data.loc[empty, 'insertions'].sum())} insertions are not counted)",
            UserWarning,
            stacklevel=3,
        )
        data = data[~empty].reset_index(drop=True)
    numerator, denominator = _two_levels(data["group"], numerator, denominator, "group")
    return data, numerator, denominator, n_dropped


def _design(data: pd.DataFrame, numerator: str, covariates: Sequence[str]) -> pd.DataFrame:
    design = pd.DataFrame(
        {_INTERCEPT: np.ones(len(data)), f"group[{numerator}]": (data["group"] == numerator).to_numpy(float)}
    )
    for c in covariates:
        design[c] = data[c].to_numpy(float)
    return design


def _speaker_level_columns(data: pd.DataFrame, design: pd.DataFrame) -> int:
    """Number of design columns constant within every speaker (intercept, a speaker-level group, ...)."""
    by_speaker = design.groupby(data["speaker"].to_numpy(), sort=False)
    return int(((by_speaker.max() - by_speaker.min()).max(axis=0) == 0).sum())


def _speaker_strata(data: pd.DataFrame) -> list[np.ndarray]:
    """Speakers grouped by their level when the group is constant within speaker, else one stratum."""
    levels_per_speaker = data.groupby("speaker", sort=False)["group"].nunique()
    if (levels_per_speaker == 1).all():
        first = data.groupby("speaker", sort=False)["group"].first()
        return [first.index[first == level].to_numpy() for level in first.unique()]
    return [levels_per_speaker.index.to_numpy()]


def _normal_quantile(alpha: float) -> float:
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


__all__ = [
    "METHOD_NO_SPEAKER",
    "METHOD_NO_SPEAKER_SEMANTIC",
    "METHOD_SEMANTIC",
    "METHOD_SPEAKER",
    "METHOD_VANILLA",
    "RatioTable",
    "SimulatedWER",
    "expected_wer",
    "judge_score_ratio",
    "simulate_wer_table",
    "wer_ratio",
]
