"""pytest plugin: options, parametrization of the gate's cases, and the results.json / report.html writers.

It wires pytest to :mod:`harness.gate` and computes nothing itself. A setup problem (a bad spec, option,
corpus, thresholds file or cache folder) stops the run before any case with one ``ERROR:`` line and
pytest's usage-error status; a case that cannot be measured is a pytest *error* at setup, recorded with
its cause; the exit status is the run's (:mod:`harness.outcomes`). Verdict records travel from the
test to the session through ``user_properties``, which pytest-xdist carries from workers to the
controller; run metadata (model calls, fingerprints) travels through ``workeroutput``. Only the
controller (or a run without xdist) writes the outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cache import CacheError, OutputCache
from harness.checks import all_checks
from harness.checks.base import Case, Verdict
from harness.core.errors import ModelError
from harness.core.files import LockHeld, ensure_writable, file_lock, portable_path
from harness.data import CorpusError
from harness.gate import (
    DEFAULT_CACHE_DIR,
    DEFAULT_JUDGE,
    DEFAULT_MODELS,
    Gate,
    GateConfig,
    Unmeasured,
    audio_warnings,
    merge_run_metadata,
    package_versions,
)
from harness.gate.outcomes import EXIT_INCOMPLETE, exit_status, run_outcome
from harness.gate.scope import deselection_reason, run_scope
from harness.models.placement import GPU_MARKER, assign_worker_gpus, gpu_skip_reason, xdist_group_name
from harness.models.progress import attach_terminal, detach_terminal
from harness.models.residency import largest_parallel_degree
from harness.plugin.junit import AtomicJunitXml
from harness.plugin.plan import PlanSession
from harness.records import RULE_JUDGES, RULE_JUDGES_DEVIATION, SCHEMA_VERSION, ErrorRecord
from harness.results import write_results
from harness.thresholds import ThresholdsError
from lalm_fairness_pytest.options import add_options

RECORD_KEY = "lalm_fairness"
METADATA_KEY = "lalm_fairness_metadata"
SERVED_KEY = "lalm_fairness_served_keys"
SCOPE_OUTPUT = "lalm_fairness_scope"
SETUP_ERROR_OUTPUT = "lalm_fairness_setup_error"
GATE_KEY = pytest.StashKey[Gate]()
SETUP_ERROR_KEY = pytest.StashKey[pytest.UsageError]()
IMPORTED_KEY = pytest.StashKey[list]()
SET_ASIDE_KEY = pytest.StashKey[bool]()
RUN_LOCK_KEY = pytest.StashKey[contextlib.ExitStack]()
REFUSED_KEY = pytest.StashKey[str]()
OUTPUT_OPTIONS = ("--results-json", "--report", "--summary-md")
# The defaults, in the folder pytest runs in, are checked only when written: a run of other tests never needs them.
OUTPUT_DEFAULTS = {"--results-json": "results.json", "--report": "report.html"}
PREVIOUS_SUFFIX = ".previous"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fairness: a voice-induced bias gate case")
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped with a reason without one")
    assign_gpus_of_worker(config)
    if not hasattr(config, "workerinput"):
        prepare_outputs(config)
        interrupt_on_sigterm(config)
        import_caches(config)
        attach_progress_terminal(config)
    config.pluginmanager.register(FairnessSession(config), "lalm_fairness_session")
    if config.getoption("--plan") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(PlanSession(config, get_gate), "lalm_fairness_plan")
    config.pluginmanager.register(AtomicJunitXml(config), "lalm_fairness_atomic_junit")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistMetadata(config), "lalm_fairness_xdist")


def assign_gpus_of_worker(config: pytest.Config) -> None:
    """An xdist worker claims the GPUs the run's largest model needs (tensor x pipeline parallel), before CUDA starts."""
    blocks = _read_model_config(Path(config.getoption("--model-config"))) if config.getoption("--model-config") else {}
    named = [
        *(config.getoption("--model") or DEFAULT_MODELS),
        config.getoption("--extractor"),
        config.getoption("--judge"),
    ]
    try:
        assign_worker_gpus(largest_parallel_degree({spec: blocks.get(spec, {}) for spec in named if spec}))
    except ValueError as exc:
        raise pytest.UsageError(f"lalm-fairness: {exc}") from exc


def prepare_outputs(config: pytest.Config) -> None:
    """Before any case runs: the folder of each output named on the command line exists (made when missing)
    and can be written, else one ``ERROR:`` line and exit 4. An ``--annotation-sample`` file must not exist yet:
    an annotator may have filled it in."""
    sample = config.getoption("--annotation-sample")
    if sample and Path(sample).exists():
        raise pytest.UsageError(
            f"lalm-fairness: --annotation-sample {sample}: the file exists and may hold an annotator's work; "
            "name a new file, or move this one away"
        )
    if config.getoption("--annotation-per-task") < 1:
        raise pytest.UsageError(
            f"lalm-fairness: --annotation-per-task must be >= 1, got {config.getoption('--annotation-per-task')}"
        )
    for option in (*OUTPUT_OPTIONS, "--annotation-sample"):
        value = config.getoption(option)
        if value:
            try:
                ensure_writable(value)
            except OSError as exc:
                raise pytest.UsageError(
                    f"lalm-fairness: {option} {value}: cannot be written ({type(exc).__name__}: {exc})"
                ) from exc


def set_aside_previous_outputs(config: pytest.Config) -> None:
    """Once a run is known to be a gate run (its gate tests collected, or a setup error found), move an output
    that an earlier run left at this run's paths to ``<file>.previous`` (the ``--baseline`` file excepted: it is
    read, then replaced at the end), so that whatever stops this run, no file there is mistaken for its result.
    ``--export-cache`` and ``--junitxml`` are among them. A run that runs no test (``--collect-only``) moves nothing."""
    if config.stash.get(SET_ASIDE_KEY, False) or not runs_tests(config):
        return
    config.stash[SET_ASIDE_KEY] = True
    hold_run_lock(config)
    baseline = config.getoption("--baseline")
    baseline_path = Path(baseline).resolve() if baseline else None
    for value in [
        *(output_path(config, option) for option in OUTPUT_OPTIONS),
        config.getoption("--export-cache"),
        getattr(config.option, "xmlpath", None),
    ]:
        if value and Path(value).is_file() and Path(value).resolve() != baseline_path:
            os.replace(value, f"{value}{PREVIOUS_SUFFIX}")


def hold_run_lock(config: pytest.Config) -> None:
    """One gate run at a time per results.json: the run holds ``<results.json>.lock`` (holding its pid) until it
    ends. A second run on the same path stops before its first case, moving and writing nothing, with one
    ``ERROR:`` line naming the holder (exit 4); two runs no longer overwrite each other's results silently."""
    results = output_path(config, "--results-json") or output_path(config, "--report")
    if not results:
        return
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(file_lock(f"{results}.lock", wait=False))
    except LockHeld as held:
        config.stash[REFUSED_KEY] = (
            f"lalm-fairness: another gate run ({held.holder}) is writing {results}: wait for it to end, "
            "or give this run its own --results-json and --report"
        )
        raise pytest.UsageError(config.stash[REFUSED_KEY]) from None
    config.stash[RUN_LOCK_KEY] = stack
    config.add_cleanup(stack.close)


def runs_tests(config: pytest.Config) -> bool:
    """False for ``--collect-only``, ``--setup-only``, ``--setup-plan`` and ``--plan``: runs that run no test by design."""
    return not (
        config.option.collectonly or config.option.setuponly or config.option.setupplan or config.getoption("--plan")
    )


def interrupt_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, ``timeout``, ``kill``) stops the run as Ctrl-C does, so that the session
    ends and writes its INCOMPLETE outputs; a handler someone else installed is left alone."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))


def attach_progress_terminal(config: pytest.Config) -> None:
    """Progress bars of generation on this terminal, drawn with pytest's capture suspended; only in the
    process that owns the terminal (never an xdist worker) and only when stderr is a terminal."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if sys.stderr.isatty() and capture is not None:
        attach_terminal(sys.stderr, capture.global_and_fixture_disabled)
        config.add_cleanup(detach_terminal)


def import_caches(config: pytest.Config) -> None:
    """Load --import-cache files once, in the controlling process, before any worker starts."""
    files = config.getoption("--import-cache") or []
    if not files:
        return
    cache = OutputCache(cache_dir(config))
    try:
        config.stash[IMPORTED_KEY] = [
            {"file": portable_path(path), "entries": sum(counts.values()), "per_model": counts}
            for path, counts in ((path, cache.import_counts(path)) for path in files)
        ]
    except CacheError as exc:
        set_aside_previous_outputs(config)
        raise pytest.UsageError(f"lalm-fairness: {exc}") from exc
    finally:
        cache.close()


def pytest_report_header(config: pytest.Config) -> str | None:
    """Which thresholds file and cache folder a gate run uses, said before any case (results.json records both)."""
    if hasattr(config, "workerinput"):
        return None
    from harness.thresholds import PACKAGED

    chosen = thresholds_path(config)
    thresholds = (
        chosen
        or f"{PACKAGED} (the built-in defaults: no thresholds.yaml in the rootdir {config.rootpath}, no --thresholds)"
    )
    lines = [
        f"lalm-fairness: thresholds {thresholds}; cache {Path(cache_dir(config)).resolve()}; "
        f"outputs {', '.join(str(output_path(config, option)) for option in OUTPUT_OPTIONS if output_path(config, option))}"
    ]
    unused = unused_parent_thresholds(config) if chosen is None else None
    if unused is not None:
        lines.append(
            f"lalm-fairness: WARNING: {unused} is not used: the rootdir is {config.rootpath}; "
            f"pass --thresholds {unused} or --rootdir {unused.parent}"
        )
    return lines


def thresholds_path(config: pytest.Config) -> str | None:
    """``--thresholds``, else ``thresholds.yaml`` in pytest's rootdir when there is one, else None (built-in defaults)."""
    chosen = config.getoption("--thresholds")
    if chosen is None and (Path(config.rootpath) / "thresholds.yaml").is_file():
        chosen = str(Path(config.rootpath) / "thresholds.yaml")
    return chosen


def unused_parent_thresholds(config: pytest.Config) -> Path | None:
    """A thresholds.yaml in a folder above the rootdir (up to the repository's top, the first folder holding
    ``.git``): run from a subfolder of a project without a pytest ini file, it would silently not apply."""
    for folder in Path(config.rootpath).resolve().parents:
        if (folder / "thresholds.yaml").is_file():
            return folder / "thresholds.yaml"
        if (folder / ".git").exists():
            return None
    return None


def cache_dir(config: pytest.Config) -> str:
    return config.getoption("--cache-dir") or str(Path(config.rootpath) / DEFAULT_CACHE_DIR)


def output_path(config: pytest.Config, option: str) -> str | None:
    """Where an output goes: the path given (relative to the working folder), else its default name in the
    rootdir, as the thresholds file and the cache are; ``''`` writes none."""
    value = config.getoption(option)
    if value is None and option in OUTPUT_DEFAULTS:
        return str(Path(config.rootpath) / OUTPUT_DEFAULTS[option])
    return value or None


def gate_config(config: pytest.Config) -> GateConfig:
    thresholds = thresholds_path(config)
    corpora: dict[str, str | None] = {}
    for entry in config.getoption("--corpus") or ["demo"]:
        name, sep, path = entry.partition("=")
        if not name or (sep and not path):
            raise pytest.UsageError(f"--corpus {entry!r}: expected NAME or NAME=PATH")
        corpora[name] = path or None
    model_options: dict[str, Any] = {}
    model_config = config.getoption("--model-config")
    if model_config:
        model_options = _read_model_config(Path(model_config))
    judge = config.getoption("--judge")
    if judge is None and not config.getoption("--model"):
        judge = DEFAULT_JUDGE
    return GateConfig(
        models=tuple(dict.fromkeys(config.getoption("--model") or DEFAULT_MODELS)),
        corpora=corpora,
        thresholds_path=thresholds,
        cache_dir=cache_dir(config),
        offline=config.getoption("--offline") or bool(config.getoption("--plan")),
        baseline_path=config.getoption("--baseline"),
        baseline_model=config.getoption("--baseline-model"),
        extractor=config.getoption("--extractor"),
        embedder=config.getoption("--embedder"),
        judge=judge,
        basis_judge=config.getoption("--basis-judge"),
        permutations=config.getoption("--permutations"),
        seed=config.getoption("--fairness-seed"),
        prompts_dir=config.getoption("--prompts"),
        model_options=model_options,
        model_options_source=f"--model-config {model_config}" if model_config else None,
        basis_suite=config.getoption("--basis-suite"),
    )


def _read_model_config(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise pytest.UsageError(f"--model-config {path}: cannot be read ({exc})") from exc
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or not all(isinstance(block, dict) for block in models.values()):
        raise pytest.UsageError(f"--model-config {path}: expected a 'models' mapping of spec -> option block")
    return models


def get_gate(config: pytest.Config) -> Gate:
    """The session's gate, built once; a configuration it refuses is a :class:`pytest.UsageError` (kept, and
    raised again on every later call)."""
    if SETUP_ERROR_KEY in config.stash:
        raise config.stash[SETUP_ERROR_KEY]
    if GATE_KEY not in config.stash:
        try:
            gate = Gate(gate_config(config))
            gate.open_cache()
            config.stash[GATE_KEY] = gate
        except pytest.UsageError as exc:
            config.stash[SETUP_ERROR_KEY] = exc
            raise
        except (CorpusError, ThresholdsError, ModelError, ValueError) as exc:
            config.stash[SETUP_ERROR_KEY] = pytest.UsageError(f"lalm-fairness: {' '.join(str(exc).split())}")
            raise config.stash[SETUP_ERROR_KEY] from exc
    return config.stash[GATE_KEY]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A setup problem found while the cases were parametrized ends the run here, before any case, as one
    usage error (raised inside a module's collection it would be one traceback per gate module). An xdist
    worker cannot raise it: it runs nothing and hands the message to the controller, which reports it."""
    if SETUP_ERROR_KEY in config.stash:
        if hasattr(config, "workerinput"):
            config.hook.pytest_deselected(items=list(items))
            items.clear()
            return
        set_aside_previous_outputs(config)
        raise config.stash[SETUP_ERROR_KEY]
    skip_gpu_items(items, gpu_skip_reason)


def skip_gpu_items(items: Sequence[pytest.Item], reason_here: Callable[[], str | None]) -> int:
    """Skip every item marked ``gpu`` with the reason ``reason_here()`` gives (None: a CUDA device is
    usable); it is asked only when some item carries the marker, since it imports torch. Returns the count."""
    marked = [item for item in items if item.get_closest_marker(GPU_MARKER) is not None]
    reason = reason_here() if marked else None
    if reason is None:
        return 0
    for item in marked:
        item.add_marker(pytest.mark.skip(reason=reason))
    return len(marked)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for check in all_checks():
        if check.fixture not in metafunc.fixturenames:
            continue
        try:
            gate = get_gate(metafunc.config)
        except pytest.UsageError:  # raised once collection is over (pytest_collection_modifyitems)
            metafunc.parametrize(check.fixture, [pytest.param(None, id="setup-error")])
            continue
        cases = gate.cases(check.name)
        params = [
            pytest.param(
                case, id=case.id, marks=[pytest.mark.fairness, pytest.mark.xdist_group(xdist_group_name(case.model))]
            )
            for case in cases
        ]
        if not params:
            params = [pytest.param(None, id="no-case", marks=pytest.mark.skip(reason=gate.no_cases_reason(check.name)))]
        metafunc.parametrize(check.fixture, params)


@pytest.fixture(scope="session")
def fairness_gate(pytestconfig: pytest.Config) -> Gate:
    """The session's gate (lazy: nothing is loaded or generated until a case asks)."""
    return get_gate(pytestconfig)


@pytest.fixture
def record_verdict(request: pytest.FixtureRequest):
    """Attach a verdict's record to the test report, whence it reaches results.json and the report."""

    def record(verdict: Verdict) -> None:
        request.node.user_properties.append((RECORD_KEY, verdict.record.to_json()))

    return record


@pytest.fixture
def assess(request: pytest.FixtureRequest, fairness_gate: Gate, record_verdict):
    """``assess(case)``: the case's verdict, recorded for results.json and the report; fails the test
    with the verdict's message when the case does not pass.

    The verdict of the test's own case is computed while the fixture is set up, so a case that cannot be
    measured is a pytest *error* (never a failure) with one short message: the cause in full for the first
    case of each cause, a reference to that case for the others. A fault of the harness itself shows its
    traceback once."""
    own = next((value for value in getattr(getattr(request.node, "callspec", None), "params", {}).values()
                if isinstance(value, Case)), None)  # fmt: skip
    measured = {own: measure(request.node, fairness_gate, own)} if own is not None else {}

    def run(case: Case) -> Verdict:
        verdict = measured[case] if case in measured else measure(request.node, fairness_gate, case)
        record_verdict(verdict)
        if not verdict.passed:
            pytest.fail(verdict.message, pytrace=False)
        return verdict

    return run


def measure(item: pytest.Item, gate: Gate, case: Case) -> Verdict:
    """The case's verdict; an unmeasured case is recorded with its cause and raised as a short error."""
    outcome = gate.outcome(case)
    if isinstance(outcome, Unmeasured):
        item.user_properties.append((RECORD_KEY, outcome.record(item.nodeid).to_json()))
        if outcome.cause.kind == "internal" and outcome.first_case is None:
            raise outcome.error
        pytest.fail(outcome.message, pytrace=False)
    return outcome


class FairnessSession:
    """Collects verdict records and writes the outputs at the end of the session."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: dict[str, dict[str, Any]] = {}
        self.worker_metadata: list[dict[str, Any]] = []
        self.worker_served_keys: set[str] = set()
        self.other_failures = 0
        self.outcome: dict[str, Any] | None = None
        self.worker_setup_error: str | None = None
        self.selected: list[str] | None = None
        self.finished: set[str] = set()
        self.summary_lines: list[tuple[str, bool]] = []
        self.scope_parts: list[dict[str, Any]] = []
        self.deselected: dict[tuple[str, str], str] = {}
        self.skipped_nodes: dict[str, str] = {}
        self.unrecorded_failures: dict[str, str] = {}

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        reason = deselection_reason(self.config.option.keyword, self.config.option.markexpr)
        for item in items:
            case = item_case(item)
            if case is not None:
                self.deselected[(case.check, case.id)] = reason

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.config.pluginmanager.hasplugin("dsession"):  # under xdist, the workers' collection reports it
            self.selected = gate_nodeids(item.nodeid for item in session.items)
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
        checks = dict.fromkeys([*selected, *(check for check, _ in self.deselected)])
        if checks:
            gate = get_gate(self.config)
            self.scope_parts.append({
                "gate": [[check, case.id] for check in checks for case in gate.cases(check)],
                "deselected": [[check, case_id, reason] for (check, case_id), reason in self.deselected.items()],
                "nodes": nodes,
                "off": gate.off_checks(),
            })  # fmt: skip

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.finished.add(report.nodeid)
        if report.skipped:
            self.skipped_nodes[report.nodeid] = _skip_reason(report)
        for key, value in report.user_properties:
            if key == RECORD_KEY:
                self.records[report.nodeid] = dict(value, nodeid=report.nodeid)
        if report.failed and report.nodeid not in self.records:
            if "fairness" not in report.keywords:
                self.other_failures += 1
                return
            self.unrecorded_failures.setdefault(report.nodeid, _short_error(report))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            if GATE_KEY in self.config.stash:
                gate = self.config.stash[GATE_KEY]
                self.config.workeroutput[METADATA_KEY] = json.dumps(gate.run_metadata())
                self.config.workeroutput[SERVED_KEY] = json.dumps(sorted(gate.served_keys()))
            if self.scope_parts:
                self.config.workeroutput[SCOPE_OUTPUT] = json.dumps(self.scope_parts)
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
        not_run = (
            [nodeid for nodeid in self.selected or () if nodeid not in self.finished] if runs_tests(self.config) else []
        )
        if not self.records and not self.unrecorded_failures and not (self.selected and (interrupted or not_run)):
            return  # not a gate run
        results = self.results(not_run, interrupted)
        self.outcome = results
        if results["verdict"] == "incomplete":
            session.exitstatus = EXIT_INCOMPLETE
        elif session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not self.other_failures:
            session.exitstatus = exit_status(results["verdict"], results["summary"])
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

    def write_annotation_sample(self, path: str, results: Mapping[str, Any], results_path: str | None) -> None:
        """Draw the ``--annotation-sample`` from the run's nTVD cases (answers and extractions read back from its
        cache) and say what to do with it (in the terminal summary); a run that is incomplete or measured no nTVD
        case writes none, saying why."""

        def write(line: str, red: bool = False) -> None:
            self.summary_lines.append((line, red))

        if results["verdict"] == "incomplete":
            write(f"lalm-fairness: no annotation sample written to {path}: the run is incomplete", red=True)
            return
        try:
            sample = get_gate(self.config).annotation_sample(
                results["cases"],
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
        """The corpora's audio warnings, the run's verdict, each cause of unmeasured cases once, and a cache set aside."""
        if hasattr(self.config, "workerinput"):
            return
        metadata = self._metadata()
        for line in audio_warnings(metadata) + list((metadata.get("baseline") or {}).get("notes") or []):
            terminalreporter.write_line(f"lalm-fairness: warning: {line}")
        if self.outcome is None:
            return
        summary, metadata = self.outcome["summary"], self.outcome["metadata"]
        write = terminalreporter.write_line
        write(f"lalm-fairness: verdict {self.outcome['verdict']}: {summary['cases']} cases, {summary['passed']} passed, "
              f"{summary['failed']} failed, {summary['unmeasured']} unmeasured")  # fmt: skip
        scope = self.outcome.get("scope") or {}
        if scope.get("spot_check"):
            write(f"lalm-fairness: SPOT CHECK — {scope['ran']} of {scope['gate_cases']} cases; not a release verdict")
        deviations = []
        if any(case["check"] == "ntvd" for case in self.outcome["cases"]):
            deviations += (metadata.get("vibe") or {}).get("deviations") or []
        deviations += [(case.get("semantics") or {}).get("deviation") for case in self.outcome["cases"]]
        if any(case.get("judge") == RULE_JUDGES for case in self.outcome["cases"]):
            deviations.append(RULE_JUDGES_DEVIATION)
        for deviation in dict.fromkeys(filter(None, deviations)):
            write(f"lalm-fairness: deviation: {deviation}")
        if "incomplete" in self.outcome:
            stopped = self.outcome["incomplete"]
            write(
                f"lalm-fairness: INCOMPLETE, do not release: the run was stopped by {stopped['stopped_by']}; "
                f"{len(stopped['not_run'])} of {stopped['selected']} selected tests did not run"
            )
        causes: dict[tuple, list[dict[str, Any]]] = {}
        for case in self.outcome["cases"]:
            if case["check"] == "error":
                cause = case.get("cause") or {"kind": "internal", "source": None, "message": case["message"]}
                causes.setdefault((cause["kind"], cause["source"] or cause["message"]), []).append(cause)
        for (kind, _), group in causes.items():
            source = f", {group[0]['source']}" if group[0]["source"] else ""
            write(f"  not measured ({kind}{source}), {len(group)} case(s): {group[0]['message']}")
        if metadata.get("cache_set_aside"):
            write(
                f"lalm-fairness: the cache database was damaged; set aside as {metadata['cache_set_aside']} and rebuilt"
            )
        for line, red in self.summary_lines:
            terminalreporter.write_line(line, red=red)

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

    def scope(self) -> tuple[Any, dict[str, dict[str, Any]]]:
        """The run's :class:`~harness.gate.scope.Scope` (None when no gate case was collected) from the parts of
        every process that collected, and each selected node's case."""
        gate: list[tuple[str, str]] = []
        deselected: dict[tuple[str, str], str] = {}
        nodes: dict[str, dict[str, Any]] = {}
        off: list[str] = []
        for part in self.scope_parts:
            off += [name for name in part["off"] if name not in off]
            gate += [tuple(entry) for entry in part["gate"]]
            deselected |= {(check, case_id): reason for check, case_id, reason in part["deselected"]}
            nodes |= part["nodes"]
        if not gate and not nodes:
            return None, nodes
        skipped = {
            (nodes[n]["check"], nodes[n]["id"]): reason for n, reason in self.skipped_nodes.items() if n in nodes
        }
        ran = [(case["check"], case["id"]) for case in nodes.values()]
        return run_scope(gate, ran, deselected, skipped, off), nodes

    def results(self, not_run: Sequence[str] = (), interrupted: bool = False) -> dict[str, Any]:
        scope, nodes = self.scope()
        for nodeid, message in self.unrecorded_failures.items():
            if nodeid not in self.records:
                case = nodes.get(nodeid) or {"id": nodeid.split("[", 1)[-1].rstrip("]")}
                identity = {key: case.get(key) for key in ("model", "corpus", "dimension", "variant")}
                cause = {"kind": "internal", "source": None, "message": message}
                self.records[nodeid] = ErrorRecord(
                    id=case["id"], nodeid=nodeid, message=message, cause=cause, **identity
                ).to_json()
        cases = sorted(self.records.values(), key=lambda record: record["nodeid"])
        metadata = self._metadata()
        verdict, summary = run_outcome(cases, len(not_run), interrupted, spot_check=bool(scope and scope.spot_check))
        results = {
            "schema_version": SCHEMA_VERSION,
            "verdict": verdict,
            "summary": summary,
            **({"scope": scope.to_json()} if scope is not None else {}),
            "metadata": metadata,
            "cases": cases,
        }
        if verdict == "incomplete":
            results["incomplete"] = {
                "stopped_by": "an interruption (Ctrl-C or SIGTERM)"
                if interrupted
                else "-x / --maxfail, before every selected test ran",
                "selected": len(self.selected) if self.selected is not None else None,
                "finished": len(self.selected or ()) - len(not_run),
                "not_run": list(not_run),
            }
        return results

    def _metadata(self) -> dict[str, Any]:
        parts = list(self.worker_metadata)
        if GATE_KEY in self.config.stash:
            parts.append(self.config.stash[GATE_KEY].run_metadata())
        return {
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "package_versions": package_versions(),
            "workers": max(1, len(self.worker_metadata)),
            "imported_caches": self.config.stash.get(IMPORTED_KEY, []),
            **merge_run_metadata(parts, self.config.stash.get(IMPORTED_KEY, [])),
        }


class XdistMetadata:
    """Controller side of pytest-xdist: gathers each worker's run metadata."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        session = self.config.pluginmanager.get_plugin("lalm_fairness_session")
        if session.selected is None:
            session.selected = gate_nodeids(ids)
            if session.selected:
                set_aside_previous_outputs(self.config)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        session = self.config.pluginmanager.get_plugin("lalm_fairness_session")
        if output.get(METADATA_KEY):
            session.worker_metadata.append(json.loads(output[METADATA_KEY]))
        if output.get(SERVED_KEY):
            session.worker_served_keys.update(json.loads(output[SERVED_KEY]))
        if output.get(SETUP_ERROR_OUTPUT):
            session.worker_setup_error = output[SETUP_ERROR_OUTPUT]
        if output.get(SCOPE_OUTPUT) and not session.scope_parts:
            session.scope_parts.extend(json.loads(output[SCOPE_OUTPUT]))


def gate_nodeids(nodeids: Iterable[str]) -> list[str]:
    """The node ids of gate tests (the functions of :mod:`harness.gate_tests`, wherever a gate module collects
    them): what a run selected, to tell a finished run from a stopped one. An xdist controller knows only ids."""
    import importlib
    import pkgutil

    import harness.gate_tests as package

    modules = [
        importlib.import_module(f"{package.__name__}.{info.name}") for info in pkgutil.iter_modules(package.__path__)
    ]
    names = {name for module in modules for name in vars(module) if name.startswith("test_")}
    return [nodeid for nodeid in nodeids if nodeid.rpartition("::")[2].partition("[")[0] in names]


def item_case(item: pytest.Item) -> Case | None:
    """The gate case an item tests (its parametrized :class:`~harness.checks.base.Case`), or None."""
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
