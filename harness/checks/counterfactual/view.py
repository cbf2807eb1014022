"""The view of the counterfactual check (issue 39), from counterfactual records alone.

Per source (a corpus, or a BASIS stereotype set) and dimension, a summary table of every model x variant: the voice
effect with its p and the decision, the artifact measure beside it, the share of swapped clips perceived as the
target group and the recordings left out. Per VIBE task case, a paired-bar plot of the identity and swap arms'
shares of each value of the attribute that moved most in each swap direction, the flip rates and the largest
shifts; per WER or stereotype case, the three arms' measures per direction.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.counterfactual.record import CounterfactualRecord
from harness.checks.counterfactual.settings import (
    ARMS,
    IDENTITY,
    KINDS,
    STEREOTYPE,
    SWAP,
    VIBE,
    WER,
)
from harness.checks.view import CheckView
from harness.display.decisions import decision_words
from harness.display.plots import PALETTE, text_width
from harness.display.text import case_anchor, model_keys, p_text
from harness.tasks import TASKS

VARIANT_TITLES = {"asr": "ASR (WER)", "stereotype": "stereotype choices"}

ARM_NAMES = (IDENTITY, SWAP)
ARM_COLOURS = {IDENTITY: PALETTE[0], SWAP: PALETTE[1]}

MAX_VALUES = 10
"""The values a paired-bar plot draws (those whose share moved most); the rest are summed in one row of text."""
LABEL_CHARS = 28
"""The longest line of a value's label in a plot; a longer value wraps onto further lines."""
LABEL_LINES = 3
"""The most lines a value's label takes; a value longer still ends in "…" (its full text in the bar's tooltip)."""
PLOT_WIDTH, BAR_HEIGHT, ROW_GAP, LINE_HEIGHT = 240, 9, 8, 14


def model_names(records: Sequence[CounterfactualRecord]) -> dict[str, str]:
    return model_keys([record.model for record in records])


def variant_title(variant: str | None) -> str:
    if variant in TASKS:
        return TASKS[variant].title
    return VARIANT_TITLES.get(variant or "", variant or "–")


def direction_targets(record: CounterfactualRecord) -> dict[str, str]:
    """Swap direction (source group) -> the group its recordings were moved to, from the perceived rows."""
    return {row.source_group: row.target_group for row in record.perceived}


ARROW = "\u00a0→\u00a0"
"""A direction's arrow, with no line break beside it."""


def direction_title(record: CounterfactualRecord, direction: str) -> str:
    """ "female → male": the source group's recordings moved to the target group's voice."""
    target = direction_targets(record).get(direction)
    return direction if target is None else f"{direction}{ARROW}{target}"


def signed(value: float | None, digits: int = 1) -> str:
    """``value`` with its sign, "+" or "−" (a minus sign), or "–" for none."""
    if value is None:
        return "–"
    return f"{'−' if value < 0 else '+'}{abs(value):.{digits}f}"


def perceived_cells(record: CounterfactualRecord) -> list[dict[str, Any]]:
    """Per direction: the swapped clips perceived as the target group, of all swapped clips, and their share."""
    return [
        {
            "direction": f"{row.source_group}{ARROW}{row.target_group}",
            "text": f"{row.perceived_as_target}/{row.clips}",
            "share": row.share,
        }
        for row in record.perceived
    ]


def left_out(record: CounterfactualRecord) -> list[str]:
    """The recordings a case left out, in words: those whose swap was not perceived as the target group (per
    direction, where any), and for a VIBE task those without a value in both arms; then the perceiver's accuracy on
    the originals and the sham arm's effect, or its deviation (issue 58), where the record states them."""
    lines = [f"{count} {direction.replace(' -> ', ARROW)}" for direction, count in record.excluded.items() if count]
    lines = [f"not perceived as the target: {', '.join(lines)}"] if lines else []
    if record.unpaired_recordings:
        lines.append(f"{record.unpaired_recordings} without an answer in both arms")
    accuracy = record.perceiver_accuracy
    if accuracy is not None:
        lines.append(
            f"{record.perceiver} on the originals: {100 * accuracy.accuracy:.0f}% (chance {100 * accuracy.chance:.0f}%)"
        )
    sham = record.sham
    if sham is None:
        return lines
    if sham.deviation:
        lines.append(f"{sham.deviation}: judged against identity alone")
    elif sham.effect is not None:
        p = "n/a" if sham.p is None else f"{sham.p:.3g}"
        lines.append(f"against the sham: {sham.effect:.1f} (p = {p}; both controls decide)")
    elif sham.per_direction:
        moved = ", ".join(f"{d} {v:+.1f}" for d, v in sham.per_direction.items() if v is not None)
        lines.append(f"against the sham: {moved} (both controls decide)")
    return lines


def decision_cell(record: CounterfactualRecord) -> dict[str, Any]:
    """The verdict and the test that reached it (:func:`harness.display.decisions.decision_words`): "FAIL —
    regression" with the release test's change on its measure, or "pass — within the bar" with the absolute test;
    never the absolute test's adjusted p of 1 (a contrast within its bar is not tested) beside a FAIL."""
    words = decision_words(record, magnitude_rule(record), digits=2)
    # A record without a decision (an older file) has only its test's p.
    return {"text": words.headline(), "lines": words.lines() or [f"p {p_text(record.p)}"]}


def summary_tables(records: Sequence[CounterfactualRecord], keys: Mapping[str, str]) -> list[dict[str, Any]]:
    """One table per (source, dimension), one row per model x variant, models in order of first appearance and
    variants in the task registry's order (then ASR, then stereotype)."""
    order = {variant: position for position, variant in enumerate([*TASKS, "asr", "stereotype"])}
    position = {model: index for index, model in enumerate(keys)}
    tables = []
    for source, dimension in dict.fromkeys((record.corpus, record.dimension) for record in records):
        subset = sorted(
            (record for record in records if (record.corpus, record.dimension) == (source, dimension)),
            key=lambda record: (position[record.model], order.get(record.variant, len(order)), record.variant or ""),
        )
        kinds = list(dict.fromkeys(record.kind for record in subset))
        tables.append(
            {
                "source": source,
                "dimension": dimension,
                "kinds": [KINDS[kind].title for kind in kinds],
                "rows": [
                    {
                        "anchor": case_anchor(record),
                        "detail": detail_anchor(record),
                        "model": keys[record.model],
                        "variant": variant_title(record.variant),
                        "unit": KINDS[record.kind].effect_unit,
                        "effect": record.effect,
                        "per_direction": [
                            {"direction": direction_title(record, direction), "effect": effect}
                            for direction, effect in record.per_direction.items()
                        ],
                        "p": record.p,
                        "decision": decision_cell(record),
                        "passed": record.passed,
                        "verdict": record.verdict,
                        "artifact": record.artifact,
                        "perceived": perceived_cells(record),
                        "left_out": left_out(record),
                    }
                    for record in subset
                ],
            }
        )
    return tables


def detail_anchor(record: CounterfactualRecord) -> str:
    """The HTML id of a case's detail block (its summary row holds :func:`harness.display.text.case_anchor`)."""
    return case_anchor(record) + "-arms"


def moved_most(record: CounterfactualRecord, direction: str) -> str | None:
    """The attribute with the largest nTVD between the arms in ``direction`` (ties, to 9 decimals: the first by
    name); without per-attribute scores, the one whose values' shares changed most in total."""
    scores = {a: round(v, 9) for a, v in (record.per_attribute.get(direction) or {}).items() if v is not None}
    if not scores:
        for row in record.distributions:
            if row.direction == direction:
                change = abs(row.swap - row.identity)
                scores[row.attribute] = round(scores.get(row.attribute, 0.0) + change, 9)
    if not scores:
        return None
    return min(scores, key=lambda attribute: (-scores[attribute], attribute))


def label_lines(text: str) -> list[str]:
    """``text`` in lines of at most :data:`LABEL_CHARS` characters, broken at spaces where it can be (inside a
    longer word where it cannot), at most :data:`LABEL_LINES` lines, the last ending in "…" when text is left."""
    lines = textwrap.wrap(text, LABEL_CHARS, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) > LABEL_LINES:
        lines = lines[: LABEL_LINES - 1] + [lines[LABEL_LINES - 1][: LABEL_CHARS - 1] + "…"]
    return lines


def share_text(identity: float, swap: float) -> str:
    """ "13.9% → 4.9% (−9.1)": the identity and swap shares and the change in points."""
    return f"{100 * identity:.1f}% → {100 * swap:.1f}% ({signed(100 * (swap - identity))})"


def arm_share_plot(record: CounterfactualRecord, direction: str, attribute: str) -> dict[str, Any] | None:
    """Geometry of the paired horizontal bars of one direction and attribute: per value, the identity arm's share
    P_identity(v) and the swap arm's P_swap(v) among the direction's values of the attribute (VIBE §II-D eq. 2, the
    arm as the group; the shares of each arm sum to 1 over the retained values). The :data:`MAX_VALUES` values with
    the largest |P_swap(v) − P_identity(v)| are drawn as bars, the rest summed into one row of text (``other``), so
    the rows' shares of each arm sum to 100%. A bar's width is share / axis top × plot width, the axis running from
    0 to the largest barred share rounded up to its tick step (5%, 10% or 25%). Labels wrap (:func:`label_lines`)
    in a column as wide as their longest line, and the printed shares have a column of their own right of the
    plot, so no text meets a bar."""
    rows = [r for r in record.distributions if r.direction == direction and r.attribute == attribute]
    if not rows:
        return None
    ranked = sorted(rows, key=lambda r: (-abs(r.swap - r.identity), r.value))
    drawn = [{"value": r.value, "identity": r.identity, "swap": r.swap} for r in ranked[:MAX_VALUES]]
    rest = ranked[MAX_VALUES:]
    if rest:
        drawn.append(
            {
                "value": f"{len(rest)} other values",
                "identity": sum(r.identity for r in rest),
                "swap": sum(r.swap for r in rest),
                "other": True,
            }
        )
    top_share = max([0.05] + [max(row["identity"], row["swap"]) for row in drawn if not row.get("other")])
    step = 0.05 if top_share <= 0.2 else 0.1 if top_share <= 0.5 else 0.25
    axis_top = step * math.ceil(top_share / step - 1e-9)
    for row in drawn:
        row["lines"] = label_lines(row["value"])
        row["text"] = share_text(row["identity"], row["swap"])
    label_width = max([60] + [text_width(line) + 12 for row in drawn for line in row["lines"]])
    value_width = max([120] + [text_width(row["text"]) + 12 for row in drawn])
    legend_y, top = 8, 24
    y, placed = top, []
    for row in drawn:
        height = max(2 * BAR_HEIGHT, LINE_HEIGHT * len(row["lines"]))
        middle = y + height / 2
        bars = [
            {
                "arm": arm,
                "y": round(middle - BAR_HEIGHT + index * BAR_HEIGHT, 1),
                "width": round(row[arm] / axis_top * PLOT_WIDTH, 2),
                "share": row[arm],
                "colour": ARM_COLOURS[arm],
                "title": f"{row['value']}, {arm}: {100 * row[arm]:.1f}%",
            }
            for index, arm in enumerate(ARM_NAMES)
            if not row.get("other")
        ]
        first_line = middle - LINE_HEIGHT * (len(row["lines"]) - 1) / 2 + 4
        placed.append(
            {
                **row,
                "other": bool(row.get("other")),
                "bars": bars,
                "line_ys": [round(first_line + LINE_HEIGHT * i, 1) for i in range(len(row["lines"]))],
                "text_y": round(middle + 4, 1),
            }
        )
        y += height + ROW_GAP
    axis_y = y - ROW_GAP / 2
    ticks = [i * step for i in range(round(axis_top / step) + 1)]
    right = label_width + PLOT_WIDTH
    return {
        "direction": direction_title(record, direction),
        "attribute": attribute,
        "ntvd": (record.per_attribute.get(direction) or {}).get(attribute),
        "value_count": len(rows),
        "rows": placed,
        "axis_top": axis_top,
        "left": label_width,
        "right": right,
        "plot_width": PLOT_WIDTH,
        "value_x": right + 8,
        "width": right + value_width,
        "axis_y": round(axis_y, 1),
        "height": round(axis_y + 36, 1),
        "ticks": [{"x": round(label_width + PLOT_WIDTH * t / axis_top, 1), "label": f"{100 * t:g}%"} for t in ticks],
        "mid_x": label_width + PLOT_WIDTH / 2,
        "axis_label": "share of the direction's values of the attribute",
        "legend": [
            {"arm": arm, "colour": ARM_COLOURS[arm], "x": label_width + 100 * index, "y": legend_y}
            for index, arm in enumerate(ARM_NAMES)
        ],
    }


def flip_table(record: CounterfactualRecord) -> list[dict[str, Any]]:
    """Per attribute: its nTVD per direction, and the recordings, flipped recordings and flip rate between the
    identity and swap arms beside those between the original recording and its identity resynthesis (the
    artifact)."""
    artifact = {row.attribute: row for row in (record.artifact and record.artifact.flip_rates) or []}
    attributes = list(dict.fromkeys([row.attribute for row in record.flip_rates] + list(artifact)))
    swaps = {row.attribute: row for row in record.flip_rates}
    return [
        {
            "attribute": attribute,
            "ntvd": [(record.per_attribute.get(direction) or {}).get(attribute) for direction in record.per_direction],
            "swap": swaps.get(attribute),
            "artifact": artifact.get(attribute),
        }
        for attribute in attributes
    ]


def shift_table(record: CounterfactualRecord) -> list[dict[str, Any]]:
    """Per direction and attribute, the values whose share fell most (``from``) and rose most (``to``) from the
    identity arm to the swap arm, each with its change in points."""
    grouped: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for row in record.shifts:
        entry = grouped.setdefault((row.direction, row.attribute), {"from": [], "to": []})
        change = 100 * row.change
        entry.setdefault(row.shift, []).append({"value": row.value, "change": change, "change_text": signed(change)})
    return [
        {"direction": direction_title(record, direction), "attribute": attribute, **shifts}
        for (direction, attribute), shifts in grouped.items()
    ]


def vibe_detail(record: CounterfactualRecord, keys: Mapping[str, str]) -> dict[str, Any]:
    plots = []
    for direction in record.per_direction:
        attribute = moved_most(record, direction)
        figure = None if attribute is None else arm_share_plot(record, direction, attribute)
        if figure:
            plots.append(figure)
    return {
        **case_heading(record, keys),
        "directions": [
            {"direction": direction_title(record, direction), "effect": effect}
            for direction, effect in record.per_direction.items()
        ],
        "direction_titles": [direction_title(record, direction) for direction in record.per_direction],
        "plots": plots,
        "flips": flip_table(record),
        "shifts": shift_table(record),
        "recordings": record.recordings,
    }


def arm_detail(record: CounterfactualRecord, keys: Mapping[str, str]) -> dict[str, Any]:
    """Per direction: the measure in the original, identity and swap arms, the paired difference swap − identity
    with its p, the artifact identity − original with its p, and the flip rate (stereotype) or the mean
    per-recording difference (WER)."""
    bar = record.threshold.bar
    rows = []
    for direction, entry in record.directions.items():
        effect = entry.effect
        rows.append(
            {
                "direction": direction_title(record, direction),
                "beyond": not record.passed and effect is not None and (bar is None or abs(effect) > bar),
                "arms": [entry.arms.get(arm) for arm in ARMS],
                "effect": effect,
                "p": entry.p,
                "artifact": entry.artifact,
                "artifact_p": entry.artifact_p,
                "flip_rate": entry.flip_rate,
                "item_count": entry.items,
                "mean_recording_difference": entry.mean_recording_difference,
                "effect_text": signed(effect),
                "artifact_text": signed(entry.artifact),
                "mean_recording_difference_text": signed(entry.mean_recording_difference),
            }
        )
    return {
        **case_heading(record, keys),
        "arm_measure": "WER (%)" if KINDS[record.kind] is WER else "stereotype share (%)",
        "extra": "flip rate" if KINDS[record.kind] is STEREOTYPE else "mean per-recording difference",
        "rows": rows,
    }


def case_heading(record: CounterfactualRecord, keys: Mapping[str, str]) -> dict[str, Any]:
    return {
        "anchor": detail_anchor(record),
        "summary_anchor": case_anchor(record),
        "model": keys[record.model],
        "variant": variant_title(record.variant),
        "source": record.corpus,
        "passed": record.passed,
        "verdict": record.verdict,
        "effect": record.effect,
        "p": record.p,
        "measure": KINDS[record.kind].effect_name,
        "artifact": record.artifact,
    }


def fail_rules(records: Sequence[CounterfactualRecord]) -> list[str]:
    """When a case fails, in words, one line per distinct threshold among the records (e.g. "VIBE tasks: nTVD > 20
    and significant")."""
    lines = []
    for record in records:
        rule = record.threshold.rule
        words = (
            "significant"
            if rule == "significance"
            else f"{magnitude_rule(record)} and significant"
            if rule == "both"
            else magnitude_rule(record)
        )
        line = f"{KINDS[record.kind].title}: {words}"
        if line not in lines:
            lines.append(line)
    return lines


def min_perceived_shares(records: Sequence[CounterfactualRecord]) -> list[float]:
    shares = (record.threshold.min_perceived_share for record in records)
    return sorted({float(share) for share in shares if share is not None})


def section_context(records: Sequence[CounterfactualRecord]) -> dict[str, Any]:
    keys = model_names(records)
    vibe = [vibe_detail(record, keys) for record in records if KINDS[record.kind] is VIBE]
    arms = [arm_detail(record, keys) for record in records if KINDS[record.kind] is not VIBE]
    return {
        "tables": summary_tables(records, keys),
        "keys": keys,
        "failed_vibe": [case for case in vibe if not case["passed"]],
        "passed_vibe": [case for case in vibe if case["passed"]],
        "arm_cases": sorted(arms, key=lambda case: case["passed"]),
        "rules": fail_rules(records),
        "min_perceived": min_perceived_shares(records),
        "perceivers": sorted({record.perceiver for record in records}),
        "transforms": sorted({record.transform for record in records}),
    }


def magnitude_rule(record: CounterfactualRecord) -> str:
    threshold = record.threshold
    if threshold.rule == "significance":
        return "any significant effect"
    if threshold.bar is None:
        return "its bar"
    return f"{threshold.kind.bar_words} > {threshold.bar:g}{threshold.kind.unit}"


def magnitude_margin(record: CounterfactualRecord, estimate: float) -> float | None:
    """(bar - |estimate|) / bar."""
    bar = record.threshold.bar
    return None if not bar else (bar - abs(estimate)) / bar


VIEW = CheckView(
    title="Counterfactual voice tests: the same recording in another voice",
    label="counterfactual",
    template="counterfactual.html.j2",
    context=section_context,
    magnitude_rule=magnitude_rule,
    magnitude_margin=magnitude_margin,
    estimate_digits=2,
)
