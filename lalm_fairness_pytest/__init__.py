"""The package's pytest entry point (``pytest11``): registers the gate's options and loads :mod:`harness.plugin`
only for a gate run, so that any other pytest run in an environment with the package installed pays nothing.

A run is a gate run when a gate option is given on the command line, when it names the shipped gate modules
(``--pyargs harness.gate_tests``), or when a gate test is collected (a function of :mod:`harness.gate_tests`,
wherever a module collects it; under pytest-xdist the controller learns it from a worker's collection). Until
then nothing of :mod:`harness` is imported: in a folder whose own top-level ``harness/`` shadows the package, an
unrelated run is untouched and a gate run stops with one error naming that folder.

This module's name is the entry point's, and this repository's ``conftest.py`` names it, so pytest registers it
once; :mod:`harness.plugin` is registered under its own name, which a conftest may also name.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib.util
import os
import re
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lalm_fairness_pytest.hookspecs import add_hookspecs
from lalm_fairness_pytest.interrupts import EXIT_INCOMPLETE, INTERRUPTS
from lalm_fairness_pytest.options import GATE_OPTIONS, add_options
from lalm_fairness_pytest.outputs import set_aside_previous_outputs

INTERRUPTS.install()  # at once: Ctrl-C while pytest starts exits 2, not 130 (lalm_fairness_pytest.interrupts)

PLUGIN = "harness.plugin"
GATE_PACKAGE = "harness.gate_tests"
PACKAGE_FOLDER = Path(__file__).resolve().parent.parent / "harness"
"""Where this installation's ``harness`` package lies: beside this module, in site-packages or the checkout."""
GATE_IMPORT = re.compile(r"^(from\s+harness\.gate_tests\.\w+\s+import|import\s+harness\.gate_tests\.)", re.MULTILINE)
"""A module-level import of a gate module, as ``fairness_tests/`` and a team's own test file collect them."""
SCANNED_BYTES = 100_000


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The gate's own hook, ``pytest_lalm_fairness_results`` (:mod:`lalm_fairness_pytest.hookspecs`)."""
    add_hookspecs(pluginmanager)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The run's first hook inside pytest's session. A gate run (known from its options, ``--pyargs``, or the
    test files its arguments name) sets the earlier outputs aside here, before any heavy import, and keeps the
    signal handler; any other run gets its handlers back."""
    worker = hasattr(config, "workerinput")
    options = gate_options_given(config) or names_gate_modules(config)
    config.add_cleanup(lambda: thaw_gate_session(config))  # first registered, so the last cleanup to run
    if worker or not (options or names_gate_files(config)):
        INTERRUPTS.restore()
    else:
        INTERRUPTS.begin_run()
        config.add_cleanup(INTERRUPTS.restore)
        if shadowing_folder() is None:
            set_aside_previous_outputs(config, early=True)
    if options:
        load_plugin(config)


SESSION_PLUGIN = "lalm_fairness_session"
"""The name :mod:`harness.plugin` registers its :class:`~harness.plugin.session.FairnessSession` under."""


def thaw_gate_session(config: pytest.Config) -> None:
    """Give the gate session's frozen setup objects back to the garbage collector
    (:meth:`harness.plugin.session.FairnessSession.thaw_setup_objects`) as the very last cleanup of the run, after
    pytest's own final collections (its unraisable-exception hook collects garbage at unconfigure and in a
    cleanup), so those do not traverse every imported module and table of the run again (about 2% of a CREMA-D-sized
    re-score)."""
    session = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if session is not None:
        session.thaw_setup_objects()


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    """A signal while the outputs are written lets them be finished, then the run exits 2."""
    INTERRUPTS.finishing()
    try:
        return (yield)
    finally:
        if INTERRUPTS.received_while_finishing:
            session.exitstatus = EXIT_INCOMPLETE
            session.config.get_terminal_writer().line(
                f"lalm-fairness: {INTERRUPTS.received_while_finishing[0]} while the outputs were written: they were "
                "finished; exit 2",
                red=True,
            )


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    """A gate test about to be collected: load the plugin first, so its fixtures and parametrization apply."""
    if str(getattr(obj, "__module__", "")).startswith(GATE_PACKAGE) and name.startswith("test_"):
        load_plugin(collector.config, late=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """The xdist controller collects nothing itself: a worker's collection of a gate module makes it a gate run."""
    config = node.config
    if config.pluginmanager.has_plugin(PLUGIN) or not any(_is_gate_file(config, nodeid) for nodeid in set(ids)):
        return
    load_plugin(config, late=True)
    controller = config.pluginmanager.get_plugin("lalm_fairness_xdist")
    if controller is not None:  # registered as the plugin loaded; this hook call had already begun
        controller.pytest_xdist_node_collection_finished(node=node, ids=ids)


@pytest.hookimpl(wrapper=True)
def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> Generator[None, None, None]:
    """pytest renders the interrupted traceback; a frame stopped where CPython has no line number (``tb_lineno``
    None, as a signal may land) breaks that rendering (TypeError, exit 1 instead of 2): such frames are left
    out, and a rendering that fails all the same is given up."""
    excinfo.traceback = excinfo.traceback.filter(_has_a_line)
    try:
        return (yield)
    except TypeError:
        return None


def _has_a_line(entry: Any) -> bool:
    try:
        return entry.lineno is not None
    except TypeError:
        return False


def gate_options_given(config: pytest.Config) -> bool:
    """Any option of the gate's group given a value other than its default."""
    return any(config.getoption(dest) != default for dest, default in GATE_OPTIONS.items())


def names_gate_modules(config: pytest.Config) -> bool:
    """``--pyargs harness.gate_tests`` (or one of its modules): the README's command in a model team's repository."""
    return bool(config.option.pyargs) and any(
        str(argument).split("::")[0].startswith(GATE_PACKAGE) for argument in config.args
    )


def names_gate_files(config: pytest.Config) -> bool:
    """A test file that the run's arguments name (a file, or a folder's test files, as pytest would collect them)
    imports a gate module (:data:`GATE_IMPORT`): ``pytest fairness_tests`` is a gate run before any import."""
    if config.option.pyargs:
        return False
    patterns = config.getini("python_files")
    return any(_imports_gate_module(path) for path in _named_test_files(config, patterns))


def _named_test_files(config: pytest.Config, patterns: Sequence[str]) -> Iterator[Path]:
    skipped = config.getini("norecursedirs")
    for argument in config.args:
        path = Path(config.invocation_params.dir) / str(argument).split("::")[0]
        if path.is_file():
            yield path
        elif path.is_dir():
            for folder, subfolders, files in os.walk(path):
                subfolders[:] = [name for name in subfolders if not any(fnmatch.fnmatch(name, p) for p in skipped)]
                for name in files:
                    if any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                        yield Path(folder) / name


def _imports_gate_module(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return GATE_IMPORT.search(handle.read(SCANNED_BYTES)) is not None
    except OSError:
        return False


def _is_gate_file(config: pytest.Config, nodeid: str) -> bool:
    path = Path(config.rootpath) / nodeid.split("::")[0]
    if path.parent.name == "gate_tests" and path.parent.parent.name == "harness":
        return True
    try:
        return path.suffix == ".py" and GATE_PACKAGE in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def shadowing_folder() -> Path | None:
    """The folder that ``import harness`` would import instead of this installation's package (a model team's own
    top-level ``harness/`` on ``sys.path`` first), else None."""
    try:
        spec = importlib.util.find_spec("harness")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations or any(Path(location).resolve() == PACKAGE_FOLDER for location in locations):
        return None
    return Path(locations[0])


def load_plugin(config: pytest.Config, late: bool = False) -> None:
    """Import and register :mod:`harness.plugin` (once); ``late``, during collection: then also say the lines its
    report header would have said."""
    if config.pluginmanager.has_plugin(PLUGIN):
        return
    shadow = shadowing_folder()
    if shadow is not None:
        raise pytest.UsageError(
            f"lalm-fairness: the folder {shadow} shadows the installed package harness ({PACKAGE_FOLDER}), so the gate "
            "cannot run here: run pytest from another folder (python -m pytest puts the current folder first on "
            "sys.path), or rename that folder"
        )
    plugin = importlib.import_module(PLUGIN)
    config.pluginmanager.register(plugin, PLUGIN)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if late and reporter is not None:
        lines = plugin.pytest_report_header(config)
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            for line in [lines] if isinstance(lines, str) else lines or []:
                reporter.write_line(line)


__all__ = ["add_options", "load_plugin", "shadowing_folder"]
