"""Geometry of the report's inline SVG plots (forest plots of ratios, dot-and-interval plots), from records alone.

Every function returns plain dicts of coordinates and labels that a Jinja template draws; none draws text
of its own beyond the labels it is given, so one template serves every check without carrying its words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")

NOT_ESTIMABLE = "interval not estimable"
"""Label of an interval that cannot be estimated; such an interval is never printed as "a to a"."""

LOG_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.67, 0.8, 0.9, 1.0, 1.11, 1.25, 1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
RATIO_LIMITS = (0.01, 100.0)
"""The widest ratio axis; intervals reaching beyond it end in an arrow."""


def interval_estimable(entry: Mapping[str, Any] | None) -> bool:
    """Whether an entry's interval was estimated: not when it says ``estimable: false``, lacks either end,
    has a non-finite end, or has equal ends (a point shown as an interval reads as certainty)."""
    if not entry or entry.get("estimable") is False:
        return False
    ends = (entry.get("ci_low"), entry.get("ci_high"))
    if any(end is None or not math.isfinite(end) for end in ends):
        return False
    return ends[0] != ends[1]


def interval_text(entry: Mapping[str, Any] | None, digits: int = 1, layout: str = "{0} to {1}") -> str:
    """An estimable interval's ``ci_low`` and ``ci_high`` in ``layout`` ("a to b"), otherwise :data:`NOT_ESTIMABLE`."""
    if not interval_estimable(entry):
        return NOT_ESTIMABLE
    return layout.format(f"{entry['ci_low']:.{digits}f}", f"{entry['ci_high']:.{digits}f}")


class LinearAxis:
    """x = left + width * (v - lo) / (hi - lo), with round ticks."""

    def __init__(self, values: Sequence[float], left: float, width: float, pad: float = 0.05):
        lo, hi = min(values), max(values)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        span = hi - lo
        self.lo, self.hi, self.left, self.width = lo - pad * span, hi + pad * span, left, width

    def x(self, value: float) -> float:
        return round(self.left + self.width * (value - self.lo) / (self.hi - self.lo), 1)

    def ticks(self, count: int = 6) -> list[dict[str, Any]]:
        raw = (self.hi - self.lo) / count
        step = min((s * 10 ** math.floor(math.log10(raw)) for s in (1, 2, 5, 10)), key=lambda s: abs(s - raw))
        first = math.ceil(self.lo / step) * step
        values = [first + i * step for i in range(int((self.hi - first) / step) + 1)]
        return [{"x": self.x(v), "label": f"{v:g}"} for v in values if self.lo <= v <= self.hi]


class LogAxis:
    """x = left + width * (ln v - ln lo) / (ln hi - ln lo), over positive values clipped to :data:`RATIO_LIMITS`."""

    def __init__(self, values: Sequence[float], left: float, width: float):
        positive = [min(max(v, RATIO_LIMITS[0]), RATIO_LIMITS[1]) for v in values if v is not None and v > 0]
        lo, hi = min(positive), max(positive)
        margin = 0.08 * max(math.log(hi / lo), math.log(1.25))
        self.lo = max(RATIO_LIMITS[0], math.exp(math.log(lo) - margin))
        self.hi = min(RATIO_LIMITS[1], math.exp(math.log(hi) + margin))
        self.left, self.width = left, width

    def clipped(self, value: float) -> bool:
        return not self.lo <= value <= self.hi

    def x(self, value: float) -> float:
        value = min(max(value, self.lo), self.hi)
        return round(self.left + self.width * math.log(value / self.lo) / math.log(self.hi / self.lo), 1)

    def ticks(self) -> list[dict[str, Any]]:
        inside = [v for v in LOG_TICKS if self.lo <= v <= self.hi]
        kept: list[float] = []
        for value in inside:
            if not kept or self.x(value) - self.x(kept[-1]) >= 28 or value == 1.0:
                if kept and value == 1.0 and self.x(value) - self.x(kept[-1]) < 28:
                    kept.pop()
                kept.append(value)
        return [{"x": self.x(v), "label": f"{v:g}"} for v in kept]


def forest_plot(record: Any, value_name: str) -> dict[str, Any]:
    """A forest plot of a ratio record: per comparison, one row per method with its ratio and interval on a
    log axis, a line at 1 (no difference), the case's ``[lower, upper]`` bounds shaded, the deciding method
    (``judged_method``) filled. ``value_name`` names the ratio ("expected-WER ratio", "judge-score ratio")."""
    label_width, plot_width, value_width, row_height, top = 300, 380, 150, 17, 34
    bounds = (record.threshold.get("lower"), record.threshold.get("upper"))
    values = [1.0] + [b for b in bounds if b is not None]
    for comparison in record.comparisons:
        for method in comparison["methods"]:
            values += [method[k] for k in ("ratio", "ci_low", "ci_high") if method.get(k) is not None]
    axis = LogAxis(values, label_width, plot_width)
    rows, y = [], top
    for comparison in record.comparisons:
        rows.append(
            {
                "kind": "comparison",
                "y": y + 12,
                "label": comparison["comparison"],
                "failed": bool(comparison.get("failed")),
            }
        )
        y += row_height
        for method in comparison["methods"]:
            deciding = method["method"] == comparison.get("judged_method")
            ratio = method.get("ratio")
            estimable = interval_estimable(method) and method["ci_low"] > 0
            row = {
                "kind": "method",
                "y": y + 9,
                "label": method["method"],
                "deciding": deciding,
                "failed": deciding and bool(comparison.get("failed")),
                "estimable": estimable,
                "ratio": ratio,
                "x": None if ratio is None or ratio <= 0 else axis.x(ratio),
            }
            if ratio is None or ratio <= 0:
                row["text"] = "not estimable"
            elif estimable:
                row.update(
                    x_low=axis.x(method["ci_low"]),
                    x_high=axis.x(method["ci_high"]),
                    arrow_low=axis.clipped(method["ci_low"]),
                    arrow_high=axis.clipped(method["ci_high"]),
                    text=f"{ratio:.3f} [{method['ci_low']:.3f}, {method['ci_high']:.3f}]",
                )
            else:
                row["text"] = f"{ratio:.3f}, {NOT_ESTIMABLE}"
            rows.append(row)
            y += row_height
    band = None
    if None not in bounds:
        band = {
            "x": axis.x(bounds[0]),
            "width": round(axis.x(bounds[1]) - axis.x(bounds[0]), 1),
            "label": f"bounds [{bounds[0]:g}, {bounds[1]:g}]",
        }
    bottom = y + 4
    return {
        "width": label_width + plot_width + value_width,
        "height": bottom + 36,
        "top": top - 8,
        "bottom": bottom,
        "left": label_width,
        "right": label_width + plot_width,
        "value_x": label_width + plot_width + 8,
        "one_x": axis.x(1.0),
        "band": band,
        "ticks": axis.ticks(),
        "rows": rows,
        "axis_label": f"{value_name} (log scale; 1 = no difference)",
        "mid_x": label_width + plot_width / 2,
    }


def dot_interval_plot(
    rows: Sequence[Mapping[str, Any]],
    *,
    axis_label: str,
    reference: float | None = None,
    limits: tuple[float, float] | None = None,
    threshold_label: str = "threshold",
) -> dict[str, Any] | None:
    """Rows of group dots and an estimate with its interval on a linear axis.

    Each row: ``label``, ``dots`` (``[{"label", "value"}]``, coloured by label across the plot), ``estimate``
    (``{"value", "ci_low", "ci_high", "estimable"?}``; without ``ci_low`` a point that claims no interval; or None),
    optional ``threshold`` (a tick mark, titled ``threshold_label``) and ``text`` (replaces the printed estimate). An interval
    :func:`interval_estimable` rejects is drawn as a hollow marker labelled :data:`NOT_ESTIMABLE`.
    ``reference`` draws a dashed line (e.g. 0 for differences); ``limits`` fixes the axis range.
    """
    if not rows:
        return None
    label_width, plot_width, value_width, row_height, legend_width = 230, 380, 190, 20, 110
    per_line = (plot_width + value_width) // legend_width
    names = list(dict.fromkeys(d["label"] for row in rows for d in row.get("dots", [])))
    top = 12 + 16 * -(-len(names) // per_line) if names else 16
    values = [] if limits is None else list(limits)
    for row in rows:
        values += [d["value"] for d in row.get("dots", []) if d["value"] is not None]
        estimate = row.get("estimate") or {}
        values += [estimate[k] for k in ("value", "ci_low", "ci_high") if estimate.get(k) is not None]
        values += [] if row.get("threshold") is None else [row["threshold"]]
    if reference is not None:
        values.append(reference)
    if not values:
        return None
    axis = LinearAxis(values, label_width, plot_width, pad=0.0 if limits else 0.05)
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    drawn = []
    for index, row in enumerate(rows):
        y = top + index * row_height + row_height / 2
        estimate = row.get("estimate") or {}
        estimable = "ci_low" not in estimate or interval_estimable(estimate)
        item = {
            "y": y,
            "label": row["label"],
            "failed": bool(row.get("failed")),
            "anchor": row.get("anchor"),
            "dots": [
                {"x": axis.x(d["value"]), "colour": colours[d["label"]], "title": f"{d['label']}: {d['value']:.1f}"}
                for d in row.get("dots", [])
                if d["value"] is not None
            ],
            "threshold_x": None if row.get("threshold") is None else axis.x(row["threshold"]),
            "estimate_x": None if estimate.get("value") is None else axis.x(estimate["value"]),
            "estimable": estimable,
        }
        if estimate.get("value") is not None:
            item["text"] = f"{estimate['value']:.1f}" + (
                f" ({interval_text(estimate)})" if "ci_low" in estimate else ""
            )
            if "ci_low" in estimate and estimable:
                item.update(x_low=axis.x(estimate["ci_low"]), x_high=axis.x(estimate["ci_high"]))
        if row.get("text"):
            item["text"] = row["text"]
        drawn.append(item)
    bottom = top + len(rows) * row_height
    value_width = max([value_width] + [round(6.5 * len(item.get("text", ""))) + 16 for item in drawn])
    legend = [
        {
            "label": name,
            "colour": colours[name],
            "x": label_width + (i % per_line) * legend_width,
            "y": 9 + 16 * (i // per_line),
        }
        for i, name in enumerate(names)
    ]
    return {
        "width": label_width + plot_width + value_width,
        "height": bottom + 36,
        "top": top - 4,
        "bottom": bottom,
        "left": label_width,
        "right": label_width + plot_width,
        "value_x": label_width + plot_width + 8,
        "reference_x": None if reference is None else axis.x(reference),
        "ticks": axis.ticks(),
        "rows": drawn,
        "legend": legend,
        "axis_label": axis_label,
        "mid_x": label_width + plot_width / 2,
        "threshold_label": threshold_label,
    }
