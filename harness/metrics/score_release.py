"""The release comparison of a judge-score ratio on the row that decides it (semantic-aware mixed-effects paper §IV-V;
issue 58): one joint linear fit of both checkpoints' scored replies, as :mod:`harness.metrics.wer_release` does for
the WER ratio.

A judge-score case is decided on the linear mixed model of the score with a speaker intercept and the model's own
semantic covariates (:mod:`harness.metrics.score_ratio`). The release comparison fits, for reply ``j`` of speaker
``i`` (checkpoint ``c_j``, group indicator ``g_j``)::

    y_j = b0 + b1 g_j + b2 c_j + b3 c_j g_j + c_j x_j(cand)' t_cand + (1 - c_j) x_j(base)' t_base + r_i + e_j

by REML (:func:`harness.metrics.glmm.fit_linear_mixed`; ordinary least squares where the corpus has no speaker ids,
as the deciding row then is). Each checkpoint's ratio is that of its predicted group means standardised over its own
replies, ``R_k = (xbar_k(1)' b) / (xbar_k(0)' b)`` (``xbar_k(g)``: the mean design row of checkpoint ``k`` with the
group set to ``g``), and ``Delta = log R_cand - log R_base`` has the delta-method standard error with the exact
gradient ``xbar_cand(1) / m_cand(1) - xbar_cand(0) / m_cand(0) - (the same for the baseline)`` and the fit's
speaker-cluster-robust covariance (:attr:`harness.metrics.glmm.LinearMixedResult.cov_robust`, the bias-reduced CR2
sandwich of Bell & McCaffrey 2002: :func:`harness.metrics.glmm.linear.cluster_robust_cr2`; for OLS the HC1
sandwich, each reply its own unit), for the reason :mod:`harness.metrics.wer_release` gives, and Student's t with
Bell & McCaffrey's Satterthwaite ``df`` of the contrast under CR2 (Pustejovsky & Tipton 2018, eq. 9-11), capped at
speakers minus speaker-level columns (``n - p`` for OLS), the deciding row's own. (CR1 with ``df = m - q`` judged
14 of 200 voice-fair pairs worse at one-sided 0.05 with a checkpoint-specific speaker SD of 0.3; docs/statistics.md.) Direction, worsening and test as
:mod:`harness.metrics.wer_release` says; a lower score is worse, but the bias is the ratio's distance from 1 either
way, so the same magnitude ``|log R|`` is compared.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.regression.linear_model import OLS  # not statsmodels.api, whose import loads every model

from harness.metrics.glmm import fit_linear_mixed
from harness.metrics.ratio_table import _speaker_level_columns
from harness.metrics.wer_model import _design
from harness.metrics.wer_release import CHECKPOINT, INTERACTION, RatioInteraction, stacked_table, tested_interaction


def score_ratio_interaction(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    *,
    numerator: str,
    denominator: str,
    candidate_covariates: Sequence[str] = (),
    baseline_covariates: Sequence[str] = (),
    speakers: bool = True,
    label: str | None = None,
) -> RatioInteraction:
    """The checkpoint x group contrast of the judge-score ratio ``numerator / denominator`` (module docstring).

    Tables: one row per scored reply, columns ``speaker``, ``group`` (other levels than ``numerator`` count as
    ``denominator``), ``score`` and the covariate columns; ``speakers`` False fits OLS (every reply its own unit).
    A ``ValueError`` where the tables cannot be paired, the design is rank-deficient or a predicted mean is not
    positive."""
    one_vs_rest = [table.assign(group=np.where(table["group"].astype(str) == numerator, numerator, denominator))
                   for table in (candidate, baseline)]  # fmt: skip
    stacked, covariates = stacked_table(*one_vs_rest, candidate_covariates, baseline_covariates, values=("score",))
    stacked[INTERACTION] = stacked[CHECKPOINT] * (stacked["group"] == numerator)
    design = _design(stacked, numerator, covariates)
    score = stacked["score"].to_numpy(float)
    if speakers:
        fit = fit_linear_mixed(score, design, stacked["speaker"].to_numpy())
        beta, cov = fit.coef.to_numpy(float), fit.cov_robust.to_numpy(float)
        converged, message = bool(fit.converged), str(fit.message)
        df = float(fit.n_clusters - _speaker_level_columns(stacked, design))
        n_units = int(fit.n_clusters)
    else:
        fit = OLS(score, design.to_numpy(float)).fit(cov_type="HC1")  # every reply its own cluster
        beta, cov = np.asarray(fit.params, float), np.asarray(fit.cov_params(), float)
        converged, message, df, n_units = True, "converged", float(fit.df_resid), len(stacked)
    if df < 1:
        raise ValueError(f"{n_units} units leave no degrees of freedom for the speaker-level fixed effects")
    indicator = design.columns[1]
    log_ratios, gradients = [], []
    for flag in (1.0, 0.0):
        own = design[(stacked[CHECKPOINT] == flag).to_numpy()]
        high = own.assign(**{indicator: 1.0, INTERACTION: flag}).to_numpy(float).mean(axis=0)
        low = own.assign(**{indicator: 0.0, INTERACTION: 0.0}).to_numpy(float).mean(axis=0)
        means = float(high @ beta), float(low @ beta)
        if min(means) <= 0:
            raise ValueError("predicted group means must be positive for a ratio of scores")
        log_ratios.append(float(np.log(means[0] / means[1])))
        gradients.append(high / means[0] - low / means[1])
    gradient = gradients[0] - gradients[1]
    variance = float(gradient @ cov @ gradient)
    if speakers:  # Bell-McCaffrey's df of the contrast under CR2, never above the deciding row's own
        df = float(np.nanmin([df, fit.satterthwaite_df(gradient)]))
    return tested_interaction(
        label or f"{numerator} / {denominator}",
        log_ratios[0],
        log_ratios[1],
        se=float(np.sqrt(variance)) if variance >= 0 else float("nan"),
        df=df,
        converged=converged,
        message=message,
        n_speakers=n_units,
        n_utterances=len(stacked),
    )
