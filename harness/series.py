"""A series of results.json files (nights, or checkpoints in release order) and the regressions between neighbours.

:func:`load_series` reads the files and orders them by the time each run recorded (``metadata.created``) or as
given. :func:`neighbour_comparisons` compares every case of run *i* with the same case of run *i - 1* by the
check's own baseline test, :meth:`harness.checks.Check.compare`, the one ``--baseline`` applies: the records
carry the per-speaker ``paired_data`` it reads (a paired speaker bootstrap, or for nTVD a paired speaker-level
permutation test; README "Release gating"). Each comparison judges with the candidate's recorded settings: the
thresholds the run used (its record's ``threshold``, over the check's defaults, or a thresholds file given here),
its seed and its number of permutations.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from harness.checks import Case, get_check
from harness.core import stable_hash
from harness.records import CaseRecord, record_from_json, schema_version
from harness.thresholds import ThresholdSchema, Thresholds

CaseKey = tuple[str, str]
"""(check, id): what names one case across runs (an id is unique within its check in a run, and names the
model, corpus, variant and dimension)."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One results.json of a series; ``label`` names it in the report (its file name without ``.json``);
    ``digest`` is the SHA-256 of the file's bytes."""

    source: str
    label: str
    created: str | None
    results: Mapping[str, Any]
    digest: str


def case_key(case: Mapping[str, Any]) -> CaseKey:
    return (case["check"], case["id"])


def load_series(paths: Sequence[str | Path], order: str = "time") -> list[Run]:
    """The runs of ``paths``, ordered by ``metadata.created`` (``order="time"``) or as given (``"given"``).

    A file that cannot be read as a results.json, or (ordering by time) that records no creation time,
    is one ``ValueError`` naming it."""
    if order not in ("time", "given"):
        raise ValueError(f"order {order!r}: expected 'time' or 'given'")
    runs = [read_run(Path(path)) for path in paths]
    if order == "time":
        undated = next((run.source for run in runs if not run.created), None)
        if undated is not None:
            raise ValueError(f"{undated}: records no creation time (metadata.created; written since issue 15); order the series as given instead")
        runs.sort(key=lambda run: run.created)
    return runs


def read_run(path: Path) -> Run:
    try:
        data = path.read_bytes()
        results = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a lalm-fairness results.json ({exc})") from exc
    if not isinstance(results, dict) or not isinstance(results.get("cases"), list):
        raise ValueError(f"{path}: not a lalm-fairness results.json (it has no list of 'cases')")
    schema_version(results, str(path))
    for index, case in enumerate(results["cases"]):
        if not isinstance(case, Mapping) or not isinstance(case.get("check"), str):
            raise ValueError(f"{path}, case {index}: expected a case object with a 'check'")
        if case["check"] != "error":
            missing = [key for key in ("id", "model", "corpus", "dimension", "passed") if key not in case]
            if missing:
                raise ValueError(f"{path}, case {index}: lacks key(s) {missing}")
    created = (results.get("metadata") or {}).get("created")
    return Run(str(path), path.name.removesuffix(".json"), created if isinstance(created, str) else None, results,
               hashlib.sha256(data).hexdigest())


class RecordThresholds:
    """The settings of one recorded case: the thresholds file's when one is given, else the check's defaults
    overlaid with what the record states (its ``threshold``)."""

    def __init__(self, recorded: Mapping[str, Any], thresholds: Thresholds | None):
        self.recorded = recorded
        self.thresholds = thresholds

    def values(self, check: str, schema: ThresholdSchema, variant: str | None, dimension: str) -> dict[str, Any]:
        if self.thresholds is not None:
            return self.thresholds.values(check, schema, variant, dimension)
        return schema.defaults() | {key: value for key, value in self.recorded.items() if key in schema.keys}


@dataclasses.dataclass(frozen=True)
class RecordContext:
    """What :meth:`Check.compare` reads of a run (a :class:`harness.checks.base.CheckContext` subset)."""

    thresholds: RecordThresholds
    seed: int
    permutations: int


def neighbour_comparisons(
    runs: Sequence[Run], thresholds: Thresholds | None = None, permutations: int | None = None,
    memo: MutableMapping[str, dict[str, Any]] | None = None,
) -> dict[tuple[int, CaseKey], dict[str, Any]]:
    """``(i, case key) -> Comparison.as_dict()`` of each case of run ``i >= 1`` present in run ``i - 1``.

    ``permutations`` overrides the candidate run's own count for the nTVD permutation test. ``memo`` (e.g. read
    from and written back to a file, :func:`read_memo`) keeps each comparison under :func:`memo_key`, so that a
    nightly render compares only the newest pair of runs; entries this series does not use are dropped from it."""
    memo = {} if memo is None else memo
    settings = {"thresholds": None if thresholds is None else thresholds.digest, "permutations": permutations}
    comparisons: dict[tuple[int, CaseKey], dict[str, Any]] = {}
    used: set[str] = set()
    for index in range(1, len(runs)):
        previous = {case_key(case): case for case in runs[index - 1].results["cases"] if case["check"] != "error"}
        metadata = runs[index].results.get("metadata") or {}
        for position, case in enumerate(runs[index].results["cases"]):
            if case["check"] == "error" or case_key(case) not in previous:
                continue
            key = memo_key(runs[index], runs[index - 1], case_key(case), settings)
            if key not in memo:
                memo[key] = compare_records(
                    record_from_json(case, f"{runs[index].source}, case {position}"),
                    record_from_json(previous[case_key(case)], f"{runs[index - 1].source} ({case['id']})"),
                    RecordContext(RecordThresholds(case.get("threshold") or {}, thresholds), int(metadata.get("seed", 0)),
                                  int(permutations or metadata.get("permutations") or 10_000)),
                )
            comparisons[(index, case_key(case))] = memo[key]
            used.add(key)
    for stale in set(memo) - used:
        del memo[stale]
    return comparisons


def memo_key(candidate: Run, baseline: Run, key: CaseKey, settings: Mapping[str, Any]) -> str:
    """What a neighbour comparison depends on: both files' bytes, the case, and the settings given here."""
    return stable_hash([candidate.digest, baseline.digest, list(key), dict(settings)])


def read_memo(path: str | Path) -> dict[str, dict[str, Any]]:
    """A memo file of :func:`neighbour_comparisons` (none yet: empty); a damaged one is a ``ValueError`` naming it."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        memo = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a comparison memo ({exc}); delete it to recompute") from exc
    if not isinstance(memo, dict) or not all(isinstance(value, dict) for value in memo.values()):
        raise ValueError(f"{path}: not a comparison memo (expected an object of comparisons); delete it to recompute")
    return memo


def compare_records(candidate: CaseRecord, baseline: CaseRecord, context: RecordContext) -> dict[str, Any]:
    """The check's baseline comparison of two records of one case (``Comparison.as_dict()``)."""
    if not candidate.paired_data:
        return {"status": "unsupported", "baseline_value": baseline.value, "delta": None, "p_value": None, "regressed": False,
                "message": "the record carries no per-speaker data"}
    case = Case(candidate.check, candidate.model, candidate.corpus, candidate.dimension, candidate.variant, candidate.id)
    return get_check(candidate.check).compare(context, case, candidate, baseline).as_dict()
