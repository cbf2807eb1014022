"""The view of the robustness check: Table 7 of ASR and spoken-QA scores by group, and group plots with the gap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    accuracy_gap_rule,
    group_plots,
    legacy_floor_gap_margin,
    magnitude_margin,
    magnitude_rule,
    table_seven,
)
from harness.checks.robustness.record import RobustnessRecord
from harness.checks.view import CheckView
from harness.core.modes import ROBUSTNESS_TASKS
from harness.display.text import fmt_number, gap_text


def section_context(records: Sequence[RobustnessRecord]) -> dict[str, Any]:
    return {
        "blocks": table_seven(records, row_keys=ROBUSTNESS_TASKS, cell="score"),
        "group_plots": group_plots(
            records,
            row_keys=ROBUSTNESS_TASKS,
            cell="score",
            threshold_key="min_score",
            axis_label="score (0–100; asr: 100 − WER, sqa: accuracy %)",
            gap=True,
        ),
    }


def legacy_headline(record: RobustnessRecord) -> dict[str, str]:
    threshold = record.threshold
    return {
        "value": f"{record.task} score {fmt_number(record.value, 1)} (0–100)",
        "threshold": accuracy_gap_rule("score", threshold.get("min_score"), threshold.get("max_gap"), ""),
        "uncertainty": gap_text(record.gap),
    }


VIEW = CheckView(
    title="BASIS-Bench: demographic robustness (ASR, spoken QA)",
    label="BASIS robustness",
    template="robustness.html.j2",
    context=section_context,
    magnitude_rule=magnitude_rule,
    magnitude_margin=magnitude_margin,
    legacy_headline=legacy_headline,
    legacy_margin=legacy_floor_gap_margin,
    estimate_unit=" points",
)
