"""pytest plugin: options, hooks, fixtures and the stash; the gate's cases parametrized and their verdicts recorded.

It wires pytest to :mod:`harness.gate` and computes nothing itself: :mod:`harness.plugin.configuration` builds
the gate from the options and prepares the outputs; :mod:`harness.plugin.session` feeds the run's records to a
:class:`harness.gate.run.RunAssembly`, which makes the :class:`harness.results.RunResults` handed to the gate's
own hook, ``pytest_lalm_fairness_results`` (:mod:`lalm_fairness_pytest.hookspecs`), and written at the end. A
setup problem (a bad spec, option, corpus, thresholds file or cache folder) stops the run before any case with one
``ERROR:`` line and pytest's usage-error status; a case that cannot be measured is a pytest *error* at setup,
recorded with its cause; the exit status is the run's (:mod:`harness.gate.outcomes`). Verdict records travel from
the test to the session through ``user_properties``, which pytest-xdist carries from workers to the controller;
run metadata (model calls, fingerprints) travels through ``workeroutput``. Only the controller (or a run without
xdist) writes the outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from harness.checks import all_checks
from harness.checks.base import Verdict
from harness.checks.case import Case
from harness.gate import Gate, Unmeasured
from harness.models.placement import GPU_MARKER, gpu_skip_reason, xdist_group_name
from harness.plugin.configuration import (
    SETUP_ERROR_KEY,
    assign_gpus_of_worker,
    attach_progress_terminal,
    cache_dir,
    check_optional_extras,
    get_gate,
    import_caches,
    interrupt_on_signals,
    prepare_outputs,
    reraise_a_lost_interrupt,
    thresholds_path,
    unused_parent_thresholds,
)
from harness.plugin.junit import AtomicJunitXml
from harness.plugin.plan import PlanSession
from harness.plugin.session import RECORD_KEY, FairnessSession, XdistMetadata
from harness.plugin.xdist_groups import register_xdist_groups
from lalm_fairness_pytest.hookspecs import add_hookspecs
from lalm_fairness_pytest.options import add_options
from lalm_fairness_pytest.outputs import OUTPUT_OPTIONS, PREVIOUS_SUFFIX, output_path, set_aside_previous_outputs

__all__ = ["PREVIOUS_SUFFIX", "FairnessSession", "skip_gpu_items"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The gate's own hook, ``pytest_lalm_fairness_results`` (:mod:`lalm_fairness_pytest.hookspecs`)."""
    add_hookspecs(pluginmanager)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fairness: a voice-induced bias gate case")
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped with a reason without one")
    if not hasattr(config, "workerinput"):
        check_optional_extras(config)  # before anything is written
    assign_gpus_of_worker(config)
    if not hasattr(config, "workerinput"):
        prepare_outputs(config)
        interrupt_on_signals(config)
        import_caches(config)
        attach_progress_terminal(config)
    config.pluginmanager.register(FairnessSession(config), "lalm_fairness_session")
    if config.getoption("--plan") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(PlanSession(config, get_gate), "lalm_fairness_plan")
    config.pluginmanager.register(AtomicJunitXml(config), "lalm_fairness_atomic_junit")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistMetadata(config), "lalm_fairness_xdist")
    register_xdist_groups(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    reraise_a_lost_interrupt(item.config)


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
