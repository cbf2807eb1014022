"""Numbers, intervals, decisions and floors of a record in words, for the report and the check views."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from harness.display.plots import Interval, TemplateData, interval_text
from harness.records import Decision, QualityFloor, Record

GAP_UNITS = "points"


def case_anchor(record: Record) -> str:
    """A stable HTML id for a case (``case-`` and 12 hex digits of its check and id), safe whatever the id holds."""
    return "case-" + hashlib.sha256(f"{record.check}\0{record.id}".encode()).hexdigest()[:12]


def fmt_number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def p_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def ci_words(entry: Mapping[str, object] | Interval | None, digits: int = 1) -> str:
    """ "95% CI a to b", or "interval not estimable" (:func:`harness.display.plots.interval_estimable`)."""
    return interval_text(entry, digits, "95% CI {0} to {1}")


def decision_text(decision: Decision | None) -> str | None:
    """The case's multiple-testing decision in words: correction, adjusted p, relevance (None without one)."""
    if decision is None:
        return None
    parts = []
    if decision.rule == "both" and decision.relevant is False and decision.estimable:
        # Under the rule both a contrast within its bar is never tested against alpha: its adjusted p is 1 by
        # construction, which beside a regression read as the case's own p (issue 59, item 7).
        return f"within the practical threshold, so not tested against α = {decision.alpha:g}" + (
            f"; {decision.correction}" if decision.correction else ""
        )
    if decision.p_adjusted is not None:
        name = "BH q" if decision.rule == "q-value" else "adjusted p"
        parts.append(f"{name} = {p_text(decision.p_adjusted)} (α = {decision.alpha:g})")
    elif decision.p is not None:
        parts.append(f"p = {p_text(decision.p)}")
    if decision.correction:
        parts.append(decision.correction)
    if not decision.estimable:
        parts.append("not estimable" + (f": {decision.reason}" if decision.reason else ""))
    else:
        if decision.significant is not None:
            parts.append("significant" if decision.significant else "not significant")
        if decision.relevant is not None:
            parts.append("beyond the practical threshold" if decision.relevant else "within the practical threshold")
    return "; ".join(parts) or None


def floor_lines(floors: Sequence[QualityFloor] | None) -> list[TemplateData]:
    """Quality floors (a record's :class:`harness.records.QualityFloor` list) as lines; a floor not met is reported
    "below floor", which is not a bias fail."""
    return [
        {
            "key": floor.key,
            "met": floor.met,
            "text": f"{floor.key} {fmt_number(floor.value, 1)} vs floor {fmt_number(floor.threshold, 1)}: "
            + ("met" if floor.met else "below floor (quality, not a bias fail)"),
        }
        for floor in floors or []
    ]


SHORT_SPEC = 20
"""The longest model spec a plot or table prints in full; longer ones are shown by a key (M1, M2, ...)."""


def model_keys(models: Sequence[str]) -> dict[str, str]:
    """Each model's name in a plot or table: its spec where every spec is at most :data:`SHORT_SPEC` characters,
    otherwise ``M1``, ``M2``, ... in order of first appearance (a key legend, :func:`key_legend`, spells them out)."""
    ordered = list(dict.fromkeys(models))
    if all(len(model) <= SHORT_SPEC for model in ordered):
        return {model: model for model in ordered}
    return {model: f"M{index}" for index, model in enumerate(ordered, start=1)}


def key_legend(keys: Mapping[str, str]) -> list[dict[str, str]]:
    """The keys of :func:`model_keys` that stand for a longer spec, as ``{"key", "model"}`` rows (empty when
    every spec is printed in full)."""
    return [{"key": key, "model": model} for model, key in keys.items() if key != model]


def decision_line(decision: Decision | None, passed: bool, magnitude_rule: str | None) -> str | None:
    """A case's decision in one line: the rule in words, the one number that decided, the outcome, e.g.
    "fails when nTVD > 20 and adjusted p < 0.05: adjusted p = 0.0036 → FAIL". ``magnitude_rule`` is the check
    view's effect in words (:attr:`harness.checks.view.CheckView.magnitude_rule`). The rule is the decision's
    ``rule``: ``magnitude`` (the effect alone), ``significance`` (the p-value alone) or ``both``; the number is
    the adjusted p where there is one (``BH q`` under the ``q-value`` rule), else the raw p, and "not estimable"
    where the decision could not be made; under ``both`` a case within its bar is never tested against alpha, so it
    reads "within the bar", not its adjusted p of 1. None without a decision."""
    if decision is None:
        return None
    rule = decision.rule
    name = "BH q" if rule == "q-value" else ("adjusted p" if decision.p_adjusted is not None else "p")
    significance = f"{name} < {decision.alpha:g}"
    if rule == "magnitude" and magnitude_rule:
        condition = magnitude_rule
    elif rule in ("significance", "q-value") or not magnitude_rule:
        condition = significance
    else:
        condition = f"{magnitude_rule} and {significance}"
    number = decision.p_adjusted if decision.p_adjusted is not None else decision.p
    if not decision.estimable:
        decided_by = "not estimable"
    elif rule == "magnitude":
        decided_by = "beyond the threshold" if decision.relevant else "within the threshold"
    elif rule == "both" and magnitude_rule and decision.relevant is False:
        decided_by = "within the bar, not tested against alpha"  # its adjusted p is 1 by construction (issue 47)
    else:
        decided_by = f"{name} = {p_text(number)}"
    return f"fails when {condition}: {decided_by} → {'pass' if passed else 'FAIL'}"


def without_case_id(message: str, case_id: str | None) -> str:
    """``message`` less a leading "<case id>: " where the case's id is shown beside it already (an unmeasured
    line of the terminal, the report or pytest's error header names the case once)."""
    prefix = f"{case_id}: " if case_id else None
    return message[len(prefix) :] if prefix and message.startswith(prefix) else message
