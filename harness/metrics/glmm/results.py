"""Result objects of the mixed-model fits, in the manner of statsmodels' results.

Every result has the fixed effects ``coef`` with standard errors ``se``, the covariance ``cov`` (the inverse
observed information for the GLMMs, paper §III-A; ``sigma^2 (X' V^-1 X)^-1`` for the linear model),
``loglik``, the sample sizes, ``converged``/``message`` and ``singular``. On top of these,
:class:`MixedModelResult` gives

* ``params``: every estimated parameter, the fixed effects followed by the variance parameters (``sigma``
  and, for a joint fit with a free loading, ``loading``; ``sigma_cluster`` and ``sigma_residual`` for the
  linear model);
* ``bse``: their standard errors ``sqrt(diag(cov))`` (NaN where ``cov`` does not cover a parameter, as for
  the linear model's variance components, or where its variance is negative);
* ``conf_int(alpha)``: Wald intervals ``coef +- z_{1-alpha/2} se`` for the fixed effects;
* ``summary(alpha)``: one row per parameter with estimate, standard error, Wald ``z`` and two-sided
  ``p``, and the interval (fixed effects only: a Wald test or interval of a variance parameter is on the
  boundary of its space at 0 and not offered).

:class:`GLMMFit` adds what both quadrature fits share (the speaker SD ``sigma``, the conditional modes,
the quadrature and optimiser bookkeeping); :class:`GLMMResult` is the one-family fit and
:class:`JointWERFit` the joint WER model of eq. 4-5.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from harness.core.values import normal_quantile

Family = Literal["poisson", "binomial"]

SIGMA_NAME = "sigma"
LOADING_NAME = "loading"
INSERTIONS_PREFIX = "ins:"
DELSUB_PREFIX = "delsub:"


@dataclasses.dataclass(frozen=True)
class MixedModelResult:
    """What every mixed-model fit reports (module docstring); subclasses name their variance parameters
    in :meth:`variance_params`."""

    coef: pd.Series
    se: pd.Series
    cov: pd.DataFrame
    loglik: float
    n_obs: int
    n_clusters: int
    converged: bool
    message: str
    singular: bool
    cov_robust: pd.DataFrame | None = dataclasses.field(default=None, kw_only=True, repr=False)
    """The cluster-robust (sandwich) covariance in the order of ``cov``: the inverse information around the clusters'
    summed score outer products, with the CR1 factor ``m / (m - 1)`` (Liang & Zeger 1986). Valid where the random
    intercept misdescribes the clusters (e.g. a speaker whose effect differs between two checkpoints of a joint fit),
    as long as clusters are independent."""

    def variance_params(self) -> dict[str, float]:
        """The estimated variance parameters by name, in the order of ``params``."""
        return {}

    @property
    def params(self) -> pd.Series:
        """Every estimated parameter: the fixed effects, then :meth:`variance_params`."""
        return pd.concat([self.coef, pd.Series(self.variance_params(), dtype=float)])

    @property
    def bse(self) -> pd.Series:
        """Standard errors of :attr:`params`, ``sqrt(diag(cov))``; NaN where ``cov`` has no such parameter."""
        variance = pd.Series(np.diag(self.cov.to_numpy(dtype=float)), index=self.cov.index)
        variance = variance.reindex(self.params.index)
        return np.sqrt(variance.where(variance >= 0))

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Wald intervals ``coef +- z_{1-alpha/2} se`` of the fixed effects (columns ``low``, ``high``)."""
        z = normal_quantile(alpha)
        return pd.DataFrame({"low": self.coef - z * self.se, "high": self.coef + z * self.se})

    def summary(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per parameter: ``estimate``, ``se``, Wald ``z = estimate / se`` and its two-sided ``p``,
        and the ``1 - alpha`` interval ``ci_low``, ``ci_high`` (NaN for the variance parameters). The fit's
        log-likelihood, sample sizes and convergence are in the frame's ``attrs``."""
        params, bse = self.params, self.bse
        fixed = params.index.isin(self.coef.index)
        z = (params / bse).where(fixed)
        interval = self.conf_int(alpha).reindex(params.index)
        table = pd.DataFrame(
            {
                "estimate": params,
                "se": bse,
                "z": z,
                "p": pd.Series(2.0 * stats.norm.sf(np.abs(z.to_numpy(dtype=float))), index=params.index),
                "ci_low": interval["low"],
                "ci_high": interval["high"],
            }
        )
        table.attrs.update(
            model=type(self).__name__,
            loglik=self.loglik,
            n_obs=self.n_obs,
            n_clusters=self.n_clusters,
            converged=self.converged,
            message=self.message,
            singular=self.singular,
        )
        return table


@dataclasses.dataclass(frozen=True)
class GLMMFit(MixedModelResult):
    """What the adaptive Gauss-Hermite GLMM fits share (paper §III-A).

    ``cov`` is the inverse observed information over the fixed effects and the variance parameters;
    ``random_effects`` are the conditional modes ``sigma * u_i*`` (lme4's ``ranef``), indexed by cluster
    label. ``singular`` is true when ``sigma < 1e-4`` (lme4's ``isSingular`` tolerance), in which case the
    model is a GLM in all but name.
    """

    sigma: float
    random_effects: pd.Series
    nagq: int
    n_iterations: int
    n_dropped_zero_trials: int
    n_singleton_clusters: int

    def variance_params(self) -> dict[str, float]:
        return {SIGMA_NAME: self.sigma}


@dataclasses.dataclass(frozen=True)
class GLMMResult(GLMMFit):
    """Maximum-likelihood fit of a one-family random-intercept GLMM.

    ``coef``/``se`` are indexed by the design's column names; ``cov`` covers them and ``sigma``
    (:class:`GLMMFit`).
    """

    family: str


@dataclasses.dataclass(frozen=True)
class JointWERFit(GLMMFit):
    """Joint fit of eq. 4-5: insertions ~ Poisson(offset log N), deletions+substitutions ~ Binomial(N),
    one shared speaker intercept.

    ``coef``, ``se`` and ``cov`` cover every parameter in the order used by :attr:`params`:
    ``ins:<column>`` ..., ``delsub:<column>`` ..., ``sigma`` and, when estimated, ``loading`` (the factor
    on the shared intercept in the insertion component). ``cov`` therefore carries the cross-component
    covariance induced by the shared intercept.
    """

    loading: float
    loading_estimated: bool

    def variance_params(self) -> dict[str, float]:
        """``sigma`` and, when estimated, ``loading``."""
        extra = {SIGMA_NAME: self.sigma}
        if self.loading_estimated:
            extra[LOADING_NAME] = self.loading
        return extra

    @property
    def coef_insertions(self) -> pd.Series:
        return _strip_prefix(self.coef, INSERTIONS_PREFIX)

    @property
    def coef_delsub(self) -> pd.Series:
        return _strip_prefix(self.coef, DELSUB_PREFIX)

    @property
    def se_delsub(self) -> pd.Series:
        return _strip_prefix(self.se, DELSUB_PREFIX)


@dataclasses.dataclass(frozen=True)
class LinearMixedResult(MixedModelResult):
    """REML fit of ``y = X beta + b_cluster + e`` with ``b ~ N(0, sigma_cluster^2)``, ``e ~ N(0, sigma^2)``.

    ``cov`` is ``sigma^2 (X' V^-1 X)^-1`` at the REML variance ratio (the usual fixed-effect covariance of
    lme4 and statsmodels), so ``bse`` is NaN for the variance components; ``loglik`` is the REML
    log-likelihood.
    """

    sigma_cluster: float
    sigma_residual: float
    cr2_parts: object | None = dataclasses.field(default=None, kw_only=True, repr=False)
    """What the Bell-McCaffrey degrees of freedom of a contrast need (:class:`harness.metrics.glmm.linear.CR2Parts`);
    ``cov_robust`` is the CR2 sandwich here (:func:`harness.metrics.glmm.linear.cluster_robust_cr2`), not CR1."""

    def variance_params(self) -> dict[str, float]:
        return {"sigma_cluster": self.sigma_cluster, "sigma_residual": self.sigma_residual}

    def satterthwaite_df(self, contrast) -> float:
        """Bell & McCaffrey's Satterthwaite degrees of freedom of ``contrast' beta`` under the CR2 sandwich (NaN
        without it)."""
        return float("nan") if self.cr2_parts is None else self.cr2_parts.satterthwaite_df(contrast)


def _strip_prefix(series: pd.Series, prefix: str) -> pd.Series:
    selected = series[[name.startswith(prefix) for name in series.index]]
    selected.index = [name[len(prefix) :] for name in selected.index]
    return selected
