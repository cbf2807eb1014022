"""One run's results assembled from what its processes report: the :class:`RunAssembly` the pytest plugin feeds.

The plugin hands it each test's verdict record (as JSON: pytest-xdist carries records from workers to the
controller), each process's :class:`~harness.results.RunMetadata` part, the parts of the run's scope each
collecting process saw, the skipped tests and the gate tests that failed without a record. At the session's end
:meth:`RunAssembly.results` makes the :class:`~harness.results.RunResults` (cases, the run's decision, summary,
scope, merged metadata, the incomplete block) and :func:`terminal_lines` what the terminal says of it. The
decision (the run's verdict and each model's, :func:`harness.run_decision.decide_run`) is made here, once; every
surface reads it.
This module knows nothing of pytest.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.case import Case
from harness.gate import unmeasured_record
from harness.gate.scope import run_scope
from harness.records import Cause, Record, Scope
from harness.results import Incomplete, RunMetadata, RunResults, Summary, case_of_nodeid, record_from_json
from harness.results.metadata import ImportedCache
from harness.run_decision import INCOMPLETE, RunDecision, decide_run

INTERRUPTED = "an interruption (Ctrl-C or SIGTERM)"
STOPPED_EARLY = "-x / --maxfail, before every selected test ran"


class RunAssembly:
    """The records, metadata parts and scope parts of one run, gathered in the process that writes its outputs."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.metadata_parts: list[RunMetadata] = []
        self.scope_parts: list[dict[str, Any]] = []
        self.skipped_nodes: dict[str, str] = {}
        self.unrecorded_failures: dict[str, str] = {}

    def add_record(self, nodeid: str, data: Mapping[str, Any]) -> None:
        """A test's verdict record, as :meth:`~harness.records.CaseRecord.to_json` wrote it."""
        self.records[nodeid] = record_from_json(dict(data, nodeid=nodeid), nodeid)

    def add_metadata(self, data: Mapping[str, Any], source: str) -> None:
        """A process's :meth:`harness.gate.Gate.run_metadata`, as JSON (``source`` names the process in errors)."""
        self.metadata_parts.append(RunMetadata.from_json(data, source))

    def gate_models(self) -> dict[tuple[str, str], str | None]:
        """Each case of the full gate (check, id) -> its model, as the collecting processes listed it."""
        return {
            (entry[0], entry[1]): entry[2] if len(entry) > 2 else None
            for part in self.scope_parts
            for entry in part["gate"]
        }

    def scope(self, not_run: Sequence[str] = ()) -> tuple[Scope | None, dict[str, dict[str, Any]]]:
        """The run's :class:`~harness.records.Scope` (None when no gate case was collected) from the parts of
        every process that collected, and each selected node's case (its fields); ``not_run``: the selected node
        ids that never finished (not counted as ran)."""
        gate: list[tuple[str, str]] = []
        deselected: dict[tuple[str, str], str] = {}
        nodes: dict[str, dict[str, Any]] = {}
        off: list[str] = []
        for part in self.scope_parts:
            off += [name for name in part["off"] if name not in off]
            gate += [(entry[0], entry[1]) for entry in part["gate"]]
            deselected |= {(check, case_id): reason for check, case_id, reason in part["deselected"]}
            nodes |= part["nodes"]
        if not gate and not nodes:
            return None, nodes
        identity = {nodeid: (case.check, case.id) for nodeid, case in ((n, Case(**node)) for n, node in nodes.items())}
        skipped = {identity[nodeid]: reason for nodeid, reason in self.skipped_nodes.items() if nodeid in identity}
        unfinished = [identity[nodeid] for nodeid in not_run if nodeid in identity]
        return run_scope(gate, identity.values(), deselected, skipped, off, unfinished), nodes

    def baseline_gaps(self) -> list[Record]:
        """The baseline's cases that the run's gate lacks (:meth:`harness.gate.Gate.baseline_gaps`), unmeasured
        records of the run: a release against a baseline that does not run all of the baseline's cases has the
        verdict ``unmeasured`` at best, naming them."""
        gaps = next((part.get("baseline_missing") or [] for part in self.scope_parts), [])
        return [record_from_json(data, "the run's baseline coverage") for data in gaps]

    def results(
        self,
        metadata: RunMetadata,
        selected: Sequence[str] | None,
        not_run: Sequence[str] = (),
        interrupted: bool = False,
    ) -> RunResults:
        """The run's results: every recorded case (a gate test that failed without a record is an unmeasured
        case of cause ``internal``), ordered by node id; ``selected`` and ``not_run`` are the gate tests the
        run selected and those that never finished."""
        scope, nodes = self.scope(not_run)
        for nodeid, message in self.unrecorded_failures.items():
            if nodeid not in self.records:
                case = Case(**nodes[nodeid]) if nodeid in nodes else unknown_case(nodeid)
                self.records[nodeid] = unmeasured_record(case, message, Cause("internal", None, message), nodeid)
        cases = (*(record for _, record in sorted(self.records.items())), *self.baseline_gaps())
        decision = self.decision(cases, scope, nodes, not_run, interrupted)
        summary = Summary.of(cases, len(not_run))
        incomplete = None
        if decision.verdict == INCOMPLETE:
            incomplete = Incomplete(
                stopped_by=INTERRUPTED if interrupted else STOPPED_EARLY,
                selected=len(selected) if selected is not None else None,
                finished=len(selected or ()) - len(not_run),
                not_run=list(not_run),
            )
        return RunResults(decision, summary, metadata, cases, scope, incomplete)

    def decision(
        self,
        cases: Sequence[Record],
        scope: Scope | None,
        nodes: Mapping[str, Mapping[str, Any]],
        not_run: Sequence[str],
        interrupted: bool,
    ) -> RunDecision:
        """The run's decision (:func:`harness.run_decision.decide_run`), made once: the selected tests that did not
        run counted per model by their node's case, the full gate's cases left out of the run per model by the
        gate's listing (None where either is unknown)."""
        not_run_per_model: dict[str | None, int] = {}
        for nodeid in not_run:
            model = (nodes.get(nodeid) or {}).get("model")
            not_run_per_model[model] = not_run_per_model.get(model, 0) + 1
        left_out: dict[str | None, int] = {}
        gate_models = self.gate_models()
        for omitted in scope.omitted if scope is not None else ():
            model = gate_models.get((omitted.check, omitted.id))
            left_out[model] = left_out.get(model, 0) + 1
        return decide_run(
            cases,
            stopped=interrupted,
            spot_check=bool(scope and scope.spot_check),
            not_run=not_run_per_model,
            left_out=left_out,
            models=list(dict.fromkeys(model for model in gate_models.values() if model)),
        )

    def metadata(self, own: RunMetadata | None, imported_caches: Sequence[Mapping[str, Any]]) -> RunMetadata:
        """The run's metadata: the workers' parts and this process's ``own``, merged, with the time and versions;
        ``imported_caches``: the ``--import-cache`` files as the plugin read them (file, entries, per_model)."""
        workers = len(self.metadata_parts)
        return RunMetadata.merge(
            [*self.metadata_parts, *([own] if own is not None else [])],
            [ImportedCache.from_json(entry, "--import-cache") for entry in imported_caches],
            created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            package_versions=package_versions(),
            workers=max(1, workers),
        )


def unknown_case(nodeid: str) -> Case:
    """A gate test's case known only by its node id (its check and id)."""
    check, case_id = case_of_nodeid(nodeid)
    return Case(check=check, model=None, corpus=None, dimension=None, variant=None, id=case_id)


def terminal_lines(results: RunResults) -> list[str]:
    """What the terminal says of a run at its end: :func:`run_lines`, then each model's verdict last
    (:func:`model_lines`)."""
    return run_lines(results) + model_lines(results)


def model_lines(results: RunResults) -> list[str]:
    """One line per model under test, its verdict as the run's decision holds it and the counts it rests on:
    ``lalm-fairness: model sim:fair: INCOMPLETE (12 cases: 12 passed, 0 failed, 0 unmeasured; 21 did not run)``."""
    return [
        f"lalm-fairness: model {model.model}: {model.verdict.upper()} ({model.counts_text()})"
        for model in results.decision.models
    ]


def run_lines(results: RunResults) -> list[str]:
    """What the terminal says of the run as a whole: the verdict and counts, a spot check's scope, the protocol
    deviations, an interruption, and each cause of unmeasured cases once."""
    summary, metadata = results.summary, results.metadata
    lines = [
        f"lalm-fairness: verdict {results.verdict}: {summary.cases} cases, {summary.passed} passed, "
        f"{summary.failed} failed, {summary.unmeasured} unmeasured"
    ]
    if results.scope is not None and results.scope.spot_check:
        lines.append(f"lalm-fairness: {results.scope.title()}")
    lines += [f"lalm-fairness: deviation: {deviation}" for deviation in results.deviations()]
    if results.incomplete is not None:
        stopped = results.incomplete
        lines.append(
            f"lalm-fairness: INCOMPLETE, do not release: the run was stopped by {stopped.stopped_by}; "
            f"{len(stopped.not_run)} of {stopped.selected} selected tests did not run"
        )
    causes: dict[tuple, list[Cause]] = {}
    for case in results.unmeasured:
        cause = case.cause or Cause("internal", None, case.message)
        causes.setdefault((cause.kind, cause.source or cause.message), []).append(cause)
    for group in causes.values():
        lines.append(f"  not measured ({group[0].where}), {len(group)} case(s): {group[0].message}")
    if metadata.cache_set_aside:
        lines.append(
            f"lalm-fairness: the cache database was damaged; set aside as {metadata.cache_set_aside} and rebuilt"
        )
    return lines


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in (
        "lalm-fairness",
        "numpy",
        "pandas",
        "scipy",
        "statsmodels",
        "pytest",
        "pytest-xdist",
        "torch",
        "transformers",
        "vllm",
    ):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions
