"""Group ratio of mean judge scores, by the method rows of the paper's tables (§IV-V).

A linear model of the score on the group indicator (and covariates), with a speaker random intercept
(:func:`harness.metrics.glmm.fit_linear_mixed`, REML) when speakers are known and OLS otherwise
(statsmodels' ``MixedLM`` with its default optimiser returns a non-finite REML likelihood and garbage fixed
effects flagged ``converged`` when the speaker variance is 0, as in the §IV design); the ratio of the
predicted group means standardised over the pooled covariates, ``(xbar(g1)' b) / (xbar(g0)' b)``, with a
delta-method interval on the log scale using a t quantile (``n - p`` degrees of freedom for OLS, speakers
minus speaker-level columns for the mixed model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS  # not statsmodels.api, whose import loads every model

from harness.core.values import require_columns
from harness.metrics.glmm import fit_linear_mixed
from harness.metrics.ratio_table import (
    _INTERCEPT,
    METHOD_VANILLA,
    SINGULAR_NOTE,
    RatioTable,
    _check_finite,
    _covariate_columns,
    _covariate_sets,
    _methods_frame,
    _model_methods,
    _row,
    _speaker_level_columns,
    _two_levels,
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
    needed = [score, group] + _covariate_columns(covariate_sets)
    has_speaker = speaker is not None and speaker in table.columns
    if has_speaker:
        needed.append(speaker)
    require_columns(table, needed)
    data = table[needed].reset_index(drop=True).copy()
    _check_finite(data, [score] + _covariate_columns(covariate_sets))
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

    for method, cols, mixed in _model_methods(covariate_sets, has_speaker):
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
        fit = OLS(score, exog).fit()
        converged, message = True, "converged"
        beta, cov = np.asarray(fit.params), np.asarray(fit.cov_params())
        df = float(fit.df_resid)
    else:
        fit = fit_linear_mixed(score, design, speakers.to_numpy())
        converged, message = fit.converged, fit.message
        if fit.singular:
            message += f"; {SINGULAR_NOTE}"
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
    row = _row(
        np.exp(log_ratio),
        np.exp(log_ratio - half_width),
        np.exp(log_ratio + half_width),
        converged,
        "delta",
        se,
        m_num,
        m_den,
    )
    row["df"] = df
    row["message"] = message
    return row, fit


__all__ = ["judge_score_ratio"]
