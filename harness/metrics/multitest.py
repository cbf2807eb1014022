"""Multiple-testing corrections: BH over a session's nTVD tests (VIBE §II-D), and the whole gate's decision rule
(Holm across cases after a Bonferroni step within each case) with a known false-fail probability."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd


def _checked(p_values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The p-values as a float array and the mask of the finite ones; rejects other shapes and values."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    return p, finite


def _adjusted_in_input_order(
    p_values: Sequence[float] | np.ndarray, adjust: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """``adjust`` (the m finite p-values sorted ascending, stably -> their adjusted values in that order) applied
    to ``p_values`` and put back in the input order; NaN p-values stay NaN and do not count towards m."""
    p, finite = _checked(p_values)
    adjusted = np.full_like(p, np.nan)
    m = int(finite.sum())
    if m == 0:
        return adjusted
    order = np.argsort(p[finite], kind="mergesort")
    finite_adjusted = np.empty(m)
    finite_adjusted[order] = adjust(p[finite][order])
    adjusted[finite] = finite_adjusted
    return adjusted


def fdr_bh(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values (Benjamini & Hochberg 1995), in the input order.

    With the m finite p-values sorted ascending, p_(1) <= ... <= p_(m)::

        q_(i) = min_{j >= i} min(1, m * p_(j) / j)

    NaN p-values (tests that could not be computed) stay NaN and do not count towards m.
    """

    def step_up(ascending: np.ndarray) -> np.ndarray:
        m = len(ascending)
        monotone = np.minimum.accumulate((ascending * m / np.arange(1, m + 1))[::-1])[::-1]
        return np.minimum(monotone, 1.0)

    return _adjusted_in_input_order(p_values, step_up)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, in the input order; controls the family-wise error rate
    under any dependence.

    With the m finite p-values sorted ascending::

        p~_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))

    NaN p-values (not estimable) stay NaN and do not count towards m.
    """

    def step_down(ascending: np.ndarray) -> np.ndarray:
        m = len(ascending)
        return np.maximum.accumulate(np.minimum(1.0, ascending * (m - np.arange(m))))

    return _adjusted_in_input_order(p_values, step_down)


def p_from_interval(estimate: float, ci_low: float, ci_high: float, *, level: float = 0.95, log: bool = False) -> float:
    """Two-sided Wald p-value of ``estimate = 0`` (``= 1`` with ``log``, for ratios) recovered from a
    symmetric-on-its-scale ``level`` interval: ``se = (hi - lo) / (2 z)``, ``p = 2 Phi(-|est| / se)``.
    NaN when the interval is missing or has zero width (a degenerate interval carries no test)."""
    from scipy.stats import norm

    values = np.array([estimate, ci_low, ci_high], dtype=float)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(values)
    if not np.all(np.isfinite(values)) or values[2] <= values[1]:
        return float("nan")
    z = norm.ppf(0.5 + level / 2.0)
    se = (values[2] - values[1]) / (2.0 * z)
    return float(2.0 * norm.sf(abs(values[0]) / se))


ACROSS = ("holm", "bh")


def gate_decision(
    comparisons: pd.DataFrame,
    *,
    alpha: float = 0.05,
    across: str = "holm",
    case: str = "case",
    p: str = "p",
    relevant: str | None = None,
) -> GateDecision:
    """The whole gate's verdict from every comparison of every bias case, with a known error rate.

    ``comparisons`` has one row per comparison (a case with G groups compared one-vs-rest has G rows;
    a two-group case one row), columns ``case`` and ``p`` (two-sided p-value; NaN when not estimable),
    and optionally ``relevant`` (bool: the comparison's magnitude exceeds the case's practical threshold,
    e.g. ``gap > max_gap``; missing means every comparison counts).

    Step 1, within a case of k comparisons: the case's p-value is the Bonferroni bound of its smallest,
    ``p_case = min(1, k * min_j p_j)`` (the closed-testing p-value of "no comparison in the case is
    biased", which Holm's first step uses; it holds under any dependence between the comparisons).
    Relevance is applied before: a case's p is taken over its relevant comparisons, but k counts all of
    them. Step 2, across the m cases: Holm's step-down (``across="holm"``) on the ``p_case``; a case fails
    when its adjusted p <= ``alpha``. Then P(the gate fails | no case is biased) <= alpha whatever the
    dependence between cases, and each false case fails with probability <= alpha even when others are
    biased (strong FWER control). ``across="bh"`` uses Benjamini-Hochberg q-values instead: under the
    global null it too fails the gate with probability <= alpha (BH is then Simes' test; valid for
    independent or positively dependent cases), but once some cases are biased it bounds only the
    expected share of false fails among the failing cases. Holm is the default: a release gate asks
    whether *any* of its failures is false. A not-estimable case (NaN) never fails on p and is listed in ``not_estimable``.
    """
    if across not in ACROSS:
        raise ValueError(f"gate_decision: across must be one of {ACROSS}, got {across!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"gate_decision: alpha must be in (0, 1), got {alpha}")
    for column in (case, p) + ((relevant,) if relevant else ()):
        if column not in comparisons.columns:
            raise ValueError(f"gate_decision: missing column {column!r}; the table has {list(comparisons.columns)}")
    keys = comparisons[case].to_numpy()
    values = comparisons[p].to_numpy(dtype=float)
    counted = np.where(comparisons[relevant].astype(bool).to_numpy(), values, 1.0) if relevant else values
    grouped = pd.DataFrame({"case": keys, "p": counted, "missing": np.isnan(values)}).groupby("case", sort=False)
    k = grouped.size()
    smallest = grouped["p"].min().fillna(1.0)
    cases = pd.DataFrame({"comparisons": k, "p_case": np.minimum(1.0, k * smallest)})
    cases.loc[grouped["missing"].all(), "p_case"] = np.nan
    cases["p_adjusted"] = holm(cases["p_case"]) if across == "holm" else fdr_bh(cases["p_case"])
    cases["failed"] = cases["p_adjusted"].le(alpha).fillna(False).astype(bool)
    correction = (
        f"within each case Bonferroni over its comparisons, then {'Holm' if across == 'holm' else 'Benjamini-Hochberg'} "
        f"across {len(cases)} cases at alpha = {alpha:g}"
    )
    return GateDecision(
        cases=cases,
        failed=bool(cases["failed"].any()),
        alpha=alpha,
        across=across,
        correction=correction,
        not_estimable=[str(c) for c in cases.index[cases["p_case"].isna()]],
    )


@dataclasses.dataclass(frozen=True)
class GateDecision:
    """Result of :func:`gate_decision`: per case ``comparisons``, ``p_case``, ``p_adjusted``, ``failed``;
    ``failed`` for the whole gate; ``correction`` says, in words, what was applied (for the report)."""

    cases: pd.DataFrame
    failed: bool
    alpha: float
    across: str
    correction: str
    not_estimable: list[str]


CORRECTIONS = ("bonferroni", "none")


@dataclasses.dataclass(frozen=True)
class DecisionFields:
    """What every decision by a :class:`DecisionRule` states. ``p``: the p-value after the within-case step;
    ``p_adjusted``: after the across-case step; ``significant``: ``p_adjusted <= alpha``; ``relevant``: some
    comparison's magnitude exceeds the practical threshold; ``correction``: the across-case step in words."""

    p: float | None
    comparisons: int
    family_size: int
    p_adjusted: float | None
    alpha: float
    relevant: bool
    significant: bool
    estimable: bool
    reason: str | None
    correction: str


@dataclasses.dataclass(frozen=True)
class CaseDecision(DecisionFields):
    """A case's bias decision by :meth:`DecisionRule.decide` (the ``decision`` block of its record):
    :class:`DecisionFields`, ``failed`` (the bias verdict) and ``deciding`` (index of the comparison the case
    is judged on: the relevant one with the smallest p, else the smallest p; or None)."""

    failed: bool
    deciding: int | None

    def as_dict(self) -> dict[str, object]:
        return {name: value for name, value in dataclasses.asdict(self).items() if name not in ("failed", "deciding")}


@dataclasses.dataclass(frozen=True)
class DecisionRule:
    """The whole gate's decision rule, applied to one case at a time: its false-fail probability over the
    run is at most ``alpha`` (thresholds.yaml ``gate``).

    A case has k comparisons (groups one-vs-rest, pairs, or one omnibus test) with two-sided p-values
    ``p_j`` and relevance flags ``r_j`` (``|effect_j|`` beyond the case's practical threshold). Within the
    case, Bonferroni: ``p_case = min(1, k * min_{j: r_j} p_j)`` (k counts every comparison, relevant or
    not; 1 when none is relevant). Across the gate, with ``correction="bonferroni"``,
    ``p_adjusted = min(1, m * p_case)`` where m (``family_size``) is the number of bias cases of the same
    model selected in the run; ``correction="none"`` keeps ``p_adjusted = p_case`` (each case at ``alpha``:
    for a spot check of one case). The case fails when ``p_adjusted <= alpha`` (a relevant comparison is
    significant). By Bonferroni's inequality P(any case of a voice-blind model fails) <= alpha whatever the
    dependence between comparisons and cases; the whole gate fails exactly when Holm's procedure
    (:func:`holm`) would reject at least one case, so its whole-gate error and detection rates are Holm's.
    A case whose comparisons have no p-value is not estimable and never fails on them.

    ``rule`` as in thresholds.yaml: ``both`` (significant and relevant), ``significance`` (every
    comparison counts as relevant), ``magnitude`` (fails when relevant, p ignored: no error control).
    """

    alpha: float = 0.05
    family_size: int = 1
    correction: str = "bonferroni"
    tests_per_case: int = 1
    """How many tests each case adds to ``family_size``: 2 against a baseline (absolute and release, issue 57)."""

    def __post_init__(self) -> None:
        if self.correction not in CORRECTIONS:
            raise ValueError(f"DecisionRule: correction must be one of {CORRECTIONS}, got {self.correction!r}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"DecisionRule: alpha must be in (0, 1), got {self.alpha}")
        if self.family_size < 1:
            raise ValueError(f"DecisionRule: family_size must be >= 1, got {self.family_size}")

    def corrected_alpha(self, comparisons: int) -> float:
        """The p a single comparison of a case of ``comparisons`` must reach to fail it:
        ``alpha / (k * m)`` under ``correction="bonferroni"`` (m = ``family_size``), ``alpha / k`` under ``none``."""
        return self.alpha / (comparisons * (self.family_size if self.correction == "bonferroni" else 1))

    def describe(self, comparisons: int) -> str:
        within = f"Bonferroni over its {comparisons} comparisons" if comparisons > 1 else "one comparison"
        family = (
            f"{self.family_size} selected bias cases"
            if self.tests_per_case == 1
            else f"{self.family_size} bias tests ({self.family_size // self.tests_per_case} selected cases, each "
            "tested absolute and against the baseline)"
        )
        across = (
            f"Bonferroni across the model's {family}"
            if self.correction == "bonferroni"
            else "no correction across cases"
        )
        return f"within the case {within}; {across}; family-wise alpha = {self.alpha:g}"

    def decide(
        self,
        p_values: Sequence[float | None],
        relevant: Sequence[bool],
        *,
        rule: str = "both",
        not_estimable_reason: str | None = None,
    ) -> CaseDecision:
        p = np.array([np.nan if value is None else value for value in p_values], dtype=float)
        flags = np.asarray(relevant, dtype=bool)
        if p.shape != flags.shape or p.ndim != 1 or len(p) == 0:
            raise ValueError(
                f"DecisionRule.decide: {len(p)} p-values and {len(flags)} relevance flags (need the same, >= 1)"
            )
        if rule not in ("both", "significance", "magnitude"):
            raise ValueError(f"DecisionRule.decide: rule must be both, significance or magnitude, got {rule!r}")
        _checked(p)
        k = len(p)
        counted = flags if rule == "both" else np.ones(k, dtype=bool)
        estimable = bool(np.isfinite(p).any())
        reason = None if estimable else (not_estimable_reason or "no comparison of the case has a p-value")
        candidates = np.where(counted & np.isfinite(p), p, np.inf)
        if np.isfinite(candidates).any():
            deciding = int(np.argmin(candidates))
            p_case = min(1.0, k * float(p[deciding]))
        else:
            deciding = int(np.nanargmin(p)) if estimable else (int(np.argmax(flags)) if flags.any() else None)
            p_case = 1.0 if estimable else None
        factor = self.family_size if self.correction == "bonferroni" else 1
        p_adjusted = None if p_case is None else min(1.0, factor * p_case)
        significant = p_adjusted is not None and p_adjusted <= self.alpha
        any_relevant = bool(flags.any())
        failed = any_relevant if rule == "magnitude" else significant
        return CaseDecision(
            p=p_case,
            comparisons=k,
            family_size=self.family_size,
            p_adjusted=p_adjusted,
            alpha=self.alpha,
            relevant=any_relevant,
            significant=significant,
            estimable=estimable,
            reason=reason,
            correction=self.describe(k) + ("" if rule != "magnitude" else "; rule magnitude: p not used"),
            failed=bool(failed),
            deciding=deciding,
        )


def fdr_decision(p: float | None, q: float | None, *, alpha: float, family_size: int) -> CaseDecision:
    """VIBE's own criterion (§II-D, Table II): a case is significantly biased when its Benjamini-Hochberg q-value
    over the run's nTVD tests (every model x task x dimension, ``family_size`` cases: Table II's "120 reported
    tests") is below ``alpha``, whatever the size of the effect. This controls the expected share of false
    discoveries among them, not the probability that a voice-blind model fails: a stated choice, not the gate's default rule."""
    estimable = p is not None and math.isfinite(p) and q is not None and math.isfinite(q)
    significant = bool(estimable and q < alpha)
    return CaseDecision(
        p=p if estimable else None,
        comparisons=1,
        family_size=family_size,
        p_adjusted=q if estimable else None,
        alpha=alpha,
        relevant=True,
        significant=significant,
        estimable=estimable,
        reason=None if estimable else "the permutation test has no p-value",
        correction=(
            f"Benjamini-Hochberg over the run's {family_size} nTVD cases, every model x task x dimension (VIBE §II-D): q < {alpha:g} "
            "fails; false discovery rate, not family-wise error"
        ),
        failed=significant,
        deciding=0,
    )
