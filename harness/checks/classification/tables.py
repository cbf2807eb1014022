"""The classification check's table: the speaker's label asked of every recording of a set."""

from __future__ import annotations

import pandas as pd

from harness.checks.basis_common.requests import classification_requests
from harness.checks.basis_common.tables import basis_outputs
from harness.checks.context import CheckContext, per_run_table


@per_run_table
def classification_table(context: CheckContext, model: str, set_name: str) -> pd.DataFrame:
    """The speaker's label asked of every recording of a set, the set's labels listed in the prompt;
    ``prediction`` is the answer's first line, trimmed (exact match is scored by the metric)."""
    item_set = context.basis.item_set(set_name)
    frame = basis_outputs(context, model, classification_requests(item_set), f"basis/{set_name}/classify")
    return frame.assign(prediction=frame["answer"].map(first_line))


def first_line(text: str) -> str:
    lines = [line.strip().strip(".").strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""
