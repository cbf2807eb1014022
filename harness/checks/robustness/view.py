"""The view of the robustness check: Table 7 of ASR and spoken-QA scores by group, and group plots with the gap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    accuracy_gap_rule,
    basis_view,
    gap_sections,
    gap_text,
)
from harness.checks.robustness.record import RobustnessRecord
from harness.core.modes import ROBUSTNESS_TASKS
from harness.display.text import fmt_number

SCORE_AXIS = "score (0–100; asr: 100 − WER, sqa: accuracy %)"
"""The group plots' axis: both tasks' scores on one 0-100 scale."""


def section_context(records: Sequence[RobustnessRecord]) -> dict[str, Any]:
    return {
        **gap_sections(records, ROBUSTNESS_TASKS, "score", "min_score", SCORE_AXIS, gap=True),
        "table_eight": table_eight(records),
    }


def table_eight(records: Sequence[RobustnessRecord]) -> dict[str, Any] | None:
    """Table 8's content-task rows: one per (task, data set, dimension) with each model's score (the mean over
    the set's groups), then the content-based score (Table 7: the mean of the ASR and SQA means)."""
    models = list(dict.fromkeys(r.model for r in records))
    content = {r.model: r.content_score for r in records if r.content_score.recorded}
    if not content:
        return None
    keys = list(dict.fromkeys((e.task, e.set, e.dimension) for c in content.values() for e in c.per_dataset))
    scores = {(m, e.task, e.set, e.dimension): e.score for m, c in content.items() for e in c.per_dataset}
    rows = [
        {
            "task": task,
            "set": name,
            "dimension": dimension,
            "cells": [scores.get((m, task, name, dimension)) for m in models],
        }
        for task, name, dimension in keys
    ]
    summary = [
        {"label": "ASR (mean)", "cells": [content[m].asr if m in content else None for m in models]},
        {"label": "SQA (mean)", "cells": [content[m].sqa if m in content else None for m in models]},
        {"label": "content-based score", "cells": [content[m].value if m in content else None for m in models]},
    ]
    missing = sorted({line for c in content.values() for line in c.not_measured})
    return {"models": models, "rows": rows, "summary": summary, "not_measured": missing}


def legacy_headline(record: RobustnessRecord) -> dict[str, str]:
    threshold = record.threshold
    return {
        "value": f"{record.task} score {fmt_number(record.value, 1)} (0–100)",
        "threshold": accuracy_gap_rule("score", threshold.min_score, threshold.max_gap, ""),
        "uncertainty": gap_text(record.gap),
    }


VIEW = basis_view("robustness", "demographic robustness (ASR, spoken QA)", section_context, legacy_headline)
