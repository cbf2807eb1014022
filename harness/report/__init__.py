"""The self-contained HTML report (Jinja, autoescaped, no external assets, no script) rendered from results.json.

The first screen answers "may we release, and if not, why" (:mod:`harness.report.summary`); each check's
section follows with its plots (:mod:`harness.display.plots`, inline SVG) and its tables folded below them.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from harness.checks import BUILTIN_FOLDER, CHECKS, check_folder, views
from harness.core.files import atomic_write_text
from harness.display.decisions import one_line, other_test
from harness.display.plots import PALETTE, interval_text, text_width
from harness.display.text import case_anchor, decision_text, floor_lines, key_legend, model_keys
from harness.records import AttributeDistribution, CaseRecord, Record, UnmeasuredRecord, regressed_against_baseline
from harness.report.summary import cause_text, first_screen
from harness.results import RunResults

__all__ = ["bar_chart", "check_sections", "render_report", "write_report"]


def bar_chart(distribution: AttributeDistribution | None) -> dict[str, Any] | None:
    """Geometry of a grouped horizontal bar chart of P_g(v) for each value v (one bar per group), with a value
    axis of P_g(v) in percent (ticks every 25%) below the bars; the values' column is as wide as the longest."""
    if distribution is None or not distribution.values:
        return None
    groups, values = distribution.groups, distribution.values
    bar_height, gap, plot_width = 12, 8, 320
    label_width = max([60] + [text_width(str(value)) + 12 for value in values])
    rows, y = [], 24
    for index, value in enumerate(values):
        bars = []
        for position, group in enumerate(groups):
            probability = distribution.probability(group, index)
            bars.append(
                {
                    "y": y + position * bar_height,
                    "width": round(probability * plot_width, 2),
                    "color": PALETTE[position % len(PALETTE)],
                    "label": f"{group}: {probability:.0%}",
                }
            )
        rows.append({"value": value, "y_text": y + len(groups) * bar_height / 2 + 4, "bars": bars})
        y += len(groups) * bar_height + gap
    legend = [
        {"group": g, "color": PALETTE[i % len(PALETTE)], "x": label_width + i * 110} for i, g in enumerate(groups)
    ]
    axis_y = y
    return {
        "attribute": distribution.attribute,
        "rows": rows,
        "legend": legend,
        "height": axis_y + 40,
        "width": label_width + plot_width + 60,
        "label_width": label_width,
        "plot_width": plot_width,
        "axis_y": axis_y,
        "ticks": [{"x": label_width + plot_width * share / 100, "label": f"{share}%"} for share in range(0, 101, 25)],
        "axis_label": "share of the group's answers, P_g(v)",
        "mid_x": label_width + plot_width / 2,
    }


BREAK_AFTER = re.compile(r"([-+:/_.,=])")


def breakable(text: Any) -> markupsafe.Markup:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each of ``- + : / _ . , =``: a model spec
    or case id wraps at its own separators, never inside a word."""
    return markupsafe.Markup(BREAK_AFTER.sub(r"\1<wbr>", str(markupsafe.escape(text))))


@functools.cache
def template_environment() -> jinja2.Environment:
    """The report's Jinja environment (autoescaped, strict), built once per process so templates compile once.

    Templates are found in ``templates/`` (the page, the SVG partials), then as ``<check>/<file>`` in each check's
    folder, then as ``<folder>/<file>`` among the built-in checks' folders (the shared BASIS and ratio partials)."""
    environment = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [
                jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                jinja2.PrefixLoader({name: jinja2.FileSystemLoader(check_folder(name)) for name in CHECKS}),
                jinja2.FileSystemLoader(BUILTIN_FOLDER),
            ]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["fmt"] = lambda value, digits=2: "–" if value is None else f"{value:.{digits}f}"
    environment.filters["pval"] = lambda value: "–" if value is None else f"{value:.3g}"
    environment.filters["interval"] = interval_text
    environment.filters["breakable"] = breakable
    environment.filters["model_keys"] = model_keys
    environment.filters["key_legend"] = key_legend
    environment.globals["verdict_class"] = verdict_class
    return environment


def render_report(
    results: RunResults,
    trend: Mapping[str, Any] | None = None,
    human_validation: Mapping[str, Any] | None = None,
) -> str:
    """The report of one run; ``trend`` (:func:`harness.report.trend.trend_view`) adds the trend section over a series;
    ``human_validation`` (:func:`human_validation_view`) adds VIBE's Table I, the extractor's agreement with an
    annotator."""
    environment = template_environment()
    cases = results.cases
    failing = [
        (case, bar_chart(case.figure_distribution()), one_line_decision(case))
        for case in results.measured
        if not case.passed
    ]
    return environment.get_template("report.html.j2").render(
        results=results,
        screen=first_screen(results),
        cases=[
            {
                "record": case,
                "anchor": case_anchor(case),
                "decision": decision_text(case.decision if isinstance(case, CaseRecord) else None),
                "decision_line": one_line_decision(case),
                "other_test": other_test_line(case),
                "shown": headline_value(case),
                "floors": floor_lines(getattr(case, "floors", None)),
                "cause": cause_text(case) if isinstance(case, UnmeasuredRecord) else None,
                "unmeasured": isinstance(case, UnmeasuredRecord),
            }
            for case in sorted(
                cases,
                key=lambda case: (not regressed_against_baseline(case), case.passed, case.id),
            )
        ],
        unmeasured=[
            {"record": case, "anchor": case_anchor(case), "cause": cause_text(case)} for case in results.unmeasured
        ],
        failing=failing,
        sections=check_sections(cases),
        trend=trend,
        human_validation=human_validation,
        generated=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def one_line_decision(case: Record) -> str | None:
    """The case's decision in one line (:func:`harness.display.decisions.one_line`), worded by its check's view."""
    view = views().get(case.check)
    if view is None or not isinstance(case, CaseRecord) or not case.decision:
        return None
    return one_line(case, view.magnitude_rule(case), view.estimate_digits, view.estimate_unit)


def other_test_line(case: Record) -> str | None:
    """In a run with a baseline, the test that did not decide the case (:func:`harness.display.decisions.other_test`)."""
    view = views().get(case.check)
    if view is None or not isinstance(case, CaseRecord) or not case.decision:
        return None
    return other_test(case, view.magnitude_rule(case), view.estimate_digits, view.estimate_unit)


def headline_value(case: Record) -> dict[str, Any]:
    """The value the All cases table shows: the deciding contrast's estimate and label where the case has a decision
    (the first screen's headline value: a BASIS case's group difference, never its quality floor, which its notes
    name), else the record's value."""
    decision = getattr(case, "decision", None)
    if decision is not None and decision.decided and decision.estimate is not None:
        return {"value": decision.estimate, "label": decision.label}
    return {"value": getattr(case, "value", None), "label": None}


def human_validation_view(path: str | Path, n_bootstrap: int = 10_000) -> dict[str, Any]:
    """VIBE Table I from a filled annotation file (:mod:`harness.extraction.validation`): per task and overall, the
    percentage of extracted values the annotator judged to match the response, with a response-level bootstrap CI.
    A file that cannot be used raises :class:`~harness.extraction.validation.AnnotationError` naming it and the row."""
    from harness.extraction.validation import agreement, read_annotations

    result = agreement(read_annotations(path), n_bootstrap=n_bootstrap)
    return {
        "source": str(path),
        "rows": result.per_task.to_dict(orient="records"),
        "overall": result.overall,
        "ci": [result.ci_low, result.ci_high],
        "judgments": result.n_judgments,
        "responses": result.n_responses,
        "n_bootstrap": result.n_bootstrap,
    }


def verdict_class(verdict: str) -> str:
    """The style of a case's one-word verdict (:attr:`harness.records.CaseRecord.verdict`): pass, fail, or
    unmeasured (a case unmeasured by design, drawn from what it measured, is never styled as a pass)."""
    return {"pass": "pass", "FAIL": "fail"}.get(verdict, "unmeasured")


def check_sections(cases: Sequence[Record]) -> list[dict[str, Any]]:
    """One report section per check that has records, drawn by its view (:func:`harness.checks.views`), in registry
    order; a case unmeasured by design is drawn from what it measured, its verdict "unmeasured" (its record's
    :attr:`~harness.records.CaseRecord.verdict`)."""
    decided = [case.measured if isinstance(case, UnmeasuredRecord) and case.measured else case for case in cases]
    sections = []
    for name, view in views().items():
        selected = [case for case in decided if case.check == name and isinstance(case, CaseRecord)]
        if selected:
            sections.append(
                {
                    "name": name,
                    "title": view.title,
                    "template": f"{name}/{view.template}",
                    "context": view.context(selected),
                }
            )
    return sections


def write_report(results: RunResults, path: str | Path, trend: Mapping[str, Any] | None = None) -> Path:
    path = Path(path)
    atomic_write_text(path, render_report(results, trend=trend))
    return path
