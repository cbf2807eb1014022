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
    if rule != "magnitude":
        alpha = corrected_alpha(rule, decision_rule, len(contrasts), fdr)
        contrasts = [_with_detectable(contrast, alpha) for contrast in contrasts]
    unreachable = [contrast.reason is not None and contrast.reason.startswith(UNREACHABLE) for contrast in contrasts]
    # A contrast whose estimate is not finite, or whose design cannot reach alpha, decides nothing (issue 57).
    decided_p = [
        None if out_of_reach or not _finite(c.estimate) else c.p for c, out_of_reach in zip(contrasts, unreachable)
    ]
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
    deciding = contrasts[decision.deciding].to_json() if decision.deciding is not None else {}
    untestable = [c.label for c, p in zip(contrasts, decided_p) if untestable_reason(c, p, rule) is not None]
    block = Decision(
        **decision.as_dict(),
        statistic=statistic,
        rule=rule,
        contrasts=tuple(contrasts),
        untestable=() if decision.failed else tuple(untestable),
        **{key: deciding.get(key) for key in ("label", "estimate", "ci_low", "ci_high")},
    )
    return decision, block


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def corrected_alpha(
    rule: str, decision_rule: DecisionRule, comparisons: int, fdr: tuple[float | None, int, float] | None
) -> float:
    """The level one contrast must reach to fail its case: the decision rule's Bonferroni level
    (:meth:`DecisionRule.corrected_alpha`), or under ``q-value`` the level at which a BH q-value is below alpha
    whatever the family's other p-values, ``alpha / m`` (m the family's size: a case among nulls)."""
    if rule == "q-value":
        _, family_size, alpha = fdr
        return alpha / max(1, family_size)
    return decision_rule.corrected_alpha(comparisons)


def _with_detectable(contrast: Contrast, alpha: float) -> Contrast:
    """``contrast`` with its detectable effect at ``alpha`` (:mod:`harness.metrics.detectable`) and whether it is
    within its bar; one without a bar or a sensitivity is left unjudged (None)."""
    if contrast.bar is None or contrast.sensitivity is None:
        return contrast
    detectable = contrast.sensitivity.detectable(alpha)
    powered = bool(math.isfinite(detectable) and detectable <= contrast.bar)
    # an infinite (unreachable) or undefined detectable effect is None, as results.json writes it
    return dataclasses.replace(contrast, detectable=detectable if _finite(detectable) else None, powered=powered)


def untestable_reason(contrast: Contrast, decided_p: float | None, rule: str) -> str | None:
    """Why a contrast cannot support a PASS (issue 57), or None when it can: its estimate is not finite; or (every
    rule but ``magnitude``) its p is not finite, or its design cannot reach the corrected alpha, or it cannot
    detect an effect the size of its bar with 80% power (``powered`` False). A sign flip within its bar whose
    design's speakers could have failed it is testable even where too few of them moved for its draw to reach
    alpha (:func:`_design_reaches`)."""
    if contrast.estimate is None or not math.isfinite(contrast.estimate):
        return "its estimate is undefined" + (f" ({contrast.reason})" if contrast.reason else "")
    if rule == "magnitude":
        return None
    if _design_reaches(contrast):
        return None
    if contrast.reason is not None and contrast.reason.startswith(UNREACHABLE):
        return contrast.reason
    if decided_p is None or not math.isfinite(decided_p):
        return "no p-value" + (f" ({contrast.reason})" if contrast.reason else "")
    if contrast.powered is False:
        return underpowered_text(contrast)
    return None


def _design_reaches(contrast: Contrast) -> bool:
    """Whether a contrast within its bar, whose draw cannot reach the corrected alpha only because few of its
    speakers moved, has a design that could have failed it: a sign flip powered at its design's speakers
    (:func:`harness.metrics.sign_flip.sign_flip_sensitivity`; an effect at the bar moves every speaker). Its
    estimate is finite and within its bar, so no p decides it; the case passes on what the design could detect."""
    return (
        not contrast.relevant
        and contrast.powered is True
        and _finite(contrast.estimate)
        and bool(getattr(contrast.sensitivity, "sign_count", False))
    )


def underpowered_text(contrast: Contrast) -> str:
    """The words for a contrast that cannot detect its bar: the detectable effect, the bar, and about how many
    units (speakers per group or direction) the bar needs."""
    from harness.metrics.detectable import units_needed

    sensitivity = contrast.sensitivity
    log_scale = bool(getattr(sensitivity, "log_scale", False))
    detectable = contrast.detectable if contrast.detectable is not None else math.inf
    needed = units_needed(getattr(sensitivity, "units", None), detectable, contrast.bar, log_scale=log_scale)
    what = (
        "its design cannot reach the corrected alpha"
        if not math.isfinite(detectable)
        else f"detects {detectable:.3g} at 80% power, beyond its bar {contrast.bar:.3g}"
    )
    units = getattr(sensitivity, "units", None)
    have = f" with {units} {sensitivity.unit_name}" if units is not None else ""
    need = f"; the bar needs about {needed} {sensitivity.unit_name}" if needed is not None else ""
    return f"underpowered: {what}{have}{need}"


def untestable_message(case_id: str, contrasts: Sequence[Contrast], labels: Sequence[str], rule: str) -> str:
    """A case that did not fail but cannot pass: each untestable contrast with why (:func:`untestable_reason`)."""
    by_reason: dict[str, list[str]] = {}
    for contrast in contrasts:
        if contrast.label in labels:
            p = None if contrast.reason and contrast.reason.startswith(UNREACHABLE) else contrast.p
            reason = untestable_reason(contrast, p, rule) or "untestable"
            by_reason.setdefault(reason, []).append(contrast.label)
    # contrasts with one reason are named together, the reason once (a 2-speaker design repeats it per contrast)
    reasons = [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]
    return f"{case_id}: did not fail, but its design could not have failed it ({'; '.join(reasons)}): unmeasured"


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
