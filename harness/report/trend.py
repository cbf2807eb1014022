"""The trend section: each case's value over a series of runs (nights, or checkpoints in release order).

Each run is listed with its verdict and each model's, as its results.json's decision holds them
(:class:`~harness.run_decision.RunDecision`; never derived here).

:func:`trend_view` is a pure function of the runs' results dicts, their labels and the neighbour comparisons
(``(i, case key) -> Comparison.to_json()``: run ``i`` against run ``i - 1`` by the check's baseline test,
computed by :mod:`harness.gate.series`, never here). One small multiple per case (inline SVG): the value at each
run, its CI as a whisker where the record has one, a filled point where its own test was significant (q, else
the adjusted p, else p below the record's alpha) and a hollow one otherwise, red where the case failed, the
bounds its thresholds declare of the value (:meth:`harness.thresholds.SectionThresholds.bounds`: a bar
deciding under the case's rule, a quality floor) as dashed lines (stepping where the thresholds changed), a ring and a mark
above it where the regression against the previous run was significant, and on the axis a tick where the
case was absent and a cross where it was unmeasured. Cases that regressed come first (latest regression
first), then those failing or unmeasured in the last run, then those absent or unmeasured in some run (appeared,
disappeared, or with gaps); the rest are folded per model and drawn without per-point detail, so 60 runs x 12 models stay readable and small.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.records import CaseKey, CaseRecord, Record, UnmeasuredRecord, case_key
from harness.results import RunResults
from harness.thresholds import VALUE

SeriesKey = CaseKey
"""(check, model, corpus, variant, dimension): one case across runs (:func:`harness.records.case_key`; following
checkpoints by position, the model part is the same for every run, :mod:`harness.gate.series`)."""

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 300, 100, 42, 8, 12, 18


def trend_view(
    labels: Sequence[str],
    runs: Sequence[RunResults],
    comparisons: Mapping[tuple[int, SeriesKey], Mapping[str, Any]],
    key: Callable[[Record], SeriesKey] = case_key,
) -> dict[str, Any]:
    """The trend section's context: the runs, the panels shown first, and the rest folded per model; ``key`` names
    a case across runs (:meth:`harness.gate.series.Run.key`)."""
    if len(labels) != len(runs):
        raise ValueError(f"{len(labels)} labels for {len(runs)} runs")
    cases: dict[SeriesKey, list[Record | None]] = {}
    by_id = {(case.check, case.id): key(case) for results in runs for case in results.measured}
    for index, results in enumerate(runs):
        for case in results.cases:
            # an unmeasured case of a schema-1 file recorded no model, corpus or dimension: its check and id name it
            named = key(case) if case.model is not None else by_id.get((case.check, case.id), key(case))
            cases.setdefault(named, [None] * len(runs))[index] = case
    panels = [panel(key, points, labels, comparisons) for key, points in cases.items()]
    panels.sort(key=lambda item: item["rank"])
    shown = [item for item in panels if item["rank"][0] < 3]
    folded: dict[str, list[dict[str, Any]]] = {}
    for item in panels:
        if item["rank"][0] == 3:
            folded.setdefault(item["model"], []).append(item)
    return {
        "runs": [
            {
                "label": label,
                "created": results.metadata.created,
                "verdict": results.verdict,
                "models": [{"model": model.model, "verdict": model.verdict} for model in results.decision.models],
            }
            for label, results in zip(labels, runs)
        ],
        "shown": shown,
        "folded": [{"model": model, "panels": items} for model, items in sorted(folded.items())],
        "counts": {
            "cases": len(panels),
            "regressed": sum(bool(item["regressions"]) for item in panels),
            "failing": sum(item["latest"] in ("failed", "unmeasured") for item in panels),
            "changed": sum(item["rank"][0] == 2 for item in panels),
        },
    }


def panel(
    key: SeriesKey,
    points: Sequence[Record | None],
    labels: Sequence[str],
    comparisons: Mapping[tuple[int, SeriesKey], Mapping[str, Any]],
) -> dict[str, Any]:
    """One case's small multiple and its place in the order (see the module docstring)."""
    present = [index for index, point in enumerate(points) if point is not None]
    regressions = [index for index in present if (comparisons.get((index, key)) or {}).get("regressed")]
    last = points[-1]
    latest = (
        "absent"
        if last is None
        else "unmeasured"
        if isinstance(last, UnmeasuredRecord)
        else "passed"
        if last.passed
        else "failed"
    )
    appeared = labels[present[0]] if present[0] > 0 else None
    disappeared = labels[present[-1] + 1] if present[-1] < len(points) - 1 else None
    gaps = any(not isinstance(point, CaseRecord) for point in points)
    group = 0 if regressions else 1 if latest in ("failed", "unmeasured") else 2 if gaps else 3
    known = next((point for point in reversed(points) if isinstance(point, CaseRecord)), points[present[-1]])
    followed = known.model and key[1] != known.model and known.id.startswith(f"{known.model}-")
    return {
        "check": key[0],
        "id": f"{key[1]}{known.id[len(known.model) :]}" if followed else known.id,
        "model": str(known.model or ""),
        "latest": latest,
        "appeared": appeared,
        "disappeared": disappeared,
        "regressions": [
            {"label": labels[index], "message": comparisons[(index, key)].get("message", "")} for index in regressions
        ],
        "rank": (group, -(regressions[-1] if regressions else 0), tuple(str(part) for part in key)),
        "chart": chart(points, labels, regressions, comparisons, key, detailed=group < 3),
    }


def chart(
    points: Sequence[Record | None],
    labels: Sequence[str],
    regressions: Sequence[int],
    comparisons: Mapping[tuple[int, SeriesKey], Mapping[str, Any]],
    key: SeriesKey,
    *,
    detailed: bool,
) -> dict[str, Any]:
    """Geometry of one small multiple; ``detailed`` adds a tooltip point per run (the folded panels draw only
    failed and regressed points)."""
    count = len(points)
    measured = {index: point for index, point in enumerate(points) if isinstance(point, CaseRecord)}
    values = {index: float(point.value) for index, point in measured.items() if _finite(point.value)}
    intervals = {index: _interval(point) for index, point in measured.items() if _interval(point)}
    bounds: dict[str, dict[int, float]] = {}  # the bars and quality floors of the value itself, as each run states them
    for index, point in measured.items():
        for bound in point.threshold.bounds():
            if bound.measure == VALUE and _finite(bound.value):
                bounds.setdefault(bound.key, {})[index] = bound.value
    span = [
        *values.values(),
        *(bound for interval in intervals.values() for bound in interval),
        *(value for series in bounds.values() for value in series.values()),
    ]
    low, high = (min(span), max(span)) if span else (0.0, 1.0)
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 0.5)
    low, high = low - pad, high + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(index: int) -> float:
        return round(LEFT + (index / (count - 1) if count > 1 else 0.5) * plot_w, 1)

    def y(value: float) -> float:
        return round(TOP + (high - value) / (high - low) * plot_h, 1)

    runs_of_values = _consecutive(sorted(values))
    dots = []
    for index, value in values.items():
        failed = not measured[index].passed
        if detailed or failed or index in regressions:
            significant = _significant(measured[index])
            dots.append(
                {
                    "x": x(index),
                    "y": y(value),
                    "failed": failed,
                    "filled": significant is True,
                    "title": _tooltip(labels[index], measured[index], significant, comparisons.get((index, key)))
                    if detailed
                    else None,
                }
            )
    axis = TOP + plot_h
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "top": TOP,
        "axis": axis,
        "lines": [" ".join(f"{x(i)},{y(values[i])}" for i in run) for run in runs_of_values if len(run) > 1],
        "whiskers": " ".join(f"M{x(i)} {y(hi)}V{y(lo)}" for i, (lo, hi) in intervals.items()),
        "thresholds": [
            {
                "name": name,
                "points": " ".join(f"{x(i)},{y(v)}" for i, v in sorted(series.items()))
                if len(series) > 1
                else f"{LEFT},{y(next(iter(series.values())))} {WIDTH - RIGHT},{y(next(iter(series.values())))}",
            }
            for name, series in bounds.items()
        ],
        "dots": dots,
        "regressions": [{"x": x(index), "y": y(values[index]) if index in values else axis} for index in regressions],
        "absent": " ".join(f"M{x(i)} {axis}v-5" for i, point in enumerate(points) if point is None),
        "unmeasured": [{"x": x(i), "y": axis} for i, point in enumerate(points) if isinstance(point, UnmeasuredRecord)],
        "y_high": _tick(high),
        "y_low": _tick(low),
        "first": labels[0],
        "last": labels[-1],
    }


def _interval(point: CaseRecord) -> tuple[float, float] | None:
    ci = getattr(point, "ci", None)
    if isinstance(ci, Sequence) and len(ci) == 2 and all(_finite(bound) for bound in ci):
        return float(ci[0]), float(ci[1])
    return None


def _significant(point: CaseRecord) -> bool | None:
    """Whether the case's own test rejected: q, else the adjusted p of its decision, else p, against alpha; None without a test."""
    decision = point.decision
    if decision is not None and isinstance(decision.significant, bool):
        return decision.significant
    alpha = point.threshold.to_json().get("alpha", 0.05)
    adjusted = decision.p_adjusted if decision is not None else None
    for value in (getattr(point, "q", None), adjusted, getattr(point, "p", None)):
        if _finite(value):
            return float(value) < alpha
    return None


def _tooltip(label: str, point: CaseRecord, significant: bool | None, comparison: Mapping[str, Any] | None) -> str:
    parts = [f"{label}: {point.value:.4g}", "passed" if point.passed else "FAILED"]
    interval = _interval(point)
    if interval:
        parts.append(f"CI [{interval[0]:.3g}, {interval[1]:.3g}]")
    has_q = _finite(getattr(point, "q", None))
    q = getattr(point, "q", None) if has_q else getattr(point, "p", None)
    if _finite(q):
        parts.append(f"{'q' if has_q else 'p'} = {q:.3g}" + (" (significant)" if significant else ""))
    if comparison and comparison.get("status") == "compared":
        parts.append(
            f"vs previous: delta {comparison['delta']:+.3g}" + (" REGRESSION" if comparison.get("regressed") else "")
        )
    return "; ".join(parts)


def _consecutive(indices: Sequence[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _tick(value: float) -> str:
    return f"{value:.3g}"
