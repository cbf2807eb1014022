"""Geometry of the report's inline SVG plots (forest plots of ratios, dot-and-interval plots), from records alone.

Every function returns plain dicts of coordinates and labels that a Jinja template draws; none draws text
of its own beyond the labels it is given, so one template serves every check without carrying its words.
The one exception is :func:`pca_scatter`, which draws :func:`pca_scatter_figure` as a finished ``<svg>`` string
(its own words: "% of variance", "drawn", "dropped", "no points to draw").
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")

NOT_ESTIMABLE = "interval not estimable"
"""Label of an interval that cannot be estimated; such an interval is never printed as "a to a"."""

LOG_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.67, 0.8, 0.9, 1.0, 1.11, 1.25, 1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
RATIO_LIMITS = (0.01, 100.0)
"""The widest ratio axis; intervals reaching beyond it end in an arrow."""

TemplateData = dict[str, object]
"""What a template draws or prints: a figure's geometry or a table row, names -> numbers, text and lists of such
(built here from typed records, read by Jinja alone)."""


class Interval(Protocol):
    """A row class that states an interval (a BASIS gap, :class:`harness.checks.basis_common.record.GroupGap`); it
    may also state whether it is ``estimable``."""

    ci_low: float | None
    ci_high: float | None


def interval_ends(entry: Mapping[str, object] | Interval) -> tuple[object, object, object]:
    """``(ci_low, ci_high, estimable)`` of an interval row, or of a mapping of those keys (None where absent)."""
    if isinstance(entry, Mapping):
        return entry.get("ci_low"), entry.get("ci_high"), entry.get("estimable")
    return entry.ci_low, entry.ci_high, getattr(entry, "estimable", None)


def interval_estimable(entry: Mapping[str, object] | Interval | None) -> bool:
    """Whether an entry's interval was estimated: not when it says ``estimable: false``, lacks either end,
    has a non-finite end, or has equal ends (a point shown as an interval reads as certainty)."""
    if not entry:
        return False
    low, high, estimable = interval_ends(entry)
    if estimable is False:
        return False
    ends = (low, high)
    if any(end is None or not math.isfinite(end) for end in ends):
        return False
    return ends[0] != ends[1]


def interval_text(entry: Mapping[str, object] | Interval | None, digits: int = 1, layout: str = "{0} to {1}") -> str:
    """An estimable interval's ``ci_low`` and ``ci_high`` in ``layout`` ("a to b"), otherwise :data:`NOT_ESTIMABLE`."""
    if entry is None or not interval_estimable(entry):
        return NOT_ESTIMABLE
    low, high, _ = interval_ends(entry)
    return layout.format(f"{low:.{digits}f}", f"{high:.{digits}f}")


CHARACTER_PX = 6.5
"""The width of one character of an 11 px label, in pixels, rounded up: the widths the layout reserves for text."""

FAILED_SUFFIX = " (fails)"
"""Appended to the label of a row whose case failed."""


def text_width(text: str) -> int:
    """The pixels an 11 px label of ``text`` takes, at most: ``len(text)`` × :data:`CHARACTER_PX`, rounded."""
    return round(CHARACTER_PX * len(text))


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

    def ticks(self, count: int = 6) -> list[TemplateData]:
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

    def ticks(self) -> list[TemplateData]:
        inside = [v for v in LOG_TICKS if self.lo <= v <= self.hi]
        kept: list[float] = []
        for value in inside:
            if not kept or self.x(value) - self.x(kept[-1]) >= 28 or value == 1.0:
                if kept and value == 1.0 and self.x(value) - self.x(kept[-1]) < 28:
                    kept.pop()
                kept.append(value)
        return [{"x": self.x(v), "label": f"{v:g}"} for v in kept]


def _columns_frame(label_width: int, plot_width: int, value_width: float, top: float, bottom: float) -> TemplateData:
    """The frame of a plot drawn in three columns, labels | plot | printed values (:func:`forest_plot`,
    :func:`dot_interval_plot`): its size (36 px below ``bottom`` for the axis), the plot's top, bottom, left and
    right edges, and where the printed values start."""
    return {
        "width": label_width + plot_width + value_width,
        "height": bottom + 36,
        "top": top,
        "bottom": bottom,
        "left": label_width,
        "right": label_width + plot_width,
        "value_x": label_width + plot_width + 8,
    }


class IntervalBounds(Protocol):
    """The ``[lower, upper]`` bounds a ratio case is judged by (its record's ``threshold``)."""

    @property
    def lower(self) -> float | None: ...

    @property
    def upper(self) -> float | None: ...


class RatioCase(Protocol):
    """What :func:`forest_plot` reads of a ratio record (``harness.checks.semantic_aware.record``): its
    ``comparisons`` (each with its ``methods`` rows) and its bounds."""

    @property
    def comparisons(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def threshold(self) -> IntervalBounds: ...


def forest_plot(record: RatioCase, value_name: str) -> TemplateData:
    """A forest plot of a ratio record: per comparison, one row per method with its ratio and interval on a
    log axis, a line at 1 (no difference), the case's ``[lower, upper]`` bounds shaded, the deciding method
    (``judged_method``) filled. ``value_name`` names the ratio ("expected-WER ratio", "judge-score ratio"). The
    labels' column is at least 300 px and as wide as the longest label, so that no label reaches the plot."""
    plot_width, value_width, row_height, top = 380, 150, 17, 34
    labels = [comparison["comparison"] + FAILED_SUFFIX for comparison in record.comparisons] + [
        "●   " + method["method"] for comparison in record.comparisons for method in comparison["methods"]
    ]
    label_width = max([300] + [text_width(str(label)) + 24 for label in labels])
    bounds = (record.threshold.lower, record.threshold.upper)
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
        **_columns_frame(label_width, plot_width, value_width, top - 8, bottom),
        "one_x": axis.x(1.0),
        "band": band,
        "ticks": axis.ticks(),
        "rows": rows,
        "axis_label": f"{value_name} (log scale; 1 = no difference)",
        "failed_suffix": FAILED_SUFFIX,
        "mid_x": label_width + plot_width / 2,
    }


def dot_interval_plot(
    rows: Sequence[Mapping[str, object]],
    *,
    axis_label: str,
    reference: float | None = None,
    limits: tuple[float, float] | None = None,
    threshold_label: str = "threshold",
    keys: Sequence[Mapping[str, str]] = (),
) -> TemplateData | None:
    """Rows of group dots and an estimate with its interval on a linear axis.

    Each row: ``label``, ``dots`` (``[{"label", "value"}]``, coloured by label across the plot), ``estimate``
    (``{"value", "ci_low", "ci_high", "estimable"?}``; without ``ci_low`` a point that claims no interval; or None),
    optional ``threshold`` (a tick mark, titled ``threshold_label``) and ``text`` (replaces the printed estimate). An interval
    :func:`interval_estimable` rejects is drawn as a hollow marker labelled :data:`NOT_ESTIMABLE`.
    ``reference`` draws a dashed line (e.g. 0 for differences); ``limits`` fixes the axis range. ``keys``
    (``[{"key", "model"}]``, :func:`harness.display.text.key_legend`) spell out the model keys the labels use.

    Row labels have a column of their own, as wide as the longest label (:func:`text_width`), so that no label
    reaches the plot; the printed estimates have another, right of the plot.
    """
    if not rows:
        return None
    plot_width, value_width, row_height, legend_width = 380, 190, 20, 110
    label_width = max(
        [120] + [text_width(row["label"] + (FAILED_SUFFIX if row.get("failed") else "")) + 16 for row in rows]
    )
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
    value_width = max([value_width] + [text_width(item.get("text", "")) + 16 for item in drawn])
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
        **_columns_frame(label_width, plot_width, value_width, top - 4, bottom),
        "reference_x": None if reference is None else axis.x(reference),
        "ticks": axis.ticks(),
        "rows": drawn,
        "legend": legend,
        "axis_label": axis_label,
        "mid_x": label_width + plot_width / 2,
        "threshold_label": threshold_label,
        "failed_suffix": FAILED_SUFFIX,
        "keys": list(keys),
    }


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(value: object) -> str:
    """``value`` as text safe in an XML element or attribute: escaped (``&<>"'``), characters XML forbids removed."""
    return html.escape(_XML_ILLEGAL.sub("", str(value)), quote=True)


def _coordinate(value: float) -> str:
    """A pixel coordinate at one decimal, without a trailing ``.0``."""
    return f"{value:.1f}".removesuffix(".0")


def _finite(value: object) -> float | None:
    """``value`` as a float, or None when it is not a finite number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _finite_pair(point: object) -> tuple[float, float] | None:
    """``point`` as ``(x, y)`` floats, or None when it is not a pair of finite numbers."""
    try:
        x, y = (_finite(v) for v in point)
    except (TypeError, ValueError):
        return None
    return None if x is None or y is None else (x, y)


def _spread_axis(values: Sequence[float], left: float, width: float) -> LinearAxis | None:
    """A :class:`LinearAxis` over ``values`` (None without any), widened around a single value by 5% of it (at least 1)."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    if lo == hi:
        half = max(1.0, 0.05 * abs(lo))
        lo, hi = lo - half, hi + half
    return LinearAxis([lo, hi], left, width)


def _axis_ticks(axis: LinearAxis | None) -> list[TemplateData]:
    if axis is None:
        return []
    return [{**tick, "label": "0" if tick["label"] == "-0" else tick["label"]} for tick in axis.ticks()]


def pca_scatter_figure(
    points: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str = "PC1",
    y_label: str = "PC2",
    explained: Sequence[float] | None = None,
    max_points_per_group: int = 2000,
) -> TemplateData:
    """Geometry of a scatter of points on their first two principal components, one colour per group (the
    semantic-aware paper's Fig. 1: utterances' semantic embeddings projected by PCA, coloured by group).

    ``points`` maps a group label to its ``(pc1, pc2)`` coordinates. Groups are coloured from :data:`PALETTE` in
    sorted label order; a point that is not a pair of finite numbers is dropped and the drops are counted in
    ``note``. A group of more than ``max_points_per_group`` finite points is drawn as an evenly spaced subsample
    (``n`` of them, ``drawn`` drawn); the axes span every finite point. ``explained`` (PC1's and PC2's ratios of
    explained variance, 0 to 1) adds "(41.2% of variance)" to the axis labels."""
    if max_points_per_group < 1:
        raise ValueError(f"max_points_per_group must be at least 1, not {max_points_per_group}")
    labels = sorted(points)
    given = {label: [] if points[label] is None else list(points[label]) for label in labels}
    finite = {label: [p for p in map(_finite_pair, given[label]) if p is not None] for label in labels}
    dropped = {label: len(given[label]) - len(finite[label]) for label in labels}
    left, plot_width, plot_height, legend_gap = 72, 380, 300, 24
    note = ""
    if sum(dropped.values()):
        total = sum(dropped.values())
        where = ", ".join(f"{label}: {count}" for label, count in dropped.items() if count)
        note = f"{total} point{'s' if total != 1 else ''} with non-finite coordinates dropped ({where})"
    top = 24 + (16 if note else 0)
    bottom = top + plot_height
    everything = [p for label in labels for p in finite[label]]
    x_axis = _spread_axis([p[0] for p in everything], left, plot_width)
    y_axis = _spread_axis([p[1] for p in everything], bottom, -plot_height)
    ratios = list(explained) if explained is not None else []
    axis_labels = []
    for index, label in enumerate((x_label, y_label)):
        ratio = _finite(ratios[index]) if index < len(ratios) else None
        if ratio is not None and 0 <= ratio <= 1:
            label = f"{label} ({100 * ratio:.1f}% of variance)"
        axis_labels.append(label)
    groups = []
    for position, label in enumerate(labels):
        chosen = finite[label]
        n = len(chosen)
        if n > max_points_per_group:
            chosen = [chosen[i * n // max_points_per_group] for i in range(max_points_per_group)]
        count = f"n={n}" + (f", {len(chosen)} drawn" if len(chosen) < n else "")
        groups.append(
            {
                "label": label,
                "colour": PALETTE[position % len(PALETTE)],
                "n": n,
                "drawn": len(chosen),
                "dropped": dropped[label],
                "legend": f"{label} ({count})",
                "legend_y": top + 8 + 16 * position,
                "points": [(x_axis.x(x), y_axis.x(y)) for x, y in chosen] if x_axis and y_axis else [],
            }
        )
    right = left + plot_width
    legend_x = right + legend_gap
    legend_width = max([0] + [round(6.5 * len(group["legend"])) + 16 for group in groups])
    caption_width = left + round(6.5 * max(len(title), len(note))) + 8
    summary = ", ".join(group["legend"] for group in groups) or "no groups"
    description = f"{title}: {axis_labels[1]} against {axis_labels[0]} by group; {summary}" + (
        f"; {note}" if note else ""
    )
    return {
        "width": max(legend_x + legend_width, caption_width),
        "height": max(bottom + 40, top + 16 * len(groups) + 8),
        "title": title,
        "note": note,
        "description": description,
        "top": top,
        "bottom": bottom,
        "left": left,
        "right": right,
        "mid_x": left + plot_width / 2,
        "mid_y": top + plot_height / 2,
        "x_ticks": _axis_ticks(x_axis),
        "y_ticks": _axis_ticks(y_axis),
        "x_label": axis_labels[0],
        "y_label": axis_labels[1],
        "legend_x": legend_x,
        "groups": groups,
        "empty": not everything,
    }


def pca_scatter(points: Mapping[str, Sequence[tuple[float, float]]], **figure_options: object) -> str:
    """:func:`pca_scatter_figure` of ``points`` (``figure_options``: its keyword arguments, ``title`` required)
    drawn as one inline ``<svg>`` element (a string, every label escaped): a ``<title>`` and ``aria-label``
    describing it, the title and any drop note above the plot, axes with ticks, one semi-transparent ``<g>`` of
    circles (r=2.5, coordinates at one decimal) per group in the figure's colour and titled with its legend, and
    the legend to the right. Same input, same string."""
    figure = pca_scatter_figure(points, **figure_options)
    f, c = figure, _coordinate
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{f["width"]}" height="{f["height"]}" role="img" '
        f'aria-label="{_xml_text(f["description"])}">',
        f"<title>{_xml_text(f['description'])}</title>",
        f'<text x="{f["left"]}" y="14" font-weight="600">{_xml_text(f["title"])}</text>',
    ]
    if f["note"]:
        lines.append(f'<text x="{f["left"]}" y="30" fill="#8a5a00">{_xml_text(f["note"])}</text>')
    lines.append(
        f'<line x1="{f["left"]}" x2="{f["right"]}" y1="{f["bottom"]}" y2="{f["bottom"]}" stroke="#999"></line>'
        f'<line x1="{f["left"]}" x2="{f["left"]}" y1="{f["top"]}" y2="{f["bottom"]}" stroke="#999"></line>'
    )
    ticks = "".join(
        f'<line x1="{c(t["x"])}" x2="{c(t["x"])}" y1="{f["bottom"]}" y2="{f["bottom"] + 4}" stroke="#999"></line>'
        f'<text x="{c(t["x"])}" y="{f["bottom"] + 15}" text-anchor="middle">{_xml_text(t["label"])}</text>'
        for t in f["x_ticks"]
    ) + "".join(
        f'<line x1="{f["left"] - 4}" x2="{f["left"]}" y1="{c(t["x"])}" y2="{c(t["x"])}" stroke="#999"></line>'
        f'<text x="{f["left"] - 6}" y="{c(t["x"] + 4)}" text-anchor="end">{_xml_text(t["label"])}</text>'
        for t in f["y_ticks"]
    )
    if ticks:
        lines.append(ticks)
    lines.append(
        f'<text x="{c(f["mid_x"])}" y="{f["bottom"] + 30}" text-anchor="middle">{_xml_text(f["x_label"])}</text>'
        f'<text x="{c(-f["mid_y"])}" y="14" transform="rotate(-90)" text-anchor="middle">{_xml_text(f["y_label"])}</text>'
    )
    if f["empty"]:
        lines.append(
            f'<text x="{c(f["mid_x"])}" y="{c(f["mid_y"])}" text-anchor="middle" fill="#777">no points to draw</text>'
        )
    for group in f["groups"]:
        if group["points"]:
            circles = "".join(f'<circle cx="{c(x)}" cy="{c(y)}" r="2.5"/>' for x, y in group["points"])
            lines.append(
                f'<g fill="{group["colour"]}" fill-opacity="0.45"><title>{_xml_text(group["legend"])}</title>{circles}</g>'
            )
        lines.append(
            f'<circle cx="{f["legend_x"] + 5}" cy="{group["legend_y"]}" r="4" fill="{group["colour"]}"></circle>'
            f'<text x="{f["legend_x"] + 12}" y="{group["legend_y"] + 4}">{_xml_text(group["legend"])}</text>'
        )
    lines.append("</svg>")
    return "\n".join(lines)
