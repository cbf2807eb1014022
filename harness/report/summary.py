"""The report's first screen: may we release, and if not, why.

One line per failed, regressed or unmeasured case (check, model, dimension, value, threshold, adjusted p / q / CI,
a link to the case in its section), what was compared with what, and for a passing run the closest calls:
the passing cases whose value lies nearest its threshold, measured by :func:`margin`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.checks import CHECKS, check_part
from harness.display.decisions import WITHIN_THE_BAR, measure_values, release_test
from harness.display.plots import interval_estimable
from harness.display.text import (
    case_anchor,
    ci_words,
    decision_text,
    floor_lines,
    fmt_number,
    p_text,
    without_case_id,
)
from harness.records import (
    RULE_JUDGES,
    SPOT_CHECK,
    CaseRecord,
    Comparison,
    Decision,
    Record,
    UnmeasuredRecord,
    regressed_against_baseline,
)
from harness.results import RunResults


def check_label(check: str) -> str:
    """The check's name on the first screen (its view's ``label``; the name itself for a check without a view)."""
    return check_part(check, "view").label if check in CHECKS else check


def decided_headline(record: CaseRecord) -> dict[str, str]:
    """The headline of a case with a ``decision`` (results.json schema 2): the deciding contrast and its
    interval, the rule (effect beyond the threshold and/or adjusted p below alpha) and the adjusted p;
    ``statistic`` names what the contrast measures (the report shows it on hover). The check's view words
    the effect size (:attr:`~harness.checks.view.CheckView.magnitude_rule`) and the estimate."""
    decision, view = record.decision, check_part(record.check, "view")
    digits = view.estimate_digits
    significant = f"adjusted p < {decision.alpha:g}"
    magnitude = view.magnitude_rule(record)
    rule = {
        "magnitude": magnitude,
        "bounds": magnitude,
        "significance": significant,
        "ci": significant,
        "q-value": f"BH q < {decision.alpha:g} over the table",
    }.get(decision.rule, f"{magnitude} and {significant}")
    estimate = decision.estimate
    value = decision.statistic or record.check
    if decision.label and estimate is not None:
        value = f"{decision.label} = {estimate:.{digits}f}{view.estimate_unit}"
    interval = {"ci_low": decision.ci_low, "ci_high": decision.ci_high}
    pieces = [] if decision.ci_low is None and decision.ci_high is None else [ci_words(interval, digits)]
    if decision.rule == "both" and decision.estimable and not decision.relevant:
        # Never tested against alpha: its adjusted p (1 by construction) would say nothing (issue 47).
        pieces.append(f"{WITHIN_THE_BAR}, not tested against alpha")
    elif decision.p_adjusted is not None:
        pieces.append(f"{'q' if decision.rule == 'q-value' else 'adjusted p'} = {p_text(decision.p_adjusted)}")
    return {"value": value, "threshold": rule, "uncertainty": "; ".join(pieces) or "–", "statistic": decision.statistic}


def headline(record: CaseRecord) -> dict[str, str]:
    """``value``, ``threshold`` (when it fails) and ``uncertainty`` (adjusted p, q or interval) of a case in words and units of its check:
    from its ``decision`` when it has one (:func:`decided_headline`), else by its view's schema-1 words."""
    if record.decision and record.decision.decided:
        return decided_headline(record)
    return check_part(record.check, "view").headline_without_decision(record)


def margin(record: CaseRecord) -> float | None:
    """How far a passing case lies from failing, as a share of its threshold (0 = on it; smaller = closer).

    With a ``decision`` (schema 2), from its deciding contrast: the magnitude part
    (:attr:`~harness.checks.view.CheckView.magnitude_margin` of the contrast's estimate: nTVD (max_ntvd − nTVD)/max_ntvd;
    ratios the ln distance to the nearer bound over ln(upper); BASIS (max_gap − |estimate|)/max_gap), the significance
    part (p_adjusted − alpha)/alpha, combined by the decision's rule (the larger under ``both``: both must cross).
    A schema-1 record is measured by its view's ``margin_without_decision``. None when the case has no value to measure.
    """
    if record.value is None:
        return None
    if record.decision and record.decision.decided:
        return _decided_margin(record, record.decision)
    return check_part(record.check, "view").margin_without_decision(record)


def margin_parts(record: CaseRecord) -> tuple[float | None, float | None]:
    """(magnitude, significance) distances of a case with a ``decision`` from failing (see :func:`margin`);
    (None, None) without one."""
    decision = record.decision
    if decision is None or not decision.decided:
        return None, None
    estimate, alpha = decision.estimate, decision.alpha
    significance = math.inf if decision.p_adjusted is None else (decision.p_adjusted - alpha) / alpha
    magnitude = None if estimate is None else check_part(record.check, "view").magnitude_margin(record, estimate)
    return magnitude, significance


def _decided_margin(record: CaseRecord, decision: Decision) -> float | None:
    magnitude, significance = margin_parts(record)
    rule = decision.rule
    if rule in ("significance", "ci"):
        return significance
    if rule in ("magnitude", "bounds") or magnitude is None:
        return magnitude
    return max(magnitude, significance)


def closeness(record: CaseRecord) -> tuple[bool, float, float]:
    """Sort key of the closest calls: :func:`margin`, ties (e.g. every adjusted p at 1) broken by the nearer
    of the two parts of :func:`margin_parts`; cases without a margin last."""
    value = margin(record)
    parts = [part for part in margin_parts(record) if part is not None]
    return value is None, value if value is not None else 0.0, min(parts) if parts else 0.0


def cause_text(record: UnmeasuredRecord) -> str:
    """ "model error (the perceiver sim:fair set by --perceiver): ...", or "by design: ...": where the cause lies
    (:attr:`harness.records.Cause.where`) and why, the case's own id left out (the line names the case)."""
    cause = record.cause
    if cause is None:
        return without_case_id(record.message, record.id)
    where = cause.where.split(", ", 1)
    detail = f" ({where[1]})" if len(where) > 1 else ""
    return f"{cause.label}{detail}: {without_case_id(cause.message or record.message, record.id)}"


def case_line(record: Record, status: str) -> dict[str, Any]:
    """One first-screen line: status (failed, regressed, unmeasured, closest), check, model, dimension, variant,
    value, threshold, adjusted p / q / CI, decision, floors and the link to the case."""
    line = {
        "status": status,
        "check": check_label(record.check),
        "id": record.id,
        "anchor": case_anchor(record),
        "model": record.model,
        "corpus": getattr(record, "corpus", None),
        "dimension": record.dimension,
        "variant": record.variant,
        "statistic": None,
    }
    if isinstance(record, UnmeasuredRecord):
        return line | {
            "value": None,
            "threshold": None,
            "uncertainty": None,
            "cause": cause_text(record),
            "decision": None,
            "floors": [],
        }
    baseline = record.baseline
    view = check_part(record.check, "view")
    release = release_test(baseline, digits=view.estimate_digits)
    decided = bool(record.decision) and record.decision.decided
    shown = headline(record)
    regression = None if release is None else release.text()
    if status == "regressed" and baseline is not None and release is not None:
        # The release test decided: both checkpoints' values on its measure, then the case's absolute value, each
        # labelled (issue 47); its p-values, never the absolute test's.
        estimate = record.decision.estimate if decided else record.value
        absolute = (
            "" if estimate is None else f" (absolute value {estimate:.{view.estimate_digits}f}{view.estimate_unit})"
        )
        shown = {
            "value": f"{measure_values(baseline, view.estimate_digits) or '–'}{absolute}",
            "threshold": regression_rule(baseline),
            "uncertainty": "; ".join(part for part in (f"Δ {baseline.delta:+.3g}", release_p_text(baseline)) if part),
            "statistic": shown.get("statistic"),
        }
        regression = None
    return (
        line
        | shown
        | {
            "cause": None,
            "regression": regression,
            "floors": floor_lines(record.floors),
            "decision": None if decided else decision_text(record.decision),
        }
    )


def release_p_text(baseline: Comparison) -> str:
    """ "one-sided p = 1.83e-05, adjusted p = 0.000788" of a case's release test."""
    adjusted = baseline.p_adjusted
    return ", ".join(
        part
        for part in (
            None if baseline.p_value is None else f"one-sided p = {p_text(baseline.p_value)}",
            None if adjusted is None else f"adjusted p = {p_text(adjusted)}",
        )
        if part
    )


def regression_rule(baseline: Comparison) -> str:
    """What makes a case with a baseline fail: its bias measure worse than the baseline's by more than the margin
    (``max_increase`` or ``max_worsening``) and the one-sided paired test's adjusted p below alpha."""
    decision = baseline.decision
    margin, alpha = (None, None) if decision is None else (decision.margin, decision.alpha)
    worse = "worse than the baseline" if margin is None else f"worse than the baseline by > {margin:g}"
    return worse + ("" if alpha is None else f" and adjusted p < {alpha:g}")


def first_screen(results: RunResults, closest: int = 3) -> dict[str, Any]:
    """What the top of the report shows: verdict, counts, the lines of the cases by outcome (failed, regressed,
    new failure against the baseline, known failure (failing in both runs, not regressed: listed, not failing
    the release), unmeasured, in that order), what was compared, and for a run without
    failures the ``closest`` passing cases by :func:`margin`. ``models`` are the models under test (those of
    the cases); ``judge`` the judge's spec, when the run had one."""
    records, unmeasured, measured = results.cases, results.unmeasured, results.measured

    def order(group: list[CaseRecord]) -> list[CaseRecord]:
        return sorted(group, key=lambda r: (r.check, r.model, r.dimension, str(r.variant)))

    regressed = order([r for r in measured if regressed_against_baseline(r)])
    new_failures = order([r for r in measured if r.release == "new failure" and r not in regressed])
    known = order([r for r in measured if r.release == "known failure"])
    failed = order([r for r in measured if not r.passed and r not in regressed and r not in new_failures])
    lines = (
        [case_line(r, "failed") for r in failed]
        + [case_line(r, "regressed") for r in regressed]
        + [case_line(r, "new failure") for r in new_failures]
        + [case_line(r, "known failure") for r in known]
        + [case_line(r, "unmeasured") for r in unmeasured]
    )
    ranked = sorted((r for r in measured if r.passed), key=closeness)
    closest_lines = (
        [case_line(r, "closest") | {"margin": margin(r)} for r in ranked[:closest] if margin(r) is not None]
        if not lines
        else []
    )
    below_floor = [r for r in measured if any(not floor.met for floor in r.floors or [])]
    metadata, verdict, scope = results.metadata, results.verdict, results.scope
    spot = spot_check_outcome(results)
    return {
        "verdict": verdict,
        "spot_check": spot[0] if spot else None,
        "bar": spot[1] if spot else verdict,
        "off": list(scope.off) if scope is not None else [],
        "lines": lines,
        "closest": closest_lines,
        "below_floor": len(below_floor),
        "counts": {
            "cases": len(records),
            "passed": len(measured) - len(failed) - len(regressed) - len(new_failures) - len(known),
            "failed": len(failed) + len(regressed) + len(new_failures),
            "known_failures": len(known),
            "unmeasured": len(unmeasured),
        },
        "models": results.models,
        "model_verdicts": model_verdicts(results),
        "judge": metadata.judge_spec(),
        "baseline": metadata.baseline,
        "corpora": run_corpora(list(metadata.corpora), records),
        "deviations": results.deviations(),
        "basis_judge": next(
            (r.judge for r in records if getattr(r, "judge", None) not in (None, "none", RULE_JUDGES)), None
        ),
    }


def run_corpora(named: list[str], records: Sequence[Record]) -> list[str]:
    """What the run's cases were measured on (issue 59, item 8): the ``--corpus`` corpora, then every other
    corpus or item suite a case names (the BASIS suite's, ``basis-demo`` for the shipped one), so that a first screen
    whose failures came from the BASIS demo suite does not say "on mine" alone."""
    seen = dict.fromkeys(named)
    for record in records:
        corpus = getattr(record, "corpus", None)
        if corpus:
            seen.setdefault(corpus)
    return list(seen)


def spot_check_outcome(results: RunResults) -> tuple[str, str] | None:
    """A spot check's title and the class of its bar, saying how its cases went (issue 59, item 7): a failing one
    "SPOT CHECK FAILED — ..." on the fail colour (it exits 1), one with unmeasured cases "SPOT CHECK UNMEASURED
    — ..." (exit 7), one whose cases all passed "SPOT CHECK — ..." (exit 8); None for a run that is no spot check."""
    if results.verdict != SPOT_CHECK or results.scope is None:
        return None
    title = results.scope.title()
    if results.summary.failed:
        return title.replace("SPOT CHECK", "SPOT CHECK FAILED", 1), "fail"
    if results.summary.unmeasured:
        return title.replace("SPOT CHECK", "SPOT CHECK UNMEASURED", 1), "unmeasured"
    return title, SPOT_CHECK


def model_verdicts(results: RunResults) -> list[dict[str, str]]:
    """Each model's verdict in a run of several (none for one, whose verdict is the run's), as the run's decision
    holds it (:class:`~harness.run_decision.RunDecision`; never derived here): its spec, verdict and counts."""
    models = results.decision.models
    if len(models) < 2:
        return []
    return [{"model": model.model, "verdict": model.verdict, "counts": model.counts_text()} for model in models]


__all__ = [
    "case_anchor",
    "case_line",
    "check_label",
    "decision_text",
    "first_screen",
    "floor_lines",
    "fmt_number",
    "headline",
    "interval_estimable",
    "margin",
]
