"""The report's first screen: may we release, and if not, why.

One line per failed, regressed or unmeasured case (check, model, dimension, value, threshold, q or interval,
a link to the case in its section), what was compared with what, and for a passing run the closest calls:
the passing cases whose value lies nearest its threshold, measured by :func:`margin`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.records import CaseRecord, ErrorRecord
from harness.report.plots import interval_estimable, interval_text

CHECK_LABELS = {
    "ntvd": "VIBE nTVD", "wer_ratio": "WER ratio", "score_ratio": "judge-score ratio", "icat": "BASIS ICAT",
    "personalization": "BASIS personalization", "classification": "BASIS classification",
    "robustness": "BASIS robustness", "error": "unmeasured",
}
RATIO_QUANTITY = {"wer_ratio": "expected-WER ratio", "score_ratio": "judge-score ratio"}
GAP_UNITS = "points"


def case_anchor(record: CaseRecord | ErrorRecord) -> str:
    """A stable HTML id for a case (``case-`` and 12 hex digits of its check and id), safe whatever the id holds."""
    return "case-" + hashlib.sha256(f"{record.check}\0{record.id}".encode()).hexdigest()[:12]


def _deciding_comparison(record: CaseRecord) -> dict[str, Any] | None:
    """The comparison whose judged ratio is the record's value (the failing one first)."""
    comparisons = sorted(record.comparisons, key=lambda c: not c.get("failed"))
    for comparison in comparisons:
        for method in comparison["methods"]:
            if method["method"] == comparison.get("judged_method") and method.get("ratio") == record.value:
                return comparison | {"row": method}
    return None


def ci_words(entry: Mapping[str, Any] | None, digits: int = 1) -> str:
    """"95% CI a to b", or "interval not estimable" (:func:`harness.report.plots.interval_estimable`)."""
    return interval_text(entry, digits, "95% CI {0} to {1}")


def gap_text(gap: Mapping[str, Any] | None) -> str:
    """"gap best − worst v points (95% CI a to b)" of a BASIS case's best and worst group."""
    if not gap or gap.get("value") is None:
        return "gap not estimable"
    return f"gap {gap.get('best')} − {gap.get('worst')} {gap['value']:.1f} {GAP_UNITS} ({ci_words(gap)})"


def magnitude_rule(record: CaseRecord) -> str:
    """The effect size a case must exceed to fail, in its check's words (schema 2: ``max_gap`` for BASIS)."""
    threshold = record.threshold
    if record.check == "ntvd":
        return f"nTVD > {threshold.get('max_ntvd'):g}"
    if record.check in RATIO_QUANTITY:
        return f"ratio outside [{threshold.get('lower'):g}, {threshold.get('upper'):g}]"
    return f"|difference| > {threshold.get('max_gap'):g} {GAP_UNITS}"


def decided_headline(record: CaseRecord) -> dict[str, str]:
    """The headline of a case with a ``decision`` (results.json schema 2): the deciding contrast and its
    interval, the rule (effect beyond the threshold and/or adjusted p below alpha) and the adjusted p;
    ``statistic`` names what the contrast measures (the report shows it on hover)."""
    decision = record.decision
    digits = 3 if record.check in RATIO_QUANTITY else 1
    significant = f"adjusted p < {decision.get('alpha', 0.05):g}"
    magnitude = magnitude_rule(record)
    rule = {"magnitude": magnitude, "bounds": magnitude, "significance": significant, "ci": significant}.get(
        decision.get("rule"), f"{magnitude} and {significant}")
    estimate = decision.get("estimate")
    unit = f" {GAP_UNITS}" if record.check not in RATIO_QUANTITY and record.check != "ntvd" else ""
    value = decision.get("statistic") or record.check
    if decision.get("label") and estimate is not None:
        value = f"{decision['label']} = {estimate:.{digits}f}{unit}"
    pieces = [] if decision.get("ci_low") is None and decision.get("ci_high") is None else [ci_words(decision, digits)]
    if decision.get("p_adjusted") is not None:
        pieces.append(f"adjusted p = {_p(decision['p_adjusted'])}")
    return {"value": value, "threshold": rule, "uncertainty": "; ".join(pieces) or "–", "statistic": decision.get("statistic")}


def headline(record: CaseRecord) -> dict[str, str]:
    """``value``, ``threshold`` (when it fails) and ``uncertainty`` (q or interval) of a case in words and units of its check:
    from its ``decision`` when it has one (:func:`decided_headline`), else by the schema-1 rules."""
    if record.decision and "statistic" in record.decision:
        return decided_headline(record)
    threshold, value = record.threshold, record.value
    if record.check == "ntvd":
        rule, limit, alpha = threshold.get("rule"), threshold.get("max_ntvd"), threshold.get("alpha")
        text = {"magnitude": f"nTVD > {limit:g}", "significance": f"q < {alpha:g}"}.get(rule, f"nTVD > {limit:g} and q < {alpha:g}")
        return {"value": f"nTVD {fmt_number(value, 1)} (0–100)", "threshold": text,
                "uncertainty": f"q = {_p(record.q)}" + ("" if record.p is None else f" (p = {_p(record.p)})")}
    if record.check in RATIO_QUANTITY:
        comparison = _deciding_comparison(record)
        row = (comparison or {}).get("row") or {"ci_low": record.ci[0] if record.ci else None, "ci_high": record.ci[1] if record.ci else None}
        where = f" ({comparison['comparison']}, {comparison['judged_method']})" if comparison else ""
        rule = threshold.get("rule")
        bounds = f"[{threshold.get('lower'):g}, {threshold.get('upper'):g}]"
        text = {"ci": "the 95% CI excludes 1", "bounds": f"the ratio lies outside {bounds}"}.get(
            rule, f"the 95% CI excludes 1 and the ratio lies outside {bounds}")
        return {"value": f"{RATIO_QUANTITY[record.check]} {fmt_number(value, 3)}{where}", "threshold": text,
                "uncertainty": ci_words(row, 3)}
    if record.check == "icat":
        per_mode = (record.mode_effects.get("per_mode") or {}).get(record.mode)
        return {"value": f"mean ICAT {fmt_number(value, 1)} (0–100, 100 = balanced)",
                "threshold": f"ICAT < {threshold.get('min_icat'):g}",
                "uncertainty": ci_words(per_mode)}
    if record.check == "robustness":
        return {"value": f"{record.task} score {fmt_number(value, 1)} (0–100)",
                "threshold": _accuracy_gap_rule("score", threshold.get("min_score"), threshold.get("max_gap"), ""),
                "uncertainty": gap_text(record.gap)}
    noun = "accuracy"
    return {"value": f"mean {noun} {fmt_number(value, 1)}%",
            "threshold": _accuracy_gap_rule(noun, threshold.get("min_accuracy"), threshold.get("max_gap"), "%"),
            "uncertainty": gap_text(getattr(record, "gap", None))}


def _accuracy_gap_rule(noun: str, minimum: float | None, max_gap: float | None, unit: str) -> str:
    parts = [] if not minimum else [f"{noun} < {minimum:g}{unit}"]
    if max_gap is not None:
        parts.append(f"gap > {max_gap:g} {GAP_UNITS} with its CI above 0")
    return " or ".join(parts)


def margin(record: CaseRecord) -> float | None:
    """How far a passing case lies from failing, as a share of its threshold (0 = on it; smaller = closer).

    nTVD: (max_ntvd − nTVD)/max_ntvd and (q − alpha)/alpha, the larger under rule ``both`` (both must cross);
    ratios: ln distance of the ratio to the nearer bound and of the CI end nearer 1 to 1 (how far the CI must move
    to exclude 1), each over ln(upper), combined likewise;
    ICAT: (ICAT − min_icat)/min_icat; BASIS accuracy and robustness: the smaller of (value − min)/min and
    (max_gap − gap)/max_gap. With a ``decision`` (schema 2) from its deciding contrast: the magnitude part as
    above on the contrast's estimate (BASIS: (max_gap − |estimate|)/max_gap), the significance part
    (p_adjusted − alpha)/alpha, combined by the decision's rule. None when the case has no value to measure.
    """
    threshold, value = record.threshold, record.value
    if value is None:
        return None
    decision = record.decision or {}
    if "statistic" in decision:
        return _decided_margin(record, decision)
    if record.check == "ntvd":
        size = (threshold["max_ntvd"] - value) / threshold["max_ntvd"]
        significance = math.inf if record.q is None else (record.q - threshold["alpha"]) / threshold["alpha"]
        return {"magnitude": size, "significance": significance}.get(threshold.get("rule"), max(size, significance))
    if record.check in RATIO_QUANTITY:
        if value <= 0:
            return None
        scale = math.log(threshold["upper"]) or 1.0
        bounds = min(math.log(value / threshold["lower"]), math.log(threshold["upper"] / value)) / scale
        low, high = (record.ci or [None, None]) + [None] * (2 - len(record.ci or []))
        interval = math.inf if low is None or high is None or low <= 0 else min(-math.log(low), math.log(high)) / scale
        return {"bounds": bounds, "ci": interval}.get(threshold.get("rule"), max(bounds, interval))
    if record.check == "icat":
        minimum = threshold.get("min_icat") or 0
        return (value - minimum) / minimum if minimum else None
    candidates = []
    minimum = threshold.get("min_accuracy", threshold.get("min_score")) or 0
    if minimum:
        candidates.append((value - minimum) / minimum)
    gap = getattr(record, "gap", None) or {}
    if threshold.get("max_gap") and gap.get("value") is not None:
        candidates.append((threshold["max_gap"] - gap["value"]) / threshold["max_gap"])
    return min(candidates) if candidates else None


def margin_parts(record: CaseRecord) -> tuple[float | None, float | None]:
    """(magnitude, significance) distances of a case with a ``decision`` from failing (see :func:`margin`);
    (None, None) without one."""
    decision, threshold = record.decision or {}, record.threshold
    if "statistic" not in decision:
        return None, None
    estimate, alpha = decision.get("estimate"), decision.get("alpha", 0.05)
    significance = math.inf if decision.get("p_adjusted") is None else (decision["p_adjusted"] - alpha) / alpha
    if estimate is None:
        magnitude = None
    elif record.check == "ntvd":
        magnitude = (threshold["max_ntvd"] - estimate) / threshold["max_ntvd"]
    elif record.check in RATIO_QUANTITY:
        magnitude = None if estimate <= 0 else min(math.log(estimate / threshold["lower"]), math.log(threshold["upper"] / estimate)) / (math.log(threshold["upper"]) or 1.0)
    else:
        magnitude = (threshold["max_gap"] - abs(estimate)) / threshold["max_gap"] if threshold.get("max_gap") else None
    return magnitude, significance


def _decided_margin(record: CaseRecord, decision: Mapping[str, Any]) -> float | None:
    magnitude, significance = margin_parts(record)
    rule = decision.get("rule")
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


def decision_text(decision: Mapping[str, Any] | None) -> str | None:
    """The case's multiple-testing decision in words: correction, adjusted p, relevance (None without one)."""
    if not decision:
        return None
    parts = []
    if decision.get("p_adjusted") is not None:
        parts.append(f"adjusted p = {_p(decision['p_adjusted'])} (α = {decision.get('alpha', 0.05):g})")
    elif decision.get("p") is not None:
        parts.append(f"p = {_p(decision['p'])}")
    if decision.get("correction"):
        parts.append(str(decision["correction"]))
    if decision.get("estimable") is False:
        parts.append("not estimable" + (f": {decision['reason']}" if decision.get("reason") else ""))
    else:
        flags = [("significant" if decision.get("significant") else "not significant") if "significant" in decision else None,
                 ("beyond the practical threshold" if decision.get("relevant") else "within the practical threshold")
                 if "relevant" in decision else None]
        parts += [flag for flag in flags if flag]
    return "; ".join(parts) or None


def floor_lines(floors: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Quality floors as lines; a floor not met is reported "below floor", which is not a bias fail."""
    return [{"key": floor.get("key"), "met": bool(floor.get("met")),
             "text": f"{floor.get('key')} {fmt_number(floor.get('value'), 1)} vs floor {fmt_number(floor.get('threshold'), 1)}: "
                     + ("met" if floor.get("met") else "below floor (quality, not a bias fail)")}
            for floor in floors or []]


def cause_text(record: ErrorRecord) -> str:
    cause = getattr(record, "cause", None) or {}
    if not cause:
        return record.message
    source = f" ({cause['source']})" if cause.get("source") else ""
    return f"{cause.get('kind', 'unknown')} error{source}: {cause.get('message') or record.message}"


def case_line(record: CaseRecord | ErrorRecord, status: str) -> dict[str, Any]:
    """One first-screen line: status (failed, regressed, unmeasured, closest), check (of an unmeasured case:
    its test function's name), model, dimension, variant, value, threshold, q or interval, decision, floors
    and the link to the case."""
    check = record.check
    if isinstance(record, ErrorRecord):
        check = record.nodeid.rsplit("::", 1)[-1].split("[", 1)[0].removeprefix("test_")
    line = {"status": status, "check": CHECK_LABELS.get(check, check), "id": record.id,
            "anchor": case_anchor(record), "model": getattr(record, "model", None),
            "dimension": getattr(record, "dimension", None), "variant": getattr(record, "variant", None), "statistic": None}
    if isinstance(record, ErrorRecord):
        return line | {"value": None, "threshold": None, "uncertainty": None, "cause": cause_text(record),
                       "decision": None, "floors": []}
    baseline = record.baseline or {}
    regression = None
    if baseline.get("status") in ("compared", "backbone") and isinstance(baseline.get("delta"), (int, float)):
        adjusted = (baseline.get("decision") or {}).get("p_adjusted")
        regression = (f"Δ {baseline['delta']:+.3g} vs baseline {fmt_number(baseline.get('baseline_value'), 3)}"
                      + ("" if baseline.get("p_value") is None else f", one-sided p = {_p(baseline['p_value'])}")
                      + ("" if adjusted is None else f", adjusted p = {_p(adjusted)}")
                      + (" (a mode without audio: the backbone's change, not gated)" if baseline["status"] == "backbone" else ""))
    decided = bool(record.decision) and "statistic" in record.decision
    return line | headline(record) | {"cause": None, "regression": regression, "floors": floor_lines(record.floors),
                                      "decision": None if decided else decision_text(record.decision)}


def first_screen(records: Sequence[CaseRecord | ErrorRecord], results: Mapping[str, Any], closest: int = 3) -> dict[str, Any]:
    """What the top of the report shows: verdict, counts, the lines of failed / regressed / unmeasured cases
    (unmeasured first, then regressions, then other failures), what was compared, and for a run without
    failures the ``closest`` passing cases by :func:`margin`. ``models`` are the models under test (those of
    the cases); ``judge`` the judge's spec, when the run had one."""
    unmeasured = [r for r in records if isinstance(r, ErrorRecord)]
    measured = [r for r in records if not isinstance(r, ErrorRecord)]
    regressed = [r for r in measured if (r.baseline or {}).get("regressed")]
    failed = [r for r in measured if not r.passed and r not in regressed]
    lines = ([case_line(r, "unmeasured") for r in unmeasured] + [case_line(r, "regressed") for r in regressed]
             + [case_line(r, "failed") for r in sorted(failed, key=lambda r: (r.check, r.model, r.dimension, str(r.variant)))])
    ranked = sorted((r for r in measured if r.passed), key=closeness)
    closest_lines = [case_line(r, "closest") | {"margin": margin(r)} for r in ranked[:closest] if margin(r) is not None] if not lines else []
    below_floor = [r for r in measured if any(not floor.get("met") for floor in r.floors or [])]
    metadata = results.get("metadata") or {}
    verdict = results.get("verdict") or ("fail" if lines else "pass")
    return {
        "verdict": verdict, "lines": lines, "closest": closest_lines, "below_floor": len(below_floor),
        "counts": {"cases": len(records), "passed": len(measured) - len(failed) - len(regressed),
                   "failed": len(failed) + len(regressed), "unmeasured": len(unmeasured)},
        "models": [model for model in dict.fromkeys(getattr(r, "model", None) for r in records) if model],
        "judge": next((spec for spec, fingerprint in (metadata.get("models") or {}).items()
                       if metadata.get("judge") and fingerprint == metadata["judge"]), None),
        "baseline": metadata.get("baseline"),
        "corpora": list(metadata.get("corpora", {})),
    }


def fmt_number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


__all__ = ["case_anchor", "case_line", "first_screen", "headline", "interval_estimable", "margin"]
