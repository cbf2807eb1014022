"""The expected-WER models behind the model rows of :func:`harness.metrics.wer_ratio.wer_ratio` (paper
§III-A, eq. 1-5): a pair of insertion (Poisson, offset ``log N``) and deletion+substitution (Binomial(N))
components fitted as GLMs, as one joint GLMM with a shared speaker intercept, or as two separate GLMMs.

The population-average expected WER of group level ``g`` over the pooled utterances ``j``::

    WER_g = sum_j N_j ( exp(x_j(g)' theta_ins + s_ins^2 / 2) + E_z[expit(x_j(g)' theta_del + s_del z)] )
            / sum_j N_j,                                                        z ~ N(0, 1)

with the Binomial term by 40-point Gauss-Hermite quadrature; the ratio's delta-method standard error,
small-sample interval and speaker-cluster bootstrap are described in :mod:`harness.metrics.wer_ratio`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import special, stats
from statsmodels.genmod import families  # not statsmodels.api, whose import loads every model
from statsmodels.genmod.generalized_linear_model import GLM

from harness.core.values import normal_quantile
from harness.metrics.glmm import fit_joint_wer_model, fit_random_intercept
from harness.metrics.ratio_table import _INTERCEPT, SINGULAR_NOTE, _row, _speaker_level_columns

_QUADRATURE_NODES = 40
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite.hermgauss(_QUADRATURE_NODES)


@dataclasses.dataclass(frozen=True)
class _WERModel:
    """A fitted pair of components in a common parameter vector with its covariance.

    ``unpack(params) -> (theta_ins, theta_del, s_ins, s_del)``; ``columns`` are the design columns shared
    by both components; ``refit`` rebuilds the model on a resampled table (bootstrap). The ``*-delsub`` kinds
    (``glm-delsub``, ``joint-delsub``) fit the deletion+substitution component alone (``theta_ins = None``:
    no insertion term in the expected WER), for a group without insertions, whose insertion coefficient has no
    finite estimate (perfect separation); ``note`` says so in the row. ``singular`` is true when the speaker
    SD was estimated at 0 (the row then carries :data:`SINGULAR_NOTE`).
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
    singular: bool = False
    n_obs: int = 0
    note: str = ""

    def unpack(self, params: np.ndarray):
        p = len(self.columns)
        if self.kind == "glm-delsub":
            return None, params[:p], 0.0, 0.0
        if self.kind == "joint-delsub":
            return None, params[:p], 0.0, params[p]
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
            ins_fit = GLM(
                data["insertions"].to_numpy(float), exog, family=families.Poisson(), offset=np.log(words)
            ).fit()
            del_fit = GLM(np.column_stack([delsub, words - delsub]), exog, family=families.Binomial()).fit()
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
            n_obs=len(data),
        )

    @classmethod
    def fit_delsub(cls, data: pd.DataFrame, numerator: str, covariates: Sequence[str], nagq: int, mixed: bool,
                   note: str, start: object | None = None) -> _WERModel:  # fmt: skip
        """The deletion+substitution component alone (Binomial(N) GLM, or GLMM with the speaker intercept)."""
        design = _design(data, numerator, covariates)
        words = data["n_ref_words"].to_numpy(float)
        delsub = (data["deletions"] + data["substitutions"]).to_numpy(float)
        if not mixed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = GLM(
                    np.column_stack([delsub, words - delsub]), design.to_numpy(float), family=families.Binomial()
                ).fit()
            converged = bool(fit.converged)
            return cls(kind="glm-delsub", columns=tuple(design.columns), params=np.asarray(fit.params, float),
                       cov=np.asarray(fit.cov_params(), float), converged=converged,
                       message="converged" if converged else "IRLS did not converge", fit=fit, n_obs=len(data), note=note)  # fmt: skip
        fit = fit_random_intercept(delsub, design, data["speaker"].to_numpy(), "binomial", trials=words, nagq=nagq)
        return cls(kind="joint-delsub", columns=tuple(design.columns), params=np.concatenate([fit.coef, [fit.sigma]]),
                   cov=fit.cov.to_numpy(float), converged=fit.converged, message=fit.message, fit=fit, nagq=nagq,
                   singular=fit.singular, n_obs=len(data), note=note)  # fmt: skip

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
                singular=fit.singular,
                n_obs=len(data),
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
            singular=bool(ins_fit.singular or del_fit.singular),
            n_obs=len(data),
        )

    def log_ratio(self, params: np.ndarray, pooled: _PooledDesign) -> float:
        theta_ins, theta_del, s_ins, s_del = self.unpack(params)
        wer = [
            _expected_wer_from_parts(_eta(design, theta_ins), design @ theta_del, s_ins, s_del, pooled.n_words)
            for design in (pooled.numerator, pooled.denominator)
        ]
        return float(np.log(wer[0]) - np.log(wer[1]))

    def delta_se(self, pooled: _PooledDesign) -> float:
        gradient = numerical_gradient(lambda params: self.log_ratio(params, pooled), self.params)
        used = gradient != 0
        variance = gradient[used] @ self.cov[np.ix_(used, used)] @ gradient[used]
        return float(np.sqrt(variance)) if variance >= 0 else np.nan

    def row(self, data: pd.DataFrame, numerator: str, alpha: float, small_sample: bool = True) -> dict[str, object]:
        """The method row: ratio, delta-method interval (:mod:`harness.metrics.wer_ratio`), per-group expected WER."""
        pooled = _PooledDesign.build(data, numerator, self.columns)
        log_ratio = self.log_ratio(self.params, pooled)
        se = self.delta_se(pooled)
        theta_ins, theta_del, s_ins, s_del = self.unpack(self.params)
        values = [
            _expected_wer_from_parts(_eta(design, theta_ins), design @ theta_del, s_ins, s_del, pooled.n_words)
            for design in (pooled.numerator, pooled.denominator)
        ]
        half_width, df = normal_quantile(alpha) * se, np.nan
        if small_sample and self.singular:
            # speaker SD at 0: the fit is its GLM, whose utterances are independent; df = n - fixed effects
            n_fixed = len(self.columns) * (1 if self.kind.endswith("-delsub") else 2)
            df = self.n_obs - n_fixed
            half_width = stats.t.ppf(1.0 - alpha / 2.0, df) * se
        elif small_sample and not self.kind.startswith("glm"):
            n_speakers = int(data["speaker"].nunique())
            speaker_level = _speaker_level_columns(data, _design(data, numerator, self.columns[2:]))
            df = n_speakers - speaker_level
            if df < 1:
                raise ValueError(
                    f"{n_speakers} speakers leave no degrees of freedom for {speaker_level} speaker-level fixed effects"
                )
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
        row["message"] = "; ".join(
            part for part in (self.message, SINGULAR_NOTE if self.singular else "", self.note) if part
        )
        return row

    def bootstrap(
        self, data: pd.DataFrame, numerator: str, n_boot: int, alpha: float, rng: np.random.Generator
    ) -> tuple[float, float, int]:
        """Speaker-cluster percentile bootstrap of the ratio, refitting from this fit's estimates."""
        covariates = tuple(c for c in self.columns[2:])
        by_speaker = {k: v for k, v in data.groupby("speaker", sort=False)}
        strata = _speaker_strata(data)
        ratios, failed = [], 0
        for _ in range(n_boot):
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
        if self.kind.endswith("-delsub"):
            return _WERModel.fit_delsub(
                sample, numerator, covariates, self.nagq, self.kind == "joint-delsub", self.note
            )
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


def numerical_gradient(function: Callable[[np.ndarray], float], params: np.ndarray) -> np.ndarray:
    """Central finite-difference gradient of ``function`` at ``params`` (step ``1e-6 max(1, |param|)``), for the
    delta-method standard errors of a ratio."""
    gradient = np.zeros(params.size)
    for k in range(params.size):
        step = 1e-6 * max(1.0, abs(params[k]))
        forward, backward = params.copy(), params.copy()
        forward[k] += step
        backward[k] -= step
        gradient[k] = (function(forward) - function(backward)) / (2 * step)
    return gradient


def _eta(design: np.ndarray, theta: np.ndarray | None) -> np.ndarray | None:
    return None if theta is None else design @ theta


def _expected_wer_from_parts(
    eta_ins: np.ndarray | None, eta_del: np.ndarray, s_ins: float, s_del: float, n_words: np.ndarray
) -> float:
    """Module docstring formula; ``eta_ins = None`` leaves the insertion term out (a ``*-delsub`` model)."""
    nodes, weights = _HERMITE_NODES, _HERMITE_WEIGHTS
    insertion_rate = 0.0 if eta_ins is None else np.exp(eta_ins + 0.5 * s_ins**2)
    delsub_prob = special.expit(eta_del[:, None] + np.sqrt(2.0) * s_del * nodes[None, :]) @ weights / np.sqrt(np.pi)
    return float(np.sum(n_words * (insertion_rate + delsub_prob)) / np.sum(n_words))


def _design(data: pd.DataFrame, numerator: str, covariates: Sequence[str]) -> pd.DataFrame:
    design = pd.DataFrame(
        {_INTERCEPT: np.ones(len(data)), f"group[{numerator}]": (data["group"] == numerator).to_numpy(float)}
    )
    for c in covariates:
        design[c] = data[c].to_numpy(float)
    return design


def _speaker_strata(data: pd.DataFrame) -> list[np.ndarray]:
    """Speakers grouped by their level when the group is constant within speaker, else one stratum."""
    levels_per_speaker = data.groupby("speaker", sort=False)["group"].nunique()
    if (levels_per_speaker == 1).all():
        first = data.groupby("speaker", sort=False)["group"].first()
        return [first.index[first == level].to_numpy() for level in first.unique()]
    return [levels_per_speaker.index.to_numpy()]
