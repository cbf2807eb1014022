"""The smallest effect a contrast's own design detects (issue 57): what a PASS can speak for.

A contrast whose test could not have found an effect of the size of its bar says nothing by passing. Each test
states its **detectable effect**: the smallest true effect it detects with probability ``POWER`` (80%) at the
corrected alpha ``a`` the gate applies to it, on the scale of its estimate, from the units it kept after every
drop. :func:`harness.checks.verdict.bias_decision` compares it with the contrast's bar; a case that passes with a
contrast whose detectable effect exceeds its bar is unmeasured.

Two sources, one per kind of test:

* **Wald** (:class:`WaldSensitivity`: a bootstrap or model standard error ``se``, two-sided): the shift ``d`` with
  ``P(|d + se Z| > z_{1-a/2} se) >= POWER`` is, neglecting the far tail, ``d = (z_{1-a/2} + z_POWER) se``
  (e.g. Cohen 1988, ch. 12). On a log scale (ratios, ``log_scale``) the detectable ratio is ``exp(d)``.
* **Permutation** (:class:`NullSensitivity`: the test's own null draws of a non-negative statistic ``T``, such as
  nTVD or ``|difference|``): the null of ``T^2`` is fitted by a scaled chi-square ``c chi^2_k`` with the first two
  moments (``c = var / (2 mean)``, ``k = 2 mean^2 / var``: Satterthwaite 1946, Box 1954). A true effect ``D`` on the
  statistic's scale adds ``D^2`` to ``T^2`` in expectation, i.e. makes it ``c chi'^2_k(lambda)`` with
  ``lambda = D^2 / c`` (the non-central chi-square). The critical value is the fitted ``(1 - a)`` quantile, or,
  where the null is a full enumeration (``exact``: every sign pattern once), the smallest observed value whose
  exact tail share is at most ``a`` (infinite when none is: the design cannot reach ``a``). ``D`` solves
  ``P(c chi'^2_k(D^2 / c) > crit(D)^2) = POWER``. A permutation null is drawn from the data, effect included, so it
  widens with the effect: reassigning speakers spreads the effect over the permutations, adding about
  ``kappa D^2`` to the null's mean square (``kappa = 1 / S`` for a sign flip of S moving speakers: each flipped
  pattern carries the effect's square over S; ``1 / (N - 1)`` for a group permutation of N speakers, the
  between-group variance spread by relabelling). So ``crit(D)^2 = crit^2 (1 + kappa D^2 / E_0[T^2])``, and where
  ``kappa crit^2 >= E_0[T^2]`` no effect is detectable (a sign flip of 12 speakers at a = 0.0012 is that case
  unless the effect dwarfs the noise).

Both scale with the square root of the units (speakers per group or direction), so a contrast that detects ``D``
with ``n`` units per group detects its bar ``b`` with about ``n (D / b)^2`` (:func:`units_needed`).
``benchmarks/bench_detectable.py`` checks the stated figures by simulation at the gate's own settings: at a true
effect equal to the stated detectable effect, each test family detects in at least 75% of 200 seeds.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

import numpy as np
from scipy import optimize, stats

POWER = 0.8
"""The power at which a contrast's detectable effect is stated."""


class DetectsEffects(Protocol):
    """A test's sensitivity: the smallest true effect it detects with probability :data:`POWER` at ``alpha``."""

    units: int | None
    unit_name: str

    def detectable(self, alpha: float) -> float: ...


@dataclasses.dataclass(frozen=True)
class WaldSensitivity:
    """A two-sided (``sides`` 2) or one-sided Wald-type test with standard error ``se`` (module docstring)."""

    se: float
    log_scale: bool = False
    sides: int = 2
    df: float | None = None
    """Student's t reference with ``df`` degrees of freedom where finite and positive, else the normal."""
    units: int | None = None
    unit_name: str = "speakers per group"

    @classmethod
    def from_interval(
        cls,
        low: float | None,
        high: float | None,
        *,
        log_scale: bool = False,
        level: float = 0.95,
        df: float | None = None,
        **kwargs,
    ) -> WaldSensitivity:
        """The se behind a symmetric ``level`` interval ``[low, high]`` (on the log scale for ``log_scale``):
        ``se = (high - low) / (2 q_{(1+level)/2})``; NaN where the interval is missing or not finite."""
        reference = _reference(df)
        if low is None or high is None:
            return cls(math.nan, log_scale, df=df, **kwargs)
        if log_scale:
            low, high = (math.log(v) if v > 0 else math.nan for v in (low, high))
        return cls((high - low) / (2 * reference.isf((1 - level) / 2)), log_scale, df=df, **kwargs)

    def detectable(self, alpha: float) -> float:
        if not math.isfinite(self.se) or self.se < 0:
            return math.nan
        reference = _reference(self.df)
        shift = (reference.isf(alpha / self.sides) + reference.ppf(POWER)) * self.se
        return math.exp(shift) if self.log_scale else shift


@dataclasses.dataclass(frozen=True, eq=False)
class NullSensitivity:
    """A permutation test of a non-negative statistic from its own null draws (module docstring); ``exact``
    when the draws enumerate every pattern of the design once."""

    null: np.ndarray = dataclasses.field(repr=False)
    exact: bool = False
    units: int | None = None
    unit_name: str = "speakers per group"
    sign_count: bool = False
    """Whether the test is a sign flip whose p cannot beat its sign-count bound (:meth:`_sign_count_bound`), applied
    whether the patterns were enumerated or drawn: a drawn p estimates the exact one."""
    widening: float = 0.0
    """``kappa``: how much of a true effect's square the permutation null itself takes on (module docstring):
    ``1 / S`` for a sign flip over S moving speakers, ``1 / (N - 1)`` for a group permutation of N speakers."""

    def _fit(self) -> tuple[float, float] | None:
        """``(c, k)`` of the scaled chi-square fit of ``T^2``; None when the null does not vary."""
        squares = np.square(np.asarray(self.null, dtype=float))
        squares = squares[np.isfinite(squares)]
        if len(squares) < 2:
            return None
        mean, var = float(squares.mean()), float(squares.var())
        if mean <= 0 or var <= 1e-12 * max(1.0, mean * mean):
            return None
        return var / (2 * mean), 2 * mean * mean / var

    def critical(self, alpha: float) -> float:
        """The value ``T`` must exceed to reach ``alpha`` (module docstring)."""
        values = np.asarray(self.null, dtype=float)
        values = values[np.isfinite(values)]
        if not len(values):
            return math.inf
        if self.exact:
            ordered = np.sort(values)
            candidates = np.unique(ordered)
            tail = (len(ordered) - np.searchsorted(ordered, candidates, side="left")) / len(ordered)
            reachable = candidates[tail <= alpha]
            return float(reachable.min()) if len(reachable) else math.inf
        fit = self._fit()
        if fit is None:
            return float(values.max())
        c, k = fit
        return math.sqrt(c * stats.chi2.isf(alpha, k))

    def detectable(self, alpha: float) -> float:
        critical = self.critical(alpha)
        fit = self._fit()
        if not math.isfinite(critical):
            return math.inf
        if fit is None:
            # A null that does not vary (no speaker moved): no noise, so what remains is the sign-count bound.
            return max(critical, self._sign_count_bound(alpha, 0.0)) if self.sign_count else critical
        c, k = fit
        null_mean = c * k
        # The permutation null widens with the effect: crit(D)^2 = crit^2 (1 + kappa D^2 / E_0[T^2]).
        growth = self.widening * critical * critical / null_mean
        if growth >= 1.0:
            return math.inf  # the observed statistic can never outgrow its own permutation null at this alpha

        def shortfall(effect: float) -> float:
            bound = critical * critical * (1.0 + self.widening * effect * effect / null_mean) / c
            return float(stats.ncx2.sf(bound, k, effect * effect / c)) - POWER

        upper = max(1.0, critical)
        while shortfall(upper) < 0:
            upper *= 2
            if upper > 1e6 * max(1.0, critical):
                return math.inf
        smooth = float(optimize.brentq(shortfall, 0.0, upper, xtol=1e-9 * max(1.0, critical)))
        return max(smooth, self._sign_count_bound(alpha, c * k)) if self.sign_count else smooth

    def _sign_count_bound(self, alpha: float, null_mean: float) -> float:
        """An enumerated sign flip of S units reaches ``alpha`` only where few units move against the effect: with
        ``j`` of them against it, at least ``2 * 2^j`` of the ``2^S`` patterns are as extreme, so ``j`` may be at
        most ``log2(alpha 2^S / 2)``. With each unit's difference ``D + sigma Z`` (``sigma^2 = S E_0[T^2]``, the null
        of a mean of S units), the power is ``P(Binomial(S, Phi(-D / sigma)) <= j)``; the ``D`` where it reaches
        :data:`POWER`. Infinite where the widening gives no unit count (a design without units detects nothing)."""
        if self.widening <= 0:
            return math.inf
        units = round(1.0 / self.widening)
        allowed = alpha * 2.0**units / 2.0
        if allowed < 1.0:
            return math.inf
        against = math.floor(math.log2(allowed))
        if against >= units or stats.binom.cdf(against, units, 0.5) >= POWER:
            return 0.0  # even units moving either way at even odds reach the power: the count bounds nothing
        share = optimize.brentq(lambda q: stats.binom.cdf(against, units, q) - POWER, 1e-12, 0.5)
        return math.sqrt(units * null_mean) * float(stats.norm.isf(share))


def _reference(df: float | None):
    """Student's t with ``df`` where finite and positive, else the standard normal."""
    return stats.t(df) if df is not None and math.isfinite(df) and df > 0 else stats.norm()


def units_needed(units: int | None, detectable: float, bar: float, *, log_scale: bool = False) -> int | None:
    """About how many units (speakers per group or direction) make ``detectable`` reach ``bar``: the detectable
    effect falls as ``1 / sqrt(n)``, so ``n (D / b)^2`` (on the log scale for ratios). None where unknown."""
    if units is None or not math.isfinite(detectable) or bar <= 0:
        return None
    if log_scale:
        if detectable <= 1 or bar <= 1:
            return None
        detectable, bar = math.log(detectable), math.log(bar)
    return max(units + 1, math.ceil(units * (detectable / bar) ** 2))
