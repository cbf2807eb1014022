"""The view of the classification check: accuracy per label and model, and per-label group plots with the gap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    basis_view,
    group_plots,
    legacy_accuracy_headline,
    mean_cells,
)
from harness.checks.classification.record import ClassificationRecord


def section_context(records: Sequence[ClassificationRecord]) -> dict[str, Any]:
    models = list(dict.fromkeys(r.model for r in records))
    rows = []
    for dimension in dict.fromkeys(r.dimension for r in records):
        by_model = {r.model: r for r in records if r.dimension == dimension}
        labels = list(dict.fromkeys((e.set, e.label) for r in by_model.values() for e in r.per_label))
        for set_name, label in labels:
            cells = []
            for model in models:
                record = by_model.get(model)
                found = [e for e in (record.per_label if record else []) if (e.set, e.label) == (set_name, label)]
                cells.append({"value": found[0].accuracy if found else None, "passed": None})
            rows.append({"dimension": dimension, "set": set_name, "label": label, "cells": cells})
        rows.append(
            {
                "dimension": dimension,
                "set": "",
                "label": "mean",
                "cells": mean_cells(by_model, models),
            }
        )
    plots_by_label = group_plots(
        records,
        row_keys=(),
        cell="accuracy",
        threshold_key="min_accuracy",
        axis_label="accuracy (%)",
        gap=True,
        groups="per_label",
        group_key="label",
    )
    return {"models": models, "rows": rows, "group_plots": plots_by_label}


VIEW = basis_view("classification", "demographic classification", section_context, legacy_accuracy_headline)
