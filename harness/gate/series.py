"""A series of results.json files (nights, or checkpoints in release order) and the regressions between neighbours.

:func:`load_series` reads the files and orders them by the time each run recorded (``metadata.created``) or as
given. :func:`neighbour_comparisons` compares every case of run *i* with the same case of run *i - 1* by the
check's own baseline test, :meth:`harness.checks.base.Check.compare`, the one ``--baseline`` applies: the records
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

from harness.checks import get_check
from harness.checks.release import with_floor_changes
from harness.core.values import stable_hash
from harness.gate.baseline import record_case
from harness.metrics.multitest import DecisionRule
from harness.records import CaseKey, CaseRecord, Record, case_key
from harness.results import RunResults, read_results_bytes
from harness.thresholds import Thresholds, ThresholdSchema


@dataclasses.dataclass(frozen=True)
class Run:
    """One results.json of a series; ``label`` names it in the report (:func:`labelled`: its run's name);
    ``digest`` is the SHA-256 of the file's bytes; ``by_position``: the series follows one model by position
    (:func:`follow_models`)."""

    source: str
    label: str
    created: str | None
    results: RunResults
    digest: str
    by_position: bool = False

    def key(self, record: Record) -> CaseKey:
        """What names the record's case across the series (:func:`harness.records.case_key`), its model part
        :data:`CHECKPOINT` when the series follows one model by position."""
        check, model, corpus, variant, dimension = case_key(record)
        return (check, CHECKPOINT if self.by_position else model, corpus, variant, dimension)


def load_series(paths: Sequence[str | Path], order: str = "time") -> list[Run]:
    """The runs of ``paths``, ordered by ``metadata.created`` (``order="time"``) or as given (``"given"``).

    A file that cannot be read as a results.json, or (ordering by time) that records no creation time,
    is one ``ValueError`` naming it."""
    if order not in ("time", "given"):
        raise ValueError(f"order {order!r}: expected 'time' or 'given'")
    runs = labelled([read_run(Path(path)) for path in paths])
    if order == "time":
        undated = next((run.source for run in runs if not run.created), None)
        if undated is not None:
            raise ValueError(
                f"{undated}: records no creation time (metadata.created; written since issue 15); order the series as given instead"
            )
        runs.sort(key=lambda run: run.created)
    return runs


FOLLOW = ("auto", "spec", "position")
CHECKPOINT = "checkpoint"
"""The model part of a case id when a series follows one model by position (:func:`follow_models`)."""


def run_models(run: Run) -> list[str]:
    return sorted(run.results.models)


def follow_models(runs: Sequence[Run], follow: str = "auto") -> list[Run]:
    """Pair the cases of a series across runs. ``spec``: a case is the same case when its check, model, corpus,
    variant and dimension are. ``position``: each run holds one model, a checkpoint of the one being followed
    (``hf:/ckpts/1.2``, ``hf:/ckpts/1.3``...), and cases pair on check, corpus, variant and dimension (the key's
    model part is ``checkpoint``, :meth:`Run.key`; the record keeps its ``model``). ``auto``: position when every
    run holds one model and the specs differ, else spec. A run with several models is a ``ValueError`` under
    position."""
    if follow not in FOLLOW:
        raise ValueError(f"follow {follow!r}: expected one of {', '.join(FOLLOW)}")
    models = [run_models(run) for run in runs]
    if follow == "auto":
        follow = (
            "position" if all(len(held) == 1 for held in models) and len({held[0] for held in models}) > 1 else "spec"
        )
    if follow == "spec":
        return list(runs)
    crowded = next(((run, held) for run, held in zip(runs, models) if len(held) != 1), None)
    if crowded is not None:
        raise ValueError(
            f"{crowded[0].source}: holds models {crowded[1]}; following checkpoints by position needs one model per run"
        )
    return [dataclasses.replace(run, by_position=True) for run in runs]


def labelled(runs: Sequence[Run]) -> list[Run]:
    """Each run named by its run, not by the file's generic name (issue 59, item 8): the path without ``.json`` and
    without a last ``results`` part (``runs/1.3/results.json`` is ``1.3``), as many of its last folders as tell
    the series' runs apart (``a/nightly/results.json`` and ``b/nightly/results.json`` are ``a/nightly`` and
    ``b/nightly``)."""
    names = []
    for run in runs:
        parts = [part for part in Path(run.source).with_suffix("").parts if part not in ("", "/")]
        names.append(parts[:-1] if len(parts) > 1 and parts[-1] == "results" else parts)
    longest = max((len(parts) for parts in names), default=1)
    for depth in range(1, longest + 1):
        labels = ["/".join(parts[-depth:]) for parts in names]
        if len(set(labels)) == len(labels):
            break
    return [dataclasses.replace(run, label=label) for run, label in zip(runs, labels)]


def read_run(path: Path) -> Run:
    results, data = read_results_bytes(path)
    return Run(
        str(path),
        path.name.removesuffix(".json"),
        results.metadata.created,
        results,
        hashlib.sha256(data).hexdigest(),
    )


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
    """What :meth:`Check.compare` reads of a run, recorded (:class:`harness.checks.context.CompareContext`, all of it):
    its thresholds, seed and permutations, and the decision rule the candidate record was judged under (its
    ``decision`` block's ``alpha`` and ``family_size``; a record without one is judged alone at 0.05)."""

    thresholds: RecordThresholds
    seed: int
    permutations: int
    rule: DecisionRule = DecisionRule()

    def decision_rule(self, model: str) -> DecisionRule:
        return self.rule


def recorded_rule(case: CaseRecord) -> DecisionRule:
    """The decision rule a recorded case was judged under (README "Release gating": regressions join that family;
    a record without a decision is judged alone at 0.05)."""
    decision = case.decision
    if decision is None:
        return DecisionRule()
    correction = "none" if "no correction across cases" in str(decision.correction or "") else "bonferroni"
    try:
        return DecisionRule(
            alpha=float(decision.alpha), family_size=max(1, int(decision.family_size)), correction=correction
        )
    except (TypeError, ValueError):
        return DecisionRule()


def neighbour_comparisons(
    runs: Sequence[Run],
    thresholds: Thresholds | None = None,
    permutations: int | None = None,
    memo: MutableMapping[str, dict[str, Any]] | None = None,
) -> dict[tuple[int, CaseKey], dict[str, Any]]:
    """``(i, case key) -> Comparison.to_json()`` of each measured case of run ``i >= 1`` measured in run ``i - 1``
    (:meth:`Run.key`).

        ``permutations`` overrides the candidate run's own count for the nTVD permutation test. ``memo`` (e.g. read
        from and written back to a file, :func:`read_memo`) keeps each comparison under :func:`memo_key`, so that a
        nightly render compares only the newest pair of runs; entries this series does not use are dropped from it."""
    memo = {} if memo is None else memo
    settings = {"thresholds": None if thresholds is None else thresholds.digest, "permutations": permutations}
    comparisons: dict[tuple[int, CaseKey], dict[str, Any]] = {}
    used: set[str] = set()
    for index in range(1, len(runs)):
        run, before = runs[index], runs[index - 1]
        previous = {before.key(case): case for case in before.results.measured}
        metadata = run.results.metadata
        for case in run.results.measured:
            if run.key(case) not in previous:
                continue
            key = memo_key(run, before, run.key(case), settings)
            if key not in memo:
                memo[key] = compare_records(
                    case,
                    previous[run.key(case)],
                    RecordContext(
                        RecordThresholds(case.threshold.to_json(), thresholds),
                        int(metadata.seed or 0),
                        int(permutations or metadata.permutations or 10_000),
                        recorded_rule(case),
                    ),
                )
            comparisons[(index, run.key(case))] = memo[key]
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
    """The check's baseline comparison of two records of one case (``Comparison.to_json()``)."""
    if not candidate.paired_data:
        return {
            "status": "unsupported",
            "baseline_value": baseline.value,
            "delta": None,
            "p_value": None,
            "regressed": False,
            "message": "the record carries no per-speaker data",
        }
    check = get_check(candidate.check)
    return with_floor_changes(
        check.compare(context, record_case(candidate), candidate, baseline), candidate, baseline
    ).to_json()
