"""The CR2 (Bell-McCaffrey) sandwich of the linear mixed model and its Satterthwaite degrees of freedom
(:func:`harness.metrics.glmm.linear.cluster_robust_cr2`), against a full-matrix implementation of Pustejovsky &
Tipton (2018, eq. 3-11) written here from the formulas, and its defining property: exactly unbiased under the
working model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

from harness.metrics.glmm import fit_linear_mixed


def clustered(seed: int = 0, clusters: int = 7):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, clusters)
    cluster = np.repeat(np.arange(clusters), sizes)
    n = len(cluster)
    group = (np.arange(clusters) % 2)[cluster].astype(float)  # a cluster-level column, as a speaker's group
    design = np.column_stack([np.ones(n), group, rng.normal(size=n)])
    y = design @ [1.0, 0.5, -0.3] + rng.normal(0, 0.7, clusters)[cluster] + rng.normal(0, 1.0, n)
    return y, design, cluster


def full_matrix_cr2(design, residual, cluster, gamma, contrast):
    """Pustejovsky & Tipton (2018) with N x N matrices: Phi block-diagonal ``I + gamma J``, W = Phi^-1,
    M = (X'WX)^-1, H = X M X'W; A_i = D_i' B_i^-1/2 D_i with B_i = D_i [(I-H) Phi (I-H)']_ii D_i'; the CR2 sandwich;
    p_i = (I-H)_i.' A_i W_i X_i M c and df = tr(Omega)^2 / tr(Omega^2), Omega_ij = p_i' Phi p_j."""
    labels = np.unique(cluster)
    blocks = [np.eye(int(np.sum(cluster == c))) + gamma for c in labels]
    phi = linalg.block_diag(*blocks)
    w = np.linalg.inv(phi)
    m = np.linalg.inv(design.T @ w @ design)
    residual_maker = np.eye(len(cluster)) - design @ m @ design.T @ w
    middle = residual_maker @ phi @ residual_maker.T
    meat, ps = np.zeros((design.shape[1],) * 2), []
    for c in labels:
        rows = np.flatnonzero(cluster == c)
        upper = np.linalg.cholesky(phi[np.ix_(rows, rows)]).T
        b = upper @ middle[np.ix_(rows, rows)] @ upper.T
        adjust = upper.T @ np.real(linalg.inv(linalg.sqrtm(b))) @ upper
        term = design[rows].T @ w[np.ix_(rows, rows)] @ adjust @ residual[rows]
        meat += np.outer(term, term)
        ps.append(residual_maker[rows].T @ (adjust @ w[np.ix_(rows, rows)] @ design[rows] @ m @ contrast))
    omega = np.array([[p_i @ phi @ p_j for p_j in ps] for p_i in ps])
    return m @ meat @ m, np.trace(omega) ** 2 / np.sum(omega * omega)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cr2_and_its_degrees_of_freedom_match_the_full_matrix_formulas(seed):
    y, design, cluster = clustered(seed)
    fit = fit_linear_mixed(y, design, cluster)
    gamma = (fit.sigma_cluster / fit.sigma_residual) ** 2
    residual = y - design @ fit.coef.to_numpy()
    contrast = np.array([0.0, 1.0, 0.0])
    cov, df = full_matrix_cr2(design, residual, cluster, gamma, contrast)
    np.testing.assert_allclose(fit.cov_robust.to_numpy(), cov, rtol=1e-6, atol=1e-12)
    assert fit.satterthwaite_df(contrast) == pytest.approx(df, rel=1e-6)
    assert 1.0 < df < len(np.unique(cluster))  # a cluster-level contrast: fewer than m - 1 degrees of freedom


def test_cr2_is_unbiased_under_the_working_model_where_cr1_is_not():
    """E[V_CR2] = M exactly when the fitted random intercept is the truth: averaged over many draws at the true
    variance ratio, the CR2 variance of the cluster-level contrast matches the model-based one, CR1's falls short."""
    from harness.metrics.glmm.linear import cluster_robust_cr2

    rng = np.random.default_rng(5)
    _, design, cluster = clustered(0, clusters=8)
    gamma = 0.5
    phi_root = [np.linalg.cholesky(np.eye(int(np.sum(cluster == c))) + gamma) for c in np.unique(cluster)]
    w = np.linalg.inv(linalg.block_diag(*[r @ r.T for r in phi_root]))
    m = np.linalg.inv(design.T @ w @ design)
    cr2, cr1 = [], []
    for _ in range(4000):
        y = np.concatenate([r @ rng.normal(size=len(r)) for r in phi_root])
        residual = y - design @ (m @ design.T @ w @ y)
        cr2.append(cluster_robust_cr2(m, design, residual, cluster, gamma)[0][1, 1])
        scores = np.array([design[cluster == c].T @ (w @ residual)[cluster == c] for c in np.unique(cluster)])
        groups = len(scores)
        cr1.append((m @ (scores.T @ scores * groups / (groups - 1)) @ m)[1, 1])
    assert np.mean(cr2) == pytest.approx(m[1, 1], rel=0.05)
    assert np.mean(cr1) < 0.9 * m[1, 1]
