"""Generalised linear mixed models with one Gaussian random intercept per cluster (paper §III-A).

For observation ``j`` of cluster ``i`` the linear predictor is::

    eta_ij = offset_ij + x_ij' beta + a_ij * sigma * u_i,      u_i ~ N(0, 1)             (eq. 1)

with ``a_ij = 1`` except in a joint model's loaded component (see :func:`fit_joint_wer_model`).
Families, both with their canonical link:

    poisson    y_ij ~ Poisson(exp(eta_ij))          offset = log N_ij for error counts     (eq. 2, 4)
    binomial   y_ij ~ Binomial(N_ij, expit(eta_ij))                                        (eq. 3, 5)

The marginal log-likelihood ``sum_i log int prod_j f(y_ij | u) phi(u) du`` is approximated by ``nagq``-point
adaptive Gauss-Hermite quadrature, lme4's ``glmer(nAGQ=)`` rule, and maximised by BFGS then Newton steps;
standard errors come from the observed information, as lme4's ``vcov``. The reported log-likelihood is the
full one, including ``-log y!`` and ``log C(N, y)``. The linear random-intercept model
(:func:`fit_linear_mixed`, paper §IV-V) is fitted by REML.

Modules:

* :mod:`~harness.metrics.glmm.fitting`: :func:`fit_random_intercept`, :func:`fit_joint_wer_model`,
  :func:`marginal_loglik`;
* :mod:`~harness.metrics.glmm.results`: the result objects, one base class with ``params``, ``bse``,
  ``conf_int`` and ``summary()`` in the manner of statsmodels;
* :mod:`~harness.metrics.glmm.likelihood`: the quadrature, the likelihood and its exact gradient;
* :mod:`~harness.metrics.glmm.optimiser`: the maximisation and the observed information;
* :mod:`~harness.metrics.glmm.linear`: :func:`fit_linear_mixed`;
* :mod:`~harness.metrics.glmm.inputs`: input validation.

Input decisions (documented contract, exercised by ``tests/metrics/test_glmm.py``):

* NaN/inf anywhere, negative or non-integer counts, ``y > N``, length mismatches, fewer than two clusters:
  ``ValueError`` naming the argument.
* Rows with ``N = 0`` carry no information (binomial) or make the WER offset ``log 0`` undefined: they are
  dropped, the count is reported in ``n_dropped_zero_trials`` and a ``UserWarning`` is issued.
* A rank-deficient design: ``ValueError`` naming the columns of the linear dependency.
* An indicator column (values 0/1) whose rows at either value have no events (or only events, for the
  binomial) makes its coefficient infinite (perfect separation): ``ValueError`` naming the column.
* Clusters with a single observation are allowed silently (they inform beta and sigma through the
  marginal likelihood, as in lme4) and counted in ``n_singleton_clusters``; if *every* cluster is a
  singleton a ``UserWarning`` says that sigma then only measures over-dispersion.
* A fit whose optimiser did not reach the convergence criterion (Newton decrement below 1e-8 with a
  positive-definite observed information), or whose fixed effects run off to infinity (separation by a
  continuous covariate: more than 50 per RMS unit of the column), has ``converged = False`` and the
  reason in ``message``; it is returned for diagnosis, never silently used downstream.
"""

from harness.metrics.glmm.fitting import (
    fit_joint_wer_model,
    fit_random_intercept,
    marginal_loglik,
)
from harness.metrics.glmm.linear import fit_linear_mixed
from harness.metrics.glmm.results import (
    DELSUB_PREFIX,
    INSERTIONS_PREFIX,
    LOADING_NAME,
    SIGMA_NAME,
    Family,
    GLMMFit,
    GLMMResult,
    JointWERFit,
    LinearMixedResult,
    MixedModelResult,
)

__all__ = [
    "DELSUB_PREFIX",
    "INSERTIONS_PREFIX",
    "LOADING_NAME",
    "SIGMA_NAME",
    "Family",
    "GLMMFit",
    "GLMMResult",
    "JointWERFit",
    "LinearMixedResult",
    "MixedModelResult",
    "fit_joint_wer_model",
    "fit_linear_mixed",
    "fit_random_intercept",
    "marginal_loglik",
]
