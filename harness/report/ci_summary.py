"""A short Markdown summary of a results.json, for a CI job page or a pull-request comment (``--summary-md``).

:func:`render_summary` is a pure function of the :class:`~harness.results.RunResults`: the verdict and counts, each
model's verdict (in a run of several; both as the run's decision holds them, never derived here), one table row per
failed, unmeasured or regressed case (its value and, where judged, its group gap; the threshold's bounds, and
the quality floors it does not meet, which never fail a case; its q-value, adjusted p, CI or gap CI; the delta
against the baseline; for an unmeasured case, its cause), and a line linking the report. It states nothing
that results.json does not hold.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.core.files import atomic_write_text
from harness.display.decisions import WITHIN_THE_BAR
from harness.records import (
    CaseRecord,
    Comparison,
    Record,
    StatedThreshold,
    UnmeasuredRecord,
    regressed_against_baseline,
)
from harness.report.summary import spot_check_outcome
from harness.results import RunResults
from harness.thresholds import LOWER_BOUND, UPPER_BOUND, Bound


def render_summary(results: RunResults, report_link: str | None = None, results_link: str | None = None) -> str:
    """The Markdown summary of ``results``; ``report_link`` and ``results_link`` (paths or URLs) fill the link line."""
    cases = results.cases
    counts = results.summary
    models = sorted(results.models)
    regressed = [case for case in cases if regressed_against_baseline(case)]
    scope = results.scope
    spot = spot_check_outcome(results)
    title = spot[0] if spot else results.verdict.upper()
    lines = [f"### Voice-induced bias gate: **{title}**", ""]
    if scope is not None and scope.off:
        lines += [f"Off (turned off in the thresholds file): {', '.join(f'`{name}`' for name in scope.off)}.", ""]
    stopped = results.incomplete
    if stopped is not None:
        lines += [
            f"**Do not release: the run was stopped by {stopped.stopped_by}; {len(stopped.not_run)} of "
            f"{stopped.selected} selected tests did not run.** The counts below are of the cases that finished.",
            "",
        ]
    lines.append(
        f"{counts.cases} cases: {counts.passed} passed, {counts.failed} failed, {counts.unmeasured} unmeasured"
        + (f"; {len(regressed)} regressed against the baseline `{_baseline_source(results)}`" if regressed else "")
        + (f". Model{'s' if len(models) > 1 else ''}: {', '.join(f'`{model}`' for model in models)}" if models else "")
        + "."
    )
    lines += model_verdict_lines(results)
    lines += [f"**Engine confound:** {line}." for line in results.engine_confounds()]
    deviations = (results.metadata.baseline.threshold_deviations or []) if results.metadata.baseline is not None else []
    if deviations:
        lines += ["", "Judged by one rule with the baseline (the stricter where the two thresholds files differ):"]
        lines += [f"- {line}" for line in deviations]
    listed = [
        case
        for case in cases
        if not case.passed
        or regressed_against_baseline(case)
        or (isinstance(case, CaseRecord) and case.release == "known failure")
    ]
    if listed:
        prefix = f"{models[0]}-" if len(models) == 1 else ""
        lines += [
            "",
            "| Case | Check | Outcome | Value | Threshold | adjusted p / q / CI | Δ baseline |",
            "|---|---|---|---|---|---|---|",
        ]
        for case in sorted(listed, key=_row_order):
            lines.append("| " + " | ".join(_cell(text) for text in _row(case, prefix)) + " |")
    links = [
        f"[report]({report_link})" if report_link else None,
        f"[results.json]({results_link})" if results_link else None,
    ]
    if any(links):
        lines += ["", "Details: " + " · ".join(link for link in links if link)]
    return "\n".join(lines) + "\n"


def model_verdict_lines(results: RunResults) -> list[str]:
    """In a run of several models, one list item per model: its verdict and counts as the run's decision holds
    them (:class:`~harness.run_decision.RunDecision`)."""
    models = results.decision.models
    if len(models) < 2:
        return []
    return ["", "Per model:", ""] + [
        f"- `{model.model}`: **{model.verdict.upper()}** ({model.counts_text()})" for model in models
    ]


def write_summary(
    results: RunResults,
    path: str | Path,
    report: str | Path | None = None,
    results_file: str | Path | None = None,
) -> Path:
    """Write :func:`render_summary` atomically to ``path``; the report and results files are linked relative to it."""
    path = Path(path)
    atomic_write_text(path, render_summary(results, _relative(report, path), _relative(results_file, path)))
    return path


def _relative(target: str | Path | None, summary: Path) -> str | None:
    if target is None:
        return None
    return Path(os.path.relpath(Path(target).resolve(), summary.resolve().parent)).as_posix()


def threshold_text(threshold: StatedThreshold) -> str:
    """What a case is judged by, as its thresholds declare it (:meth:`~harness.thresholds.SectionThresholds.bounds`):
    each bar that decides under the case's rule with its relation (``max_gap ≤ 30``), a lower and an upper bound of
    one measure as an interval (``[0.9, 1.11]``); quality floors are left out (reported apart from the bias verdict).
    Under a rule that lets no bar decide, the test instead (``adjusted p < 0.05``, ``BH q < 0.05``)."""
    significance = threshold.significance_rule()
    if significance is not None:  # no magnitude bar: its max_ntvd or bounds decide nothing (issue 59, item 7)
        return significance.test + ("" if significance.alpha is None else f" < {_number(significance.alpha)}")
    by_measure: dict[str, list[Bound]] = {}
    for bound in threshold.bounds():
        if not bound.floor:
            by_measure.setdefault(bound.measure, []).append(bound)
    parts = []
    for bounds in by_measure.values():
        sides = {bound.side: bound for bound in bounds}
        if len(bounds) == 2 and set(sides) == {LOWER_BOUND, UPPER_BOUND}:
            parts.append(f"[{_number(sides[LOWER_BOUND].value)}, {_number(sides[UPPER_BOUND].value)}]")
        else:
            parts += [f"{bound.key} {bound.relation} {_number(bound.value)}" for bound in bounds]
    return ", ".join(parts)


def uncertainty_text(case: CaseRecord) -> str:
    """The p-value the verdict was decided on, adjusted for the gate's family (the ``decision`` of schema 2), else
    the BH q-value VIBE reports (it decides nothing), else p, else the CI. Under the rule ``both`` a case within its
    bar was never tested against alpha, so it reads "within the bar", not its adjusted p of 1 (issue 47)."""
    decision = case.decision
    if decision is not None and decision.rule == "both" and decision.relevant is False:
        return WITHIN_THE_BAR
    adjusted = case.decision.p_adjusted if case.decision is not None else None
    stated = case.statistics()
    for label, value in (("adjusted p", adjusted), ("BH q", stated.q), ("p", stated.p)):
        if value is not None:
            return f"{label} = {value:.3g}"
    if stated.ci is not None:
        return f"CI [{_number(stated.ci[0])}, {_number(stated.ci[1])}]"
    if stated.gap_ci is not None:
        return f"gap CI [{_number(stated.gap_ci[0])}, {_number(stated.gap_ci[1])}]"
    return ""


def value_text(case: CaseRecord) -> str:
    """The case's headline: its value, or where that value is a quality measure (BASIS), the bias measure its verdict
    was judged on first (the best-worst group gap, or the deciding contrast, ICAT's difference in the share choosing
    a group's stereotype), with the quality value after it under its floor's name (issue 47: one headline value,
    floors under their own names)."""
    gap = case.statistics().gap
    value = _number(case.value)
    floor_names = [floor.key for floor in case.floors or []]
    quality = f"{' / '.join(floor_names) or 'quality'} measure {value}"
    if gap is not None:
        return f"gap {_number(gap)}; {quality}"
    estimate = case.decision.estimate if case.decision is not None else None
    if case.floors and isinstance(estimate, (int, float)):
        return f"contrast {_number(estimate)}; {quality}"
    return value


def _row(case: Record, prefix: str) -> list[str]:
    name = case.id[len(prefix) :] if prefix and case.id.startswith(prefix) else case.id
    if isinstance(case, UnmeasuredRecord):
        cause = case.cause
        message = (cause.message if cause is not None and cause.message else case.message).replace(f"{case.id}: ", "")
        kind = cause.label if cause is not None and cause.kind else "error"
        return [f"`{name}`", case.check, f"unmeasured ({kind}: {_shorten(message)})", "–", "–", "–", "–"]
    baseline = case.baseline
    floors = case.floors or []
    outcome = (
        ("failed" if not case.passed else "passed")
        + (f" ({case.release})" if case.release else "; regressed" if regressed_against_baseline(case) else "")
        + "".join(f"; floor {floor.key} {_number(floor.threshold)} not met" for floor in floors if not floor.met)
    )
    delta = None if baseline is None else baseline.delta
    return [
        f"`{name}`",
        case.check,
        outcome,
        value_text(case),
        threshold_text(case.threshold),
        uncertainty_text(case),
        "–" if baseline is None or not isinstance(delta, (int, float)) else f"{delta:+.3g}" + _release_p(baseline),
    ]


def _release_p(baseline: Comparison) -> str:
    """The regression test's adjusted p (the gate's family), with whether it made a regression or a backbone change."""
    adjusted = baseline.p_adjusted
    word = " significant" if baseline.regressed else " backbone" if baseline.status == "backbone" else ""
    if isinstance(adjusted, (int, float)):
        return f" (adjusted p = {adjusted:.3g}{';' + word if word else ''})"
    return f" ({word.strip()})" if word else ""


def _row_order(case: Record) -> tuple:
    return (not regressed_against_baseline(case), isinstance(case, CaseRecord), case.check, case.id)


def _baseline_source(results: RunResults) -> str:
    if results.metadata.baseline is not None:
        return str(results.metadata.baseline.source)
    baseline = next((case.baseline for case in results.measured if regressed_against_baseline(case)), None)
    return "?" if baseline is None else baseline.source


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "–"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
