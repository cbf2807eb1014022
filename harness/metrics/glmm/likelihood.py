"""The marginal likelihood of a random-intercept GLMM and its exact gradient (paper §III-A, eq. 1-5).

For observation ``j`` of cluster ``i`` with ``eta_ij = offset_ij + x_ij' beta + a_ij sigma u`` the log
integrand of cluster ``i`` is ``h_i(u) = sum_j log f(y_ij | u) + log phi(u)``. The marginal log-likelihood is
``sum_i log int exp(h_i(u)) du``; each cluster's integral is approximated by adaptive Gauss-Hermite
quadrature (Abramowitz & Stegun 1964, paper [1]) centred on the conditional mode ``u_i*`` and scaled by
``s_i = (-h_i''(u_i*))^{-1/2}``::

    log L_i ~= log(sqrt(2) s_i) + logsumexp_k [ log w_k + z_k^2 + h_i(u_i* + sqrt(2) s_i z_k) ]

(``z_k``, ``w_k``: the ``nagq``-point Gauss-Hermite rule; ``nagq = 1`` is the Laplace approximation).
This is the rule lme4's ``glmer(nAGQ=)`` uses, parametrised like lme4 (spherical ``u``, ``sigma`` itself
rather than ``log sigma``, so a fit at ``sigma = 0`` is regular rather than at ``log sigma = -inf``).
The log-likelihood is the full one, including ``-log y!`` and ``log C(N, y)``. (For ``nAGQ > 1`` lme4's
``logLik`` omits the saturated model's log-likelihood; see ``tests/support/reference/lme4/fit.R``.)

Computation: conditional modes by a damped Newton iteration vectorised over clusters; the quadrature as
(observations x nodes) arrays summed per cluster. The gradient of the quadrature approximation is exact:
the dependence of ``u_i*`` and ``s_i`` on the parameters is carried by implicit differentiation of
``h_i'(u_i*) = 0``. The observed information is the central finite-difference Jacobian of that gradient.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import special

_EXP_LIMIT = 600.0
_HALF_EXP_LIMIT = 300.0
_MODE_TOLERANCE = 1e-10
_MODE_MAX_ITER = 100
_MODE_MAX_HALVINGS = 40
_MODE_MAX_ETA_STEP = 5.0
_MODE_START_LIMIT = 8.0
_SAFE_ETA = 300.0


@dataclasses.dataclass(frozen=True)
class _Problem:
    """Rows sorted by family (Poisson block first) then cluster; every cluster appears in every non-empty
    block. ``design`` columns are divided by ``column_scale`` (their RMS) for conditioning."""

    y: np.ndarray
    trials: np.ndarray
    offset: np.ndarray
    design: np.ndarray
    column_scale: np.ndarray
    loaded: np.ndarray
    codes: np.ndarray
    n_poisson: int
    block_starts: tuple[np.ndarray, ...]
    cluster_labels: pd.Index
    log_const: np.ndarray
    n_singleton_clusters: int

    @property
    def n_obs(self) -> int:
        return int(self.y.size)

    @property
    def n_clusters(self) -> int:
        return int(self.cluster_labels.size)

    @property
    def is_binomial(self) -> np.ndarray:
        return np.arange(self.y.size) >= self.n_poisson

    @classmethod
    def build(cls, *, y, trials, is_binomial, offset, design, cluster, loaded) -> _Problem:
        codes, labels = pd.factorize(pd.Series(cluster), sort=False)
        order = np.lexsort((codes, is_binomial))
        codes, is_binomial = codes[order], is_binomial[order]
        y, trials = y[order], trials[order]
        n_poisson = int(np.sum(~is_binomial))
        block_starts = []
        for block in (slice(0, n_poisson), slice(n_poisson, y.size)):
            block_codes = codes[block]
            if block_codes.size == 0:
                continue
            if np.unique(block_codes).size != labels.size:
                raise ValueError("every cluster must have rows in every family of a joint model")
            block_starts.append(np.flatnonzero(np.r_[True, block_codes[1:] != block_codes[:-1]]))
        log_const = np.where(
            is_binomial,
            special.gammaln(trials + 1) - special.gammaln(y + 1) - special.gammaln(trials - y + 1),
            -special.gammaln(y + 1),
        )
        scale = np.sqrt(np.mean(design**2, axis=0))
        scale[scale == 0] = 1.0
        one_row_per_utterance = codes[is_binomial] if is_binomial.any() else codes
        return cls(
            y=y,
            trials=trials,
            offset=offset[order],
            design=design[order] / scale,
            column_scale=scale,
            loaded=loaded[order],
            codes=codes,
            n_poisson=n_poisson,
            block_starts=tuple(block_starts),
            cluster_labels=pd.Index(labels),
            log_const=log_const,
            n_singleton_clusters=int(np.sum(np.bincount(one_row_per_utterance) == 1)),
        )


@dataclasses.dataclass
class _RowMoments:
    """Per row at given linear predictors: ``y eta - A(eta)`` and the first three derivatives of ``A``."""

    kernel: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    third: np.ndarray


class _Evaluator:
    """Marginal log-likelihood and its exact gradient in ``theta = (beta_scaled, sigma[, loading])``."""

    def __init__(self, problem: _Problem, nagq: int, estimate_loading: bool):
        self.problem = problem
        self.estimate_loading = estimate_loading
        nodes, weights = np.polynomial.hermite.hermgauss(nagq)
        self.offsets = np.sqrt(2.0) * nodes
        self.log_weights = np.log(weights) + nodes**2
        self.modes = np.zeros(problem.n_clusters)
        self.effects = np.zeros(problem.n_clusters)
        self.n_evaluations = 0
        self.n_params = problem.design.shape[1] + 1 + int(estimate_loading)
        n_poisson = problem.n_poisson
        self._blocks = [
            block for block in (slice(0, n_poisson), slice(n_poisson, problem.n_obs)) if block.stop > block.start
        ]
        self._poisson = slice(0, n_poisson)
        self._binomial = slice(n_poisson, problem.n_obs)

    def cluster_sum(self, values: np.ndarray) -> np.ndarray:
        total = None
        for block, starts in zip(self._blocks, self.problem.block_starts, strict=True):
            part = np.add.reduceat(values[block], starts, axis=0)
            total = part if total is None else total + part
        return total

    def moments(self, eta: np.ndarray, odds: np.ndarray | None = None, derivatives: bool = True) -> _RowMoments:
        """Row moments at ``eta``; ``odds = exp(eta)`` may be passed when it is cheaper to form by parts.
        Without ``derivatives`` only ``kernel`` and ``mean`` are filled."""
        pb = self.problem
        extreme = np.max(np.abs(eta)) > _SAFE_ETA
        if odds is None or extreme:
            odds = np.exp(np.clip(eta, -_EXP_LIMIT, _EXP_LIMIT))
        extra = (slice(None),) + (None,) * (eta.ndim - 1)
        kernel = np.empty_like(eta)
        mean = np.empty_like(eta)
        variance = np.empty_like(eta) if derivatives else None
        third = np.empty_like(eta) if derivatives else None
        if pb.n_poisson:
            block = self._poisson
            rate = odds[block]
            kernel[block] = pb.y[block][extra] * eta[block] - rate
            mean[block] = rate
            if derivatives:
                variance[block] = third[block] = rate
        if pb.n_poisson < pb.n_obs:
            block = self._binomial
            n_trials = pb.trials[block][extra]
            if extreme:
                prob = special.expit(eta[block])
                softplus = np.logaddexp(0.0, eta[block])
            else:
                block_odds = odds[block]
                prob = block_odds / (1.0 + block_odds)
                softplus = np.log1p(block_odds)
            kernel[block] = pb.y[block][extra] * eta[block] - n_trials * softplus
            mean[block] = n_trials * prob
            if derivatives:
                variance[block] = mean[block] * (1.0 - prob)
                third[block] = variance[block] * (1.0 - 2.0 * prob)
        return _RowMoments(kernel, mean, variance, third)

    def _random_odds(self, u_nodes: np.ndarray, sigma: float, loading: np.ndarray) -> np.ndarray:
        """``exp(a_ij sigma u)`` at every row and node, exponentiated per cluster and block (``a`` is
        constant within a family block), then spread to rows."""
        pb = self.problem
        parts = []
        for block in self._blocks:
            exponent = np.clip(loading[block.start] * sigma * u_nodes, -_HALF_EXP_LIMIT, _HALF_EXP_LIMIT)
            parts.append(np.exp(exponent)[pb.codes[block]])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _unpack(self, theta: np.ndarray):
        pb = self.problem
        p = pb.design.shape[1]
        beta, sigma = theta[:p], theta[p]
        loading_value = theta[p + 1] if self.estimate_loading else 1.0
        loading = np.where(pb.loaded, loading_value, 1.0)
        return beta, sigma, loading

    def conditional_modes(self, eta0: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, _RowMoments, bool]:
        """Vectorised damped Newton iteration for ``argmax_u h_i(u)`` (strictly concave: ``h'' <= -1``),
        warm-started at the last accepted random effects ``sigma u`` (rescaled to the current sigma, so a
        sign flip or a jump of sigma in a line search does not start Newton far from the modes). Steps are
        capped at 5 units of the linear predictor.

        Returns the modes, the row moments there and whether the iteration converged (it may not at the
        extreme parameters a line search probes, e.g. ``eta`` in the hundreds, where Newton on ``exp`` moves
        one unit per step; the caller then reports the point as infeasible).
        """
        pb = self.problem
        u = self.modes.copy()
        rows = self.moments(eta0 + a * u[pb.codes])
        value = self.cluster_sum(rows.kernel) - 0.5 * u**2
        largest_loading = max(float(np.max(np.abs(a))), 1e-12)
        for _ in range(_MODE_MAX_ITER):
            score = self.cluster_sum(a * (pb.y - rows.mean)) - u
            info = self.cluster_sum(a * a * rows.variance) + 1.0
            step = score / info
            step *= np.minimum(1.0, _MODE_MAX_ETA_STEP / (largest_loading * np.abs(step) + 1e-300))
            if not np.all(np.isfinite(step)):
                return u, rows, False
            if np.max(np.abs(step) / np.maximum(1.0, np.abs(u))) < _MODE_TOLERANCE:
                return u, rows, True
            factor = np.ones_like(u)
            for _ in range(_MODE_MAX_HALVINGS):
                candidate = u + factor * step
                candidate_rows = self.moments(eta0 + a * candidate[pb.codes])
                candidate_value = self.cluster_sum(candidate_rows.kernel) - 0.5 * candidate**2
                worse = ~(candidate_value >= value - 1e-12 * np.abs(value))
                if not worse.any():
                    break
                factor = np.where(worse, 0.5 * factor, factor)
            else:
                candidate = np.where(worse, u, candidate)
                candidate_rows = self.moments(eta0 + a * candidate[pb.codes])
                candidate_value = self.cluster_sum(candidate_rows.kernel) - 0.5 * candidate**2
            u, rows, value = candidate, candidate_rows, candidate_value
        return u, rows, False

    def loglik_and_gradient(self, theta: np.ndarray, want_gradient: bool = True, per_cluster: bool = False):
        """The log-likelihood and its gradient at ``theta``; with ``per_cluster`` the gradient of each cluster's
        term, one row per cluster (the scores of a cluster-robust covariance: every row term below belongs to one
        cluster's integral, so the total gradient is their sum)."""
        self.n_evaluations += 1
        pb = self.problem
        beta, sigma, loading = self._unpack(theta)
        a = loading * sigma
        eta0 = pb.offset + pb.design @ beta
        if sigma:
            self.modes = np.clip(self.effects / sigma, -_MODE_START_LIMIT, _MODE_START_LIMIT)
        u_hat, at_mode, found = self.conditional_modes(eta0, a)
        if not found:
            return -np.inf, np.full(self.n_params, np.nan) if want_gradient else None
        self.modes, self.effects = u_hat, sigma * u_hat
        codes = pb.codes

        info = self.cluster_sum(a * a * at_mode.variance) + 1.0
        third = -self.cluster_sum(a**3 * at_mode.third)
        scale = 1.0 / np.sqrt(info)

        u_nodes = u_hat[:, None] + scale[:, None] * self.offsets[None, :]
        u_rows_nodes = u_nodes[codes]
        odds = np.exp(np.clip(eta0, -_HALF_EXP_LIMIT, _HALF_EXP_LIMIT))[:, None] * self._random_odds(
            u_nodes, sigma, loading
        )
        at_nodes = self.moments(eta0[:, None] + a[:, None] * u_rows_nodes, odds, derivatives=False)
        h = self.cluster_sum(at_nodes.kernel + pb.log_const[:, None]) - 0.5 * u_nodes**2 - 0.5 * np.log(2.0 * np.pi)
        terms = self.log_weights[None, :] + h
        peak = np.max(terms, axis=1)
        weights = np.exp(terms - peak[:, None])
        total = np.sum(weights, axis=1)
        lse = peak + np.log(total)
        loglik = float(np.sum(np.log(np.sqrt(2.0) * scale) + lse))
        if not want_gradient:
            return loglik, None

        weights /= total[:, None]
        mean_nodes = at_nodes.mean
        h_prime = self.cluster_sum(a * pb.y)[:, None] - self.cluster_sum(a[:, None] * mean_nodes) - u_nodes
        d_mean = np.sum(weights * h_prime, axis=1)
        e_mean = np.sum(weights * h_prime * self.offsets[None, :], axis=1)
        f_coef = -0.5 * (scale**2 + scale**3 * e_mean)
        g_coef = (d_mean - f_coef * third) / info

        g_rows, f_rows, u_rows = g_coef[codes], f_coef[codes], u_hat[codes]
        u_bar = np.sum(weights * u_nodes, axis=1)
        row_weights = weights[codes]
        weighted_mean = np.sum(row_weights * mean_nodes, axis=1)
        weighted_u_mean = np.sum(row_weights * u_rows_nodes * mean_nodes, axis=1)
        var_hat, third_hat = at_mode.variance, at_mode.third
        row_beta = pb.y - weighted_mean - g_rows * a * var_hat + f_rows * a * a * third_hat
        grad_beta = pb.design.T @ row_beta

        row_a = (
            pb.y * u_bar[codes]
            - weighted_u_mean
            + g_rows * (pb.y - at_mode.mean - a * var_hat * u_rows)
            + f_rows * (2.0 * a * var_hat + a * a * third_hat * u_rows)
        )
        if per_cluster:
            scores = [self.cluster_sum(pb.design * row_beta[:, None]), self.cluster_sum(loading * row_a)[:, None]]
            if self.estimate_loading:
                scores.append(sigma * self.cluster_sum(np.where(pb.loaded, row_a, 0.0))[:, None])
            return loglik, np.hstack(scores)
        grad = [grad_beta, [np.sum(loading * row_a)]]
        if self.estimate_loading:
            grad.append([sigma * np.sum(row_a[pb.loaded])])
        return loglik, np.concatenate(grad)

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        """Central finite-difference Jacobian of the exact gradient, symmetrised."""
        k = theta.size
        hess = np.empty((k, k))
        saved = self.effects.copy()
        for i in range(k):
            step = 1e-5 * max(1.0, abs(theta[i]))
            columns = []
            for sign in (1.0, -1.0):
                shifted = theta.copy()
                shifted[i] += sign * step
                self.effects = saved.copy()
                columns.append(self.loglik_and_gradient(shifted)[1])
            hess[:, i] = (columns[0] - columns[1]) / (2.0 * step)
        self.effects = saved
        return 0.5 * (hess + hess.T)
