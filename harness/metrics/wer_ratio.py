"""Group ratio of expected WER, by the method rows of the paper's tables (§III-V).

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

A speaker-model fit whose speaker SD is estimated at 0 (``boundary (singular) fit``, lme4's words, which the
row's message then carries) is its GLM: its utterances are independent given the fixed effects, so its
interval is ``exp(log R +- t_{df, 1-alpha/2} se)`` with ``df = n - p`` (utterances minus fixed effects) and no
``sqrt(m / df)`` factor; the between-within ``df = m - q`` with that factor assumes the speaker variance it
found to be absent and over-covered. Measured (``python benchmarks/bench_wer_edges.py --replicates 400``,
20 utterances per speaker, true ratio 1): with no speaker variance the speaker row covered 97.8% / 96.3% /
96.3% at 6 / 10 / 40 speakers before, 93.0% / 95.3% / 96.3% now (23.5% / 8.5% / 0% of the fits singular); with
speaker SD 0.5 it covers 94.3% / 95.3% / 94.5% (95.8% / 95.3% / 94.5% before: a singular fit by chance, 4.5% of
them at 6 speakers, now gets the narrower interval). The vanilla row (below) covers 95.3% / 94.3% / 94.0%
(SD 0.5) and 95.8% / 95.0% / 96.0% (SD 0), against 77.7% / 88.2% / 91.2% and 78.7% / 87.5% / 94.5% for the
percentile bootstrap.

Edges (issue 13). Every row that can be computed is given; a row whose model cannot be fitted keeps NaN numbers,
``converged = False`` and the reason in ``message``. When a group has no insertions at all, its insertion
coefficient has no finite maximum-likelihood estimate (perfect separation), but the expected-WER ratio is still
finite: the model rows then fit the deletion+substitution component alone (the Binomial GLM, and the GLMM
with the speaker intercept) and give the ratio of expected deletion+substitution rates (eq. 5 alone), the
reason stated in each row's message; the vanilla row, which needs no model, counts every error.

The vanilla interval is the linearised (ratio-estimator) t interval over speakers (the cluster sandwich of
the corpus WER, paper §III-A's vanilla estimator): per group ``g`` with speakers ``i`` (errors ``e_i``, words
``w_i``, ``m_g`` speakers, ``R_g = sum e / sum w``)::

    v_g = m_g / (m_g - 1) * sum_i (e_i - R_g w_i)^2 / (sum_i e_i)^2          (the variance of log R_g)
    log(R_num / R_den) +- t_{df, 1-alpha/2} sqrt(v_num + v_den),  df = (v_num + v_den)^2 / sum_g v_g^2 / (m_g - 1)

(Welch-Satterthwaite df). The percentile speaker bootstrap it replaces under-covered at 6-10 speakers (above);
it stays in the row's ``boot_ci_low``/``boot_ci_high``. With a group without errors ``log R_g`` is undefined and the
bootstrap interval is the row's interval.

Method rows (paper Tables III-IV):

* ``vanilla``: corpus WER ratio ``sum errors / sum N`` per group, linearised t interval over speakers (above);
* ``regression w/o speaker w/o semantics``: Poisson and Binomial GLMs on the group indicator;
* ``regression w/ speaker w/o semantics``: the joint random-intercept GLMM on the group indicator;
* ``regression w/ speaker w/ semantics``: the joint GLMM on the group indicator and the semantic
  covariates (one row per covariate set when several are given).

Judge scores have their own ratio, :func:`harness.metrics.score_ratio.judge_score_ratio` (re-exported here);
both return a :class:`harness.metrics.ratio_table.RatioTable`. A row whose fit did not converge keeps its
numbers for diagnosis but has ``converged = False`` and ``significant = None``: it must not be used to
pass or fail a gate.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from harness.core.values import require_columns
from harness.metrics.glmm import JointWERFit
from harness.metrics.ratio_table import (
    _INTERCEPT,
    METHOD_NO_SPEAKER,
    METHOD_NO_SPEAKER_SEMANTIC,
    METHOD_SEMANTIC,
    METHOD_SPEAKER,
    METHOD_VANILLA,
    RESULT_COLUMNS,
    RatioTable,
    _check_finite,
    _covariate_columns,
    _covariate_sets,
    _failed_row,
    _methods_frame,
    _model_methods,
    _row,
    _two_levels,
)
from harness.metrics.score_ratio import judge_score_ratio
from harness.metrics.wer_model import _expected_wer_from_parts, _WERModel

WER_COLUMNS = ("speaker", "group", "insertions", "deletions", "substitutions", "n_ref_words")


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
        table, _covariate_columns(covariate_sets), numerator, denominator
    )
    rng = np.random.default_rng(seed)
    rows: dict[str, dict[str, object]] = {}
    fits: dict[str, object] = {}

    ratio, low, high = _vanilla_wer_bootstrap(data, numerator, n_boot, alpha, rng)
    wer_num, wer_den = _corpus_wer(data, numerator), _corpus_wer(data, denominator)
    t_interval = _vanilla_t_interval(data, numerator, alpha)
    if t_interval is None:
        rows[METHOD_VANILLA] = _row(ratio, low, high, True, "bootstrap", np.nan, wer_num, wer_den)
    else:
        t_low, t_high, se, df = t_interval
        rows[METHOD_VANILLA] = _row(ratio, t_low, t_high, True, "linearised t", se, wer_num, wer_den)
        rows[METHOD_VANILLA].update(df=df, boot_ci_low=low, boot_ci_high=high)

    no_insertions = [
        str(level) for level in (numerator, denominator) if data.loc[data["group"] == level, "insertions"].sum() == 0
    ]
    delsub_note = ""
    if no_insertions:
        delsub_note = (f"insertions left out: group {' and '.join(no_insertions)} has none (perfect separation, no finite "
                       "insertion estimate); ratio of expected deletion+substitution rates")  # fmt: skip

    try:
        glm = (_WERModel.fit_delsub(data, numerator, (), nagq, False, delsub_note) if delsub_note
               else _WERModel.fit_glm(data, numerator))  # fmt: skip
        fits[METHOD_NO_SPEAKER] = glm
        rows[METHOD_NO_SPEAKER] = glm.row(data, numerator, alpha)
    except (ValueError, np.linalg.LinAlgError) as exc:
        rows[METHOD_NO_SPEAKER] = _failed_row(f"not fitted: {exc}")

    speaker_methods = [(method, cols) for method, cols, mixed in _model_methods(covariate_sets, True) if mixed]
    for method, cols in speaker_methods:
        try:
            if delsub_note:
                model = _WERModel.fit_delsub(data, numerator, cols, nagq, True, delsub_note)
            else:
                model = _WERModel.fit_mixed(data, numerator, cols, nagq, speaker_model, estimate_loading)
            fits[method] = model
            row = model.row(data, numerator, alpha, small_sample)
        except (ValueError, np.linalg.LinAlgError) as exc:  # the other rows stand; this one says why it is missing
            rows[method] = _failed_row(f"not fitted: {exc}")
            continue
        if n_model_boot > 0:
            row["boot_ci_low"], row["boot_ci_high"], failed = model.bootstrap(data, numerator, n_model_boot, alpha, rng)
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


# --------------------------------------------------------------------------------------------------------
# Vanilla and linear-model rows


def _corpus_wer(data: pd.DataFrame, level: str) -> float:
    rows = data[data["group"] == level]
    errors = rows["insertions"] + rows["deletions"] + rows["substitutions"]
    return float(errors.sum() / rows["n_ref_words"].sum())


def _vanilla_t_interval(data: pd.DataFrame, numerator: str, alpha: float) -> tuple[float, float, float, float] | None:
    """The vanilla row's linearised t interval (module docstring): ``(low, high, se of log ratio, Welch df)``;
    ``None`` when a group has no errors or fewer than 2 speakers (no variance estimate)."""
    per_speaker = (
        data.assign(errors=data["insertions"] + data["deletions"] + data["substitutions"])
        .groupby(["speaker", "group"], sort=False)[["errors", "n_ref_words"]]
        .sum()
        .reset_index()
    )
    log_ratio, parts = 0.0, []
    for level_is_numerator in (True, False):
        part = per_speaker[(per_speaker["group"] == numerator) == level_is_numerator]
        e, w = part["errors"].to_numpy(float), part["n_ref_words"].to_numpy(float)
        m = e.size
        if m < 2 or e.sum() <= 0:
            return None
        rate = e.sum() / w.sum()
        variance = m / (m - 1) * np.sum((e - rate * w) ** 2) / e.sum() ** 2
        log_ratio += np.log(rate) if level_is_numerator else -np.log(rate)
        parts.append((variance, m))
    total = sum(v for v, _ in parts)
    if total <= 0:
        return None
    df = total**2 / sum(v**2 / (m - 1) for v, m in parts)
    half_width = stats.t.ppf(1.0 - alpha / 2.0, df) * np.sqrt(total)
    return (
        float(np.exp(log_ratio - half_width)),
        float(np.exp(log_ratio + half_width)),
        float(np.sqrt(total)),
        float(df),
    )


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


def _prepare_wer_table(
    table: pd.DataFrame, covariates: Sequence[str], numerator, denominator
) -> tuple[pd.DataFrame, str, str, int]:
    require_columns(table, list(WER_COLUMNS) + list(covariates))
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


__all__ = [
    "METHOD_NO_SPEAKER",
    "METHOD_NO_SPEAKER_SEMANTIC",
    "METHOD_SEMANTIC",
    "METHOD_SPEAKER",
    "METHOD_VANILLA",
    "RESULT_COLUMNS",
    "WER_COLUMNS",
    "RatioTable",
    "expected_wer",
    "judge_score_ratio",
    "wer_ratio",
]
