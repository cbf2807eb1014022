"""The GLMM fits: one family with a random intercept, and the joint WER model of eq. 4-5 (paper §III-A)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.metrics.glmm.inputs import (
    _as_cluster,
    _as_design,
    _as_vector,
    _check_counts,
    _check_design,
    _check_nagq,
    _check_separation,
    _standard_errors,
    _warn_dropped,
)
from harness.metrics.glmm.likelihood import _Evaluator, _Problem
from harness.metrics.glmm.optimiser import _SINGULAR_SIGMA, _Fit, _maximise
from harness.metrics.glmm.results import (
    DELSUB_PREFIX,
    INSERTIONS_PREFIX,
    LOADING_NAME,
    SIGMA_NAME,
    Family,
    GLMMResult,
    JointWERFit,
)


def fit_random_intercept(
    y: Sequence[float] | np.ndarray,
    X: np.ndarray | pd.DataFrame,
    cluster: Sequence[object] | np.ndarray,
    family: Family,
    trials: Sequence[float] | np.ndarray | None = None,
    offset: Sequence[float] | np.ndarray | None = None,
    nagq: int = 10,
    column_names: Sequence[str] | None = None,
) -> GLMMResult:
    """Fit ``y ~ X + offset + (1 | cluster)`` by maximum likelihood with ``nagq``-point adaptive
    Gauss-Hermite quadrature (:mod:`harness.metrics.glmm`, :mod:`~harness.metrics.glmm.likelihood`; paper
    §III-A, eq. 1-5).

    ``family="poisson"``: log link, ``offset`` typically ``log N``. ``family="binomial"``: logit link,
    ``y`` successes out of ``trials``. ``X`` must contain the intercept column if one is wanted; column
    names come from ``column_names``, a DataFrame's columns, or default to ``x0, x1, ...``.
    """
    if family not in ("poisson", "binomial"):
        raise ValueError(f"family must be 'poisson' or 'binomial', got {family!r}")
    design, names = _as_design(X, column_names, "X")
    n = design.shape[0]
    y_arr = _as_vector(y, n, "y")
    cluster_arr = _as_cluster(cluster, n)
    offset_arr = np.zeros(n) if offset is None else _as_vector(offset, n, "offset")
    if family == "binomial":
        if trials is None:
            raise ValueError("family='binomial' needs trials (N per row)")
        trials_arr = _as_vector(trials, n, "trials")
        _check_counts(trials_arr, "trials")
    else:
        if trials is not None:
            raise ValueError("trials is only used with family='binomial'; pass log N as offset for poisson")
        trials_arr = np.zeros(n)
    _check_counts(y_arr, "y")
    if family == "binomial" and np.any(y_arr > trials_arr):
        raise ValueError(f"y exceeds trials in {int(np.sum(y_arr > trials_arr))} rows")

    keep = trials_arr > 0 if family == "binomial" else np.ones(n, dtype=bool)
    n_dropped = _warn_dropped(keep)
    is_binomial = np.full(int(keep.sum()), family == "binomial")
    _check_design(design[keep], names, "X")
    _check_separation(design[keep], names, y_arr[keep], trials_arr[keep], is_binomial, "X")

    problem = _Problem.build(
        y=y_arr[keep],
        trials=trials_arr[keep],
        is_binomial=is_binomial,
        offset=offset_arr[keep],
        design=design[keep],
        cluster=cluster_arr[keep],
        loaded=np.zeros(int(keep.sum()), dtype=bool),
    )
    fit = _maximise(problem, nagq=_check_nagq(nagq), estimate_loading=False, names=names)
    fields = _fit_fields(fit, problem, names, [*names, SIGMA_NAME], nagq, n_dropped, problem.n_obs)
    return GLMMResult(family=family, **fields)


def fit_joint_wer_model(
    insertions: Sequence[float] | np.ndarray,
    delsub: Sequence[float] | np.ndarray,
    n_words: Sequence[float] | np.ndarray,
    X: np.ndarray | pd.DataFrame,
    cluster: Sequence[object] | np.ndarray,
    *,
    X_delsub: np.ndarray | pd.DataFrame | None = None,
    nagq: int = 10,
    column_names: Sequence[str] | None = None,
    delsub_column_names: Sequence[str] | None = None,
    estimate_loading: bool = False,
    start: JointWERFit | None = None,
) -> JointWERFit:
    """Joint maximum-likelihood fit of eq. 4-5 with one speaker intercept shared by both components.

    For utterance ``j`` of speaker ``i`` (``u_i ~ N(0, 1)``, ``r_i = sigma u_i``)::

        C^ins_ij     ~ Poisson(N_ij exp(x_ij' theta_ins + loading * r_i))                 (eq. 2, 4)
        C^del+sub_ij ~ Binomial(N_ij, expit(x_ij' theta_del + r_i))                       (eq. 3, 5)

    Each speaker's integral is one-dimensional over the product of both components' likelihoods and is
    approximated by ``nagq``-point adaptive Gauss-Hermite quadrature. The paper's model has
    ``loading = 1`` (the default); ``estimate_loading=True`` frees it so that a speaker effect may be
    stronger, weaker or of opposite sign for insertions than for deletions+substitutions while remaining
    one latent variable (``sigma`` stays the SD on the deletion+substitution logit scale).

    ``X`` (the fixed-effect design, intercept included) is used for both components unless ``X_delsub``
    is given. Utterances with ``N = 0`` are dropped with a warning (count in ``n_dropped_zero_trials``).
    ``start``, a previous fit of the same design, warm-starts the optimiser (used by the bootstrap).
    """
    design_ins, names_ins = _as_design(X, column_names, "X")
    n = design_ins.shape[0]
    if X_delsub is None:
        design_del, names_del = design_ins, names_ins
    else:
        design_del, names_del = _as_design(X_delsub, delsub_column_names, "X_delsub")
        if design_del.shape[0] != n:
            raise ValueError(f"X_delsub has {design_del.shape[0]} rows but X has {n}")
    ins = _as_vector(insertions, n, "insertions")
    dels = _as_vector(delsub, n, "delsub")
    words = _as_vector(n_words, n, "n_words")
    cluster_arr = _as_cluster(cluster, n)
    for values, name in ((ins, "insertions"), (dels, "delsub"), (words, "n_words")):
        _check_counts(values, name)
    if np.any(dels > words):
        raise ValueError(f"delsub exceeds n_words in {int(np.sum(dels > words))} rows")

    keep = words > 0
    n_dropped = _warn_dropped(keep)
    ins, dels, words, cluster_arr = ins[keep], dels[keep], words[keep], cluster_arr[keep]
    design_ins, design_del = design_ins[keep], design_del[keep]
    m = ins.size
    _check_design(design_ins, names_ins, "X")
    _check_design(design_del, names_del, "X_delsub" if X_delsub is not None else "X")
    _check_separation(design_ins, names_ins, ins, words, np.zeros(m, dtype=bool), "X (insertions)")
    _check_separation(design_del, names_del, dels, words, np.ones(m, dtype=bool), "X (deletions+substitutions)")

    p_ins, p_del = design_ins.shape[1], design_del.shape[1]
    stacked = np.zeros((2 * m, p_ins + p_del))
    stacked[:m, :p_ins] = design_ins
    stacked[m:, p_ins:] = design_del
    problem = _Problem.build(
        y=np.concatenate([ins, dels]),
        trials=np.concatenate([np.zeros(m), words]),
        is_binomial=np.concatenate([np.zeros(m, dtype=bool), np.ones(m, dtype=bool)]),
        offset=np.concatenate([np.log(words), np.zeros(m)]),
        design=stacked,
        cluster=np.concatenate([cluster_arr, cluster_arr]),
        loaded=np.concatenate([np.ones(m, dtype=bool), np.zeros(m, dtype=bool)]),
    )
    coef_names = [INSERTIONS_PREFIX + c for c in names_ins] + [DELSUB_PREFIX + c for c in names_del]
    start_theta = None
    if start is not None:
        start_theta = start.params.to_numpy(dtype=float)
        if estimate_loading and not start.loading_estimated:
            start_theta = np.append(start_theta, start.loading)
        elif not estimate_loading and start.loading_estimated:
            start_theta = start_theta[:-1]
        if start_theta.size != len(coef_names) + 1 + int(estimate_loading):
            raise ValueError("start does not match the design of this fit")
    fit = _maximise(
        problem, nagq=_check_nagq(nagq), estimate_loading=estimate_loading, start=start_theta, names=coef_names
    )
    param_names = [*coef_names, SIGMA_NAME] + ([LOADING_NAME] if estimate_loading else [])
    return JointWERFit(
        loading=float(fit.theta[len(coef_names) + 1]) if estimate_loading else 1.0,
        loading_estimated=estimate_loading,
        **_fit_fields(fit, problem, coef_names, param_names, nagq, n_dropped, m),
    )


def marginal_loglik(
    y: np.ndarray,
    X: np.ndarray,
    cluster: np.ndarray,
    family: Family,
    beta: np.ndarray,
    sigma: float,
    trials: np.ndarray | None = None,
    offset: np.ndarray | None = None,
    nagq: int = 10,
) -> float:
    """The full marginal log-likelihood at given ``beta`` and ``sigma`` by ``nagq``-point adaptive
    Gauss-Hermite quadrature (the objective :func:`fit_random_intercept` maximises), without fitting."""
    if family not in ("poisson", "binomial"):
        raise ValueError(f"family must be 'poisson' or 'binomial', got {family!r}")
    design, _ = _as_design(X, None, "X")
    n = design.shape[0]
    problem = _Problem.build(
        y=_as_vector(y, n, "y"),
        trials=np.zeros(n) if trials is None else _as_vector(trials, n, "trials"),
        is_binomial=np.full(n, family == "binomial"),
        offset=np.zeros(n) if offset is None else _as_vector(offset, n, "offset"),
        design=design,
        cluster=_as_cluster(cluster, n),
        loaded=np.zeros(n, dtype=bool),
    )
    evaluator = _Evaluator(problem, _check_nagq(nagq), estimate_loading=False)
    theta = np.append(np.asarray(beta, dtype=float) * problem.column_scale, sigma)
    return evaluator.loglik_and_gradient(theta)[0]


def _fit_fields(
    fit: _Fit, problem: _Problem, coef_names: list[str], param_names: list[str], nagq: int, n_dropped: int, n_obs: int
) -> dict[str, object]:
    """The fields of :class:`~harness.metrics.glmm.results.GLMMFit` from the optimiser's result."""
    p = len(coef_names)
    return {
        "coef": pd.Series(fit.theta[:p], index=coef_names),
        "se": pd.Series(_standard_errors(fit.cov, p), index=coef_names),
        "cov": pd.DataFrame(fit.cov, index=param_names, columns=param_names),
        "cov_robust": pd.DataFrame(fit.robust_cov, index=param_names, columns=param_names),
        "loglik": fit.loglik,
        "n_obs": n_obs,
        "n_clusters": problem.n_clusters,
        "converged": fit.converged,
        "message": fit.message,
        "singular": bool(fit.theta[p] < _SINGULAR_SIGMA),
        "sigma": float(fit.theta[p]),
        "random_effects": pd.Series(fit.theta[p] * fit.modes, index=problem.cluster_labels, name="intercept"),
        "nagq": nagq,
        "n_iterations": fit.n_iterations,
        "n_dropped_zero_trials": n_dropped,
        "n_singleton_clusters": problem.n_singleton_clusters,
    }
