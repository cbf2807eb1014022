"""How a measured case is decided (:func:`bias_decision`: the gate's decision rule on its contrasts) and worded
(:func:`describe_decision`), and its quality floors (:func:`floor`, reported, never a verdict):
:meth:`harness.checks.base.Check.decide` applies them, the same way for every check.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.checks.context import CheckContext
from harness.core.values import finite_or_none
from harness.metrics.multitest import CaseDecision, DecisionRule, fdr_decision
from harness.records import Contrast, Decision, QualityFloor

if TYPE_CHECKING:
    from harness.checks.case import Case


def bias_decision(
    context: CheckContext,
    case: Case,
    contrasts: Sequence[Contrast],
    *,
    rule: str = "both",
    statistic: str,
    not_estimable_reason: str | None = None,
    fdr: tuple[float | None, int, float] | None = None,
) -> tuple[CaseDecision, Decision]:
    """The case's bias verdict by the run's :class:`~harness.metrics.multitest.DecisionRule`, and the record's
    ``decision`` block: the rule's fields, the ``statistic`` tested, every contrast, the deciding one's
    ``label``, ``estimate`` and interval, and ``untestable``: the contrasts beyond the practical threshold
    that have no p-value (e.g. every resample gives the same gap of 100 points) or whose test cannot reach the
    corrected alpha. A case that does not fail and has untestable contrasts is unmeasured
    (:meth:`harness.gate.Gate.verdict`), not passed.

    Reach (issue 45): a contrast's design floor ``min_p`` (:class:`~harness.records.Contrast`) cannot be significant
    when ``min(1, m_c · k · min_p) > alpha`` (the rule's Bonferroni steps, :meth:`DecisionRule.corrected_alpha`,
    k comparisons, m_c the across-case factor), or, under ``q-value``, when ``min_p >= alpha`` (a BH q-value is
    never below its p). Such a contrast is decided as having no p-value (its record keeps its p, with the reason
    and how many speakers would reach the corrected alpha), so it can neither fail the case by Monte Carlo chance
    nor let it pass while beyond its bar; under ``significance`` and ``q-value`` (no bar decides) it counts as
    beyond the bar.

    ``rule="q-value"`` (a one-contrast case) decides by ``fdr = (q, family size, alpha)`` instead: VIBE's
    criterion, :func:`~harness.metrics.multitest.fdr_decision`."""
    decision_rule = context.decision_rule(case.model)
    if rule == "q-value" and (fdr is None or len(contrasts) != 1):
        raise ValueError("bias_decision: rule q-value needs one contrast and fdr=(q, family size, alpha)")
    contrasts = [_unreachable(contrast, rule, decision_rule, len(contrasts), fdr) or contrast for contrast in contrasts]
    unreachable = [contrast.reason is not None and contrast.reason.startswith(UNREACHABLE) for contrast in contrasts]
    decided_p = [None if out_of_reach else c.p for c, out_of_reach in zip(contrasts, unreachable)]
    reasons = [c.reason for c in contrasts if c.reason]
    if rule == "q-value":
        q_value, family_size, fdr_alpha = fdr
        decision = fdr_decision(decided_p[0], q_value, alpha=fdr_alpha, family_size=family_size)
        if unreachable[0]:
            decision = dataclasses.replace(decision, reason=contrasts[0].reason)
    else:
        decision = decision_rule.decide(
            decided_p,
            [c.relevant for c in contrasts],
            rule=rule,
            not_estimable_reason=not_estimable_reason or ("; ".join(dict.fromkeys(reasons)) or None),
        )
    deciding = contrasts[decision.deciding].as_dict() if decision.deciding is not None else {}
    no_bar = rule in ("significance", "q-value")
    untestable = (
        [
            c.label
            for c, p, out_of_reach in zip(contrasts, decided_p, unreachable)
            if (c.relevant or (no_bar and out_of_reach)) and (p is None or not math.isfinite(p))
        ]
        if rule != "magnitude"
        else []
    )
    block = Decision(
        **decision.as_dict(),
        statistic=statistic,
        rule=rule,
        contrasts=tuple(contrasts),
        untestable=() if decision.failed else tuple(untestable),
        **{key: deciding.get(key) for key in ("label", "estimate", "ci_low", "ci_high")},
    )
    return decision, block


UNREACHABLE = "cannot reach the corrected alpha"
"""How the reason of a contrast whose design cannot be significant begins (:func:`bias_decision`)."""


def _unreachable(
    contrast: Contrast,
    rule: str,
    decision_rule: DecisionRule,
    comparisons: int,
    fdr: tuple[float | None, int, float] | None,
) -> Contrast | None:
    """``contrast`` with the reason that its design floor cannot reach the corrected alpha, or None when it can (or
    has no floor, or the rule ignores p)."""
    if contrast.min_p is None or rule == "magnitude" or contrast.p is None or not math.isfinite(contrast.p):
        return None
    if rule == "q-value":
        alpha = fdr[2]
        if contrast.min_p < alpha:
            return None
        correction = f"BH q < {alpha:g}, and a q-value is never below its p"
    else:
        reach = decision_rule.decide([contrast.min_p] * comparisons, [True] * comparisons, rule="both")
        if reach.significant:
            return None
        alpha = decision_rule.corrected_alpha(comparisons)
        correction = reach.correction
    design = (
        f"{contrast.floor.describe()} gives p >= {contrast.min_p:.3g}"
        if contrast.floor
        else f"its test gives p >= {contrast.min_p:.3g}"
    )
    remedy = f"; {contrast.floor.shortfall(alpha)}" if contrast.floor else ""
    reason = f"{UNREACHABLE} {alpha:.3g} ({correction}): {design}{remedy}"
    return dataclasses.replace(contrast, reason=reason)


def describe_decision(decision: CaseDecision, rule: str = "both") -> str:
    """The decision in a few words, ending on the verdict, for a case's message. Under rule ``magnitude`` a case
    without any p-value is still decided (by magnitude alone), so it is not called "not estimable"; elsewhere a case
    without a p-value passes when its estimate is not beyond the threshold (one beyond it is unmeasured: the gate
    raises :class:`~harness.core.errors.CaseNotMeasured` for its untestable contrast).

    Under rule ``both`` a case whose contrasts are all within their bar is never tested against alpha (its p and
    adjusted p are 1 by construction), so its words name the bar, not those p-values (issue 47): "not beyond the
    threshold (within the bar), so not tested against alpha -> pass". Under ``significance`` or ``q-value`` no bar
    decides, so the words say whether the adjusted p is significant."""
    verdict = "FAIL: bias" if decision.failed else "pass"
    if not decision.estimable and rule == "magnitude":
        return (
            f"no p-value, none needed (rule magnitude); {'relevant' if decision.relevant else 'not beyond the threshold'} "
            f"-> {verdict}"
        )
    if not decision.estimable:
        return (
            f"no p-value, not estimable ({decision.reason}); "
            f"{'relevant' if decision.relevant else 'not beyond the threshold'} -> {verdict}"
        )
    if rule == "both" and not decision.relevant:
        return f"not beyond the threshold (within the bar), so not tested against alpha -> {verdict}"
    p_adjusted = "n/a" if decision.p_adjusted is None else f"{decision.p_adjusted:.3g}"
    if rule in ("significance", "q-value"):
        finding = "significant" if decision.significant else "not significant"
    elif rule == "magnitude":
        finding = "relevant" if decision.relevant else "not beyond the threshold"
    else:
        finding = "relevant and significant" if decision.significant else "relevant but not significant"
    return f"p = {decision.p:.3g}, adjusted p = {p_adjusted} ({decision.correction}); {finding} -> {verdict}"


def floor(key: str, value: float | None, threshold: float) -> QualityFloor:
    """A quality floor (``value >= threshold``): reported with the case, never a bias verdict."""
    value = finite_or_none(value)
    return QualityFloor(key=key, value=value, threshold=float(threshold), met=value is not None and value >= threshold)


def floors_note(floors: Sequence[QualityFloor]) -> str:
    unmet = [floor.describe_unmet() for floor in floors if not floor.met]
    return f"; below quality floor: {', '.join(unmet)} (reported, not a bias verdict)" if unmet else ""
