"""Validation of a ``--baseline`` results.json before any case is compared with it.

:func:`harness.gate.load_baseline` reads the file; :func:`check_baseline_cases` then refuses, in one
``ValueError`` that names the file and the first bad case (its position in ``cases`` and its ``id``), a case
that is not a mapping, lacks (unless it is an unmeasured case, ``check: error``, which the gate skips) a string ``check`` or ``model``, or whose ``paired_data`` is not ``null`` or
the column table every check writes: a mapping of column name -> list, the lists of equal length, one of
them ``speaker`` (the per-speaker data the paired comparisons read, README "Release gating").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def check_baseline_cases(path: str | Path, cases: Any) -> None:
    """Raise ``ValueError`` ``"<path>: case <k> (<id>): <problem>"`` for the first malformed case (module docstring)."""
    if not isinstance(cases, Sequence) or isinstance(cases, (str, bytes)):
        raise ValueError(f"{path}: not a lalm-fairness results.json ('cases' is a {type(cases).__name__}, not a list)")
    for position, case in enumerate(cases):
        problem = _case_problem(case)
        if problem:
            name = case.get("id", case.get("nodeid", "?")) if isinstance(case, Mapping) else "?"
            raise ValueError(f"{path}: not a usable baseline: case {position} ({name}): {problem}")


def _case_problem(case: Any) -> str | None:
    if not isinstance(case, Mapping):
        return f"expected a mapping, got {type(case).__name__}"
    if case.get("check") == "error":  # an unmeasured case of that run: no model, no data, skipped by the gate
        return None
    for key in ("check", "model"):
        if not isinstance(case.get(key), str):
            return (
                f"'{key}' is missing" if key not in case else f"'{key}' is a {type(case[key]).__name__}, not a string"
            )
    data = case.get("paired_data")
    if data is None:
        return None
    if not isinstance(data, Mapping):
        return f"'paired_data' is a {type(data).__name__}, expected a mapping of column -> list"
    columns = {name: values for name, values in data.items()}
    bad = next((name for name, values in columns.items() if not isinstance(values, list)), None)
    if bad is not None:
        return f"'paired_data.{bad}' is a {type(columns[bad]).__name__}, expected a list"
    if columns and "speaker" not in columns:
        return f"'paired_data' has no 'speaker' column (columns: {sorted(columns)})"
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        return f"'paired_data' columns differ in length ({lengths})"
    return None
