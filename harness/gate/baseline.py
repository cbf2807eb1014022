"""Validation of a ``--baseline`` run's records before any case is compared with it.

:func:`harness.gate.load_baseline` reads the file (:func:`harness.results.read_results`); :func:`check_baseline_cases`
then refuses, in one ``ValueError`` that names the file and the first bad case (its position in ``cases`` and its
``id``), a measured case without a string ``model``, or whose ``paired_data`` is not ``null`` or the column table
every check writes: a mapping of column name -> list, the lists of equal length, one of them ``speaker`` (the
per-speaker data the paired comparisons read, README "Release gating"). Unmeasured cases carry no data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.records import CaseRecord, Record


def check_baseline_cases(path: str | Path, cases: Sequence[Record]) -> None:
    """Raise ``ValueError`` ``"<path>: case <k> (<id>): <problem>"`` for the first malformed case (module docstring)."""
    for position, case in enumerate(cases):
        problem = _case_problem(case) if isinstance(case, CaseRecord) else None
        if problem:
            raise ValueError(f"{path}: not a usable baseline: case {position} ({case.id}): {problem}")


def _case_problem(case: CaseRecord) -> str | None:
    if not isinstance(case.model, str):
        return f"'model' is a {type(case.model).__name__}, not a string"
    data = case.paired_data
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
