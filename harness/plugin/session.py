"""The plugin's session state: :class:`FairnessSession` feeds the run's :class:`~harness.gate.run.RunAssembly` from
pytest's hooks, hands the run's results to ``pytest_lalm_fairness_results`` and writes results.json, the report,
the CI summary and the annotation sample at the end;
:class:`XdistMetadata` gathers what each xdist worker hands the controller."""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Sequence
from typing import Any

import pytest

from harness.cache import OutputCache
from harness.checks import all_checks
from harness.checks.case import Case
from harness.gate.outcomes import EXIT_INCOMPLETE, exit_status
from harness.gate.run import RunAssembly, model_lines, run_lines
from harness.gate.scope import deselection_reason
from harness.plugin.configuration import (
    GATE_KEY,
    IMPORTED_KEY,
    SETUP_ERROR_KEY,
    cache_dir,
    get_gate,
)
from harness.results import RunMetadata, RunResults, is_gate_nodeid, write_results
from lalm_fairness_pytest.outputs import REFUSED_KEY, output_path, runs_tests, set_aside_previous_outputs

RECORD_KEY = "lalm_fairness"
METADATA_KEY = "lalm_fairness_metadata"
SERVED_KEY = "lalm_fairness_served_keys"
SCOPE_OUTPUT = "lalm_fairness_scope"
SETUP_ERROR_OUTPUT = "lalm_fairness_setup_error"
CHECKS_GC_THRESHOLDS = (50_000, 20, 10)
"""The garbage collector's thresholds while the checks run (:func:`gc.set_threshold`; Python's default is
``(700, 10, 10)``): the checks allocate tables of hundreds of thousands of rows that live until their case is
measured, and with the default a CREMA-D-sized re-score ran 21 full collections, 6 with these."""


class FairnessSession:
    """Feeds the run's :class:`~harness.gate.run.RunAssembly` from pytest's hooks and writes the outputs at the end."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.run = RunAssembly()
        self.worker_served_keys: set[str] = set()
        self.other_failures = 0
        self.outcome: RunResults | None = None
        self.worker_setup_error: str | None = None
        self.selected: list[str] | None = None
        self.collected: list[str] | None = None
        self.finished: set[str] = set()
        self.summary_lines: list[tuple[str, bool]] = []
        self.deselected: dict[tuple[str, str], str] = {}
        self.setup_gc_thresholds: tuple[int, ...] | None = None

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        reason = deselection_reason(self.config.option.keyword, self.config.option.markexpr)
        for item in items:
            case = item_case(item)
            if case is not None:
                self.deselected[(case.check, case.id)] = reason

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The gate tests once collection is over, kept for a run interrupted before :meth:`pytest_collection_finish`
        has taken them as the run's selection."""
        self.collected = [item.nodeid for item in items if is_gate_nodeid(item.nodeid)]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.config.pluginmanager.hasplugin("dsession"):  # under xdist, the workers' collection reports it
            self.selected = [item.nodeid for item in session.items if is_gate_nodeid(item.nodeid)]
            if self.selected and not hasattr(self.config, "workerinput"):
                set_aside_previous_outputs(self.config)
        selected: dict[str, list[Case]] = {}
        nodes: dict[str, dict[str, Any]] = {}
        for item in session.items:
            case = item_case(item)
            if case is not None:
                selected.setdefault(case.check, []).append(case)
                nodes[item.nodeid] = dataclasses.asdict(case)
        if selected:
            for check in all_checks():
                get_gate(self.config).set_family(check.name, selected.get(check.name, []))
        if selected or self.deselected:
            # The full gate is every enabled check's cases for the run's models and sources, whatever pytest
            # collected: a run of one gate module, a node id or -k is a spot check (harness.gate.scope).
            gate = get_gate(self.config)
            self.run.scope_parts.append({
                "gate": [[check.name, case.id, case.model] for check in all_checks() for case in gate.cases(check.name)],
                "deselected": [[check, case_id, reason] for (check, case_id), reason in self.deselected.items()],
                "nodes": nodes,
                "off": gate.off_checks(),
                "baseline_missing": [record.to_json() for record in gate.baseline_gaps()],
            })  # fmt: skip
        if selected:
            self.freeze_setup_objects()

    def freeze_setup_objects(self) -> None:
        """Move every object alive once the gate is set up (the imported modules, the corpora, the gate) out of the
        garbage collector's view until the session ends (:func:`gc.freeze`): they live for the whole run, and each
        full collection of the checks' transient tables would otherwise traverse them again (on a CREMA-D-sized
        re-score, about half of its collector time); and collect less often meanwhile (:data:`CHECKS_GC_THRESHOLDS`).
        :meth:`thaw_setup_objects` restores both, as the run's last cleanup
        (:func:`lalm_fairness_pytest.thaw_gate_session`)."""
        if self.setup_gc_thresholds is None:
            self.setup_gc_thresholds = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(*CHECKS_GC_THRESHOLDS)

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        """Once the outputs are written, freeze what the run left alive too (its tables, its records), before
        pytest's own final full collections (its unraisable-exception hook's, at unconfigure and in a cleanup),
        which would otherwise traverse all of it twice (about 0.4 s of a CREMA-D-sized re-score's CPU);
        :meth:`thaw_setup_objects` gives everything back as the run's last cleanup."""
        if self.setup_gc_thresholds is not None:
            gc.freeze()

    def thaw_setup_objects(self) -> None:
        """Give the objects :meth:`freeze_setup_objects` froze back to the collector (:func:`gc.unfreeze`) and
        restore its thresholds, at the session's end."""
        if self.setup_gc_thresholds is not None:
            gc.unfreeze()
            gc.set_threshold(*self.setup_gc_thresholds)
            self.setup_gc_thresholds = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.finished.add(report.nodeid)
        if report.skipped:
            self.run.skipped_nodes[report.nodeid] = _skip_reason(report)
        for key, value in report.user_properties:
            if key == RECORD_KEY:
                self.run.add_record(report.nodeid, value)
        if report.failed and report.nodeid not in self.run.records:
            if "fairness" not in report.keywords:
                self.other_failures += 1
                return
            self.run.unrecorded_failures.setdefault(report.nodeid, _short_error(report))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            if GATE_KEY in self.config.stash:
                gate = self.config.stash[GATE_KEY]
                self.config.workeroutput[METADATA_KEY] = json.dumps(gate.run_metadata().to_json())
                self.config.workeroutput[SERVED_KEY] = json.dumps(sorted(gate.served_keys()))
            if self.run.scope_parts:
                self.config.workeroutput[SCOPE_OUTPUT] = json.dumps(self.run.scope_parts)
            if SETUP_ERROR_KEY in self.config.stash:
                self.config.workeroutput[SETUP_ERROR_OUTPUT] = str(self.config.stash[SETUP_ERROR_KEY])
            return
        if self.worker_setup_error is not None:
            set_aside_previous_outputs(self.config)
            self.config.get_terminal_writer().line(f"ERROR: {self.worker_setup_error}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if SETUP_ERROR_KEY in self.config.stash or REFUSED_KEY in self.config.stash:
            return
        self.export_cache()
        interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        if (
            interrupted
            and self.selected is None
            and self.collected
            and not self.config.pluginmanager.hasplugin("dsession")
        ):
            self.selected = self.collected  # stopped between collection and its finish: every collected case not run
        not_run = (
            [nodeid for nodeid in self.selected or () if nodeid not in self.finished] if runs_tests(self.config) else []
        )
        if (
            not self.run.records
            and not self.run.unrecorded_failures
            and not (self.selected and (interrupted or not_run))
        ):
            return  # not a gate run
        results = self.run.results(self.metadata(), self.selected, not_run, interrupted)
        self.outcome = results
        if results.verdict == "incomplete":
            session.exitstatus = EXIT_INCOMPLETE
        elif session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not self.other_failures:
            session.exitstatus = exit_status(results.verdict, results.summary)
        self.config.hook.pytest_lalm_fairness_results(results=results)
        results_path = output_path(self.config, "--results-json")
        if results_path:
            write_results(results_path, results)
        report_path = output_path(self.config, "--report")
        if report_path:
            from harness.report import write_report

            write_report(results, report_path)
        summary_path = self.config.getoption("--summary-md")
        if summary_path:
            from harness.report.ci_summary import write_summary

            write_summary(results, summary_path, report_path or None, results_path or None)
        sample_path = self.config.getoption("--annotation-sample")
        if sample_path:
            self.write_annotation_sample(sample_path, results, results_path)

    def metadata(self) -> RunMetadata:
        """The run's metadata: the workers' parts and this process's gate's, merged (:meth:`RunAssembly.metadata`)."""
        own = self.config.stash[GATE_KEY].run_metadata() if GATE_KEY in self.config.stash else None
        return self.run.metadata(own, self.config.stash.get(IMPORTED_KEY, []))

    def write_annotation_sample(self, path: str, results: RunResults, results_path: str | None) -> None:
        """Draw the ``--annotation-sample`` from the run's nTVD cases (answers and extractions read back from its
        cache) and say what to do with it (in the terminal summary); a run that is incomplete or measured no nTVD
        case writes none, saying why."""

        def write(line: str, red: bool = False) -> None:
            self.summary_lines.append((line, red))

        if results.verdict == "incomplete":
            write(f"lalm-fairness: no annotation sample written to {path}: the run is incomplete", red=True)
            return
        try:
            sample = get_gate(self.config).annotation_sample(
                results.cases,
                path,
                per_task=self.config.getoption("--annotation-per-task"),
                seed=self.config.getoption("--fairness-seed"),
            )
        except (ValueError, OSError) as exc:
            write(f"lalm-fairness: no annotation sample written to {path}: {exc}", red=True)
            return
        write(
            f"lalm-fairness: annotation sample of {len(sample)} extracted values in {sample['response_id'].nunique()} "
            f"answers written to {path}; fill its annotator_agrees column with yes or no, then run "
            f"lalm-fairness-report {results_path or 'RESULTS_JSON'} --human-validation {path} for Table I"
        )

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The corpora's audio warnings, the run's verdict, each cause of unmeasured cases once, a cache set aside,
        the annotation sample, and last each model's verdict."""
        if hasattr(self.config, "workerinput"):
            return
        metadata = self.outcome.metadata if self.outcome is not None else self.metadata()
        for line in metadata.audio_warnings() + (metadata.baseline.notes if metadata.baseline is not None else []):
            terminalreporter.write_line(f"lalm-fairness: warning: {line}")
        if self.outcome is None:
            return
        for line in run_lines(self.outcome):
            terminalreporter.write_line(line)
        for line, red in self.summary_lines:
            terminalreporter.write_line(line, red=red)
        for line in model_lines(self.outcome):
            terminalreporter.write_line(line)

    def export_cache(self) -> None:
        path = self.config.getoption("--export-cache")
        if not path:
            return
        keys = set(self.worker_served_keys)
        if GATE_KEY in self.config.stash:
            keys |= self.config.stash[GATE_KEY].served_keys()
        cache = OutputCache(cache_dir(self.config))
        try:
            count = cache.export(path, keys)
        finally:
            cache.close()
        self.config.get_terminal_writer().line(f"lalm-fairness: exported {count} cached outputs to {path}")


class XdistMetadata:
    """Controller side of pytest-xdist: gathers each worker's run metadata."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        session = self.config.pluginmanager.get_plugin("lalm_fairness_session")
        if session.selected is None:
            session.selected = [nodeid for nodeid in ids if is_gate_nodeid(nodeid)]
            if session.selected:
                set_aside_previous_outputs(self.config)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        session = self.config.pluginmanager.get_plugin("lalm_fairness_session")
        if output.get(METADATA_KEY):
            session.run.add_metadata(json.loads(output[METADATA_KEY]), "an xdist worker's run metadata")
        if output.get(SERVED_KEY):
            session.worker_served_keys.update(json.loads(output[SERVED_KEY]))
        if output.get(SETUP_ERROR_OUTPUT):
            session.worker_setup_error = output[SETUP_ERROR_OUTPUT]
        if output.get(SCOPE_OUTPUT) and not session.run.scope_parts:
            session.run.scope_parts.extend(json.loads(output[SCOPE_OUTPUT]))


def item_case(item: pytest.Item) -> Case | None:
    """The gate case an item tests (its parametrized :class:`~harness.checks.case.Case`), or None."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return next((value for value in params.values() if isinstance(value, Case)), None)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _short_error(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash.message if crash is not None else str(report.longrepr)[-500:]
