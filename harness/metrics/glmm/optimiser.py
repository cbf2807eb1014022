"""Maximum-likelihood optimiser of the random-intercept GLMM (paper §III-A).

BFGS on the exact gradient of :mod:`harness.metrics.glmm.likelihood` (started from the GLM fit, with the
GLM information as initial inverse Hessian) is followed by Newton steps on the observed information, the
central finite-difference Jacobian of the gradient. Standard errors of the fixed effects are the square
roots of the fixed-effect block of its inverse over (beta, sigma[, loading]), as lme4's ``vcov`` does
(``use.hessian = TRUE``).

A fit whose optimiser did not reach the convergence criterion (Newton decrement ``g' H^-1 g`` below 1e-8 with
a positive-definite observed information), or whose fixed effects run off to infinity (separation by a
continuous covariate: more than 50 per RMS unit of the column), has ``converged = False`` and the reason in
``message``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import optimize, special

from harness.metrics.glmm.inputs import _gram
from harness.metrics.glmm.likelihood import _Evaluator, _Problem

_DECREMENT_TOLERANCE = 1e-8
_SINGULAR_SIGMA = 1e-4
_DIVERGED_COEFFICIENT = 50.0


@dataclasses.dataclass(frozen=True)
class _Fit:
    theta: np.ndarray
    cov: np.ndarray
    loglik: float
    modes: np.ndarray
    converged: bool
    message: str
    n_iterations: int
    robust_cov: np.ndarray | None = None
    """The cluster-robust covariance (:func:`_cluster_robust`), in the order of ``cov``."""


def _glm_start(problem: _Problem) -> np.ndarray:
    """Fixed effects of the GLM without random intercept (IRLS, canonical links), scaled design."""
    evaluator = _Evaluator(problem, 1, estimate_loading=False)
    design = problem.design
    binomial = problem.is_binomial
    beta = np.zeros(design.shape[1])
    rate = np.where(binomial, (problem.y + 0.5) / (problem.trials + 1.0), problem.y + 0.5)
    eta = np.where(binomial, special.logit(rate), np.log(rate))
    working = eta - problem.offset
    weights = np.where(binomial, problem.trials * rate * (1 - rate), rate)
    for _ in range(50):
        root = np.sqrt(weights)
        weighted = design * root[:, None]
        new_beta = np.linalg.solve(_gram(weighted, weighted), weighted.T @ (working * root))
        done = np.max(np.abs(new_beta - beta)) < 1e-8
        beta = new_beta
        if done:
            break
        eta = problem.offset + design @ beta
        rows = evaluator.moments(eta)
        weights = np.maximum(rows.variance, 1e-10)
        working = eta - problem.offset + (problem.y - rows.mean) / weights
    return beta


def _maximise(
    problem: _Problem,
    *,
    nagq: int,
    estimate_loading: bool,
    start: np.ndarray | None = None,
    names: Sequence[str] = (),
) -> _Fit:
    """BFGS on the exact gradient (initial inverse Hessian from the GLM information), then Newton steps
    with the finite-difference observed information until the Newton decrement ``g' H^-1 g`` is below 1e-8.

    The likelihood is even in sigma (``(sigma, u) -> (-sigma, -u)``), so sigma is optimised unconstrained
    and reported as ``|sigma|``; ``sigma = 0`` is then an interior point and needs no bound handling.
    """
    if problem.n_singleton_clusters == problem.n_clusters:
        warnings.warn(
            "every cluster has a single observation: sigma then measures over-dispersion, not a cluster effect",
            UserWarning,
            stacklevel=3,
        )
    evaluator = _Evaluator(problem, nagq, estimate_loading)
    p = problem.design.shape[1]
    glm_beta = _glm_start(problem)
    if start is None:
        theta0 = np.concatenate([glm_beta, [0.5], [1.0] if estimate_loading else []])
    else:
        theta0 = np.asarray(start, dtype=float).copy()
        theta0[:p] *= problem.column_scale
        theta0[p] = max(theta0[p], 0.05)

    def objective(theta):
        value, grad = evaluator.loglik_and_gradient(theta)
        if not np.isfinite(value) or not np.all(np.isfinite(grad)):
            return np.inf, np.zeros_like(theta)
        return -value, -grad

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        opt = optimize.minimize(
            objective,
            theta0,
            jac=True,
            method="BFGS",
            options={"gtol": 1e-6, "maxiter": 1000, "hess_inv0": _initial_inverse_hessian(evaluator, glm_beta)},
        )
    theta = opt.x.copy()
    n_iterations = int(opt.nit)
    converged, message = False, "Newton refinement did not reach the convergence criterion"
    information = -evaluator.hessian(theta)
    information_at = theta.copy()
    free = np.arange(theta.size)
    for _ in range(20):
        loglik, grad = evaluator.loglik_and_gradient(theta)
        if not np.isfinite(loglik):
            message = "the optimiser ended where the log-likelihood is not finite"
            break
        free = _free_parameters(theta, p, estimate_loading)
        try:
            chol = np.linalg.cholesky(information[np.ix_(free, free)])
        except np.linalg.LinAlgError:
            message = "observed information is not positive definite at the optimum"
            break
        step = np.zeros_like(theta)
        step[free] = np.linalg.solve(chol.T, np.linalg.solve(chol, grad[free]))
        decrement = float(grad[free] @ step[free])
        if decrement < _DECREMENT_TOLERANCE:
            converged, message = True, "converged"
            break
        candidate = theta + step
        if not evaluator.loglik_and_gradient(candidate, want_gradient=False)[0] >= loglik - 1e-9:
            if np.array_equal(information_at, theta):
                message = f"Newton refinement cannot improve the log-likelihood (decrement {decrement:.3g})"
                break
            information = -evaluator.hessian(theta)
            information_at = theta.copy()
            continue
        theta = candidate
        n_iterations += 1

    if converged and np.any(np.abs(theta - information_at) > 1e-4 * np.maximum(1.0, np.abs(theta))):
        information = -evaluator.hessian(theta)
    cov = np.full_like(information, np.nan)
    try:
        cov[np.ix_(free, free)] = np.linalg.inv(information[np.ix_(free, free)])
    except np.linalg.LinAlgError:
        converged, message = False, "observed information is singular at the optimum"
    robust = _cluster_robust(evaluator, theta, cov, free)
    loglik = evaluator.loglik_and_gradient(theta, want_gradient=False)[0]
    if theta[p] < 0:
        flip = np.ones(theta.size)
        flip[p] = -1.0
        theta, cov, robust = theta * flip, cov * np.outer(flip, flip), robust * np.outer(flip, flip)
        evaluator.modes = -evaluator.modes
    beta = theta[:p] / problem.column_scale
    unscale = np.concatenate([1.0 / problem.column_scale, np.ones(theta.size - p)])
    cov = cov * np.outer(unscale, unscale)
    robust = robust * np.outer(unscale, unscale)
    diverged = ~(np.abs(theta[:p]) <= _DIVERGED_COEFFICIENT)
    if diverged.any():
        converged = False
        labels = [names[k] for k in np.flatnonzero(diverged)] if names else np.flatnonzero(diverged).tolist()
        message = (
            f"fixed effects {labels} are not finite or exceed {_DIVERGED_COEFFICIENT:g} per RMS unit of their "
            "column: the likelihood has no finite maximum (separation by a covariate?); the fit is not usable"
        )
    theta_out = np.concatenate([beta, theta[p:]])
    return _Fit(theta_out, cov, loglik, evaluator.modes.copy(), converged, message, n_iterations, robust)


def _cluster_robust(evaluator: _Evaluator, theta: np.ndarray, cov: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The cluster-robust (sandwich) covariance ``V B V`` at ``theta``: ``V`` the inverse observed information,
    ``B = m / (m - 1) sum_i s_i s_i'`` over the ``m`` clusters' scores ``s_i`` (Liang & Zeger 1986, with the CR1
    small-sample factor). It stays valid where the random-effects structure is wrong (e.g. clusters whose effect
    differs between the parts of a joint design), as long as the clusters are independent; NaN where ``V`` is."""
    robust = np.full_like(cov, np.nan)
    scores = evaluator.loglik_and_gradient(theta, per_cluster=True)[1]
    m = scores.shape[0]
    if m < 2 or not np.all(np.isfinite(scores)) or not np.all(np.isfinite(cov[np.ix_(free, free)])):
        return robust
    inner = scores[:, free].T @ scores[:, free] * m / (m - 1)
    bread = cov[np.ix_(free, free)]
    robust[np.ix_(free, free)] = bread @ inner @ bread
    return robust


def _initial_inverse_hessian(evaluator: _Evaluator, glm_beta: np.ndarray) -> np.ndarray:
    """Inverse GLM Fisher information for the fixed effects, 0.01 for sigma and the loading."""
    pb = evaluator.problem
    rows = evaluator.moments(pb.offset + pb.design @ glm_beta)
    k = evaluator.n_params
    p = pb.design.shape[1]
    inverse = np.eye(k) * 0.01
    information = _gram(pb.design, pb.design * np.maximum(rows.variance, 1e-8)[:, None])
    try:
        inverse[:p, :p] = np.linalg.inv(information + 1e-8 * np.eye(p))
    except np.linalg.LinAlgError:
        inverse[:p, :p] = np.eye(p)
    inverse = 0.5 * (inverse + inverse.T)
    if np.any(np.linalg.eigvalsh(inverse) <= 0):
        return np.eye(k)
    return inverse


def _free_parameters(theta: np.ndarray, p: int, estimate_loading: bool) -> np.ndarray:
    """Every parameter except the loading when sigma is ~0 (the loading is then not identified)."""
    free = np.ones(theta.size, dtype=bool)
    if estimate_loading and abs(theta[p]) < _SINGULAR_SIGMA:
        free[p + 1] = False
    return np.flatnonzero(free)
