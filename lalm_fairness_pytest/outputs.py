"""Where a gate run's outputs go, and the earlier outputs at those paths set aside before anything else happens.

Light on purpose (nothing of :mod:`harness` is imported until a lock is taken, and then only
:mod:`harness.core.files`): the entry point calls :func:`set_aside_previous_outputs` from its first hook of a run
known to be a gate run, before the plugin's heavy imports, so that a run stopped at any moment (Ctrl-C while
pytest starts, SIGKILL) never leaves an earlier run's verdict at the paths this run writes (issue 59, item 2).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

OUTPUT_OPTIONS = ("--results-json", "--report", "--summary-md")
# The defaults, in the folder pytest runs in, are checked only when written: a run of other tests never needs them.
OUTPUT_DEFAULTS = {"--results-json": "results.json", "--report": "report.html"}
PREVIOUS_SUFFIX = ".previous"
SET_ASIDE_KEY = pytest.StashKey[bool]()
RUN_LOCK_KEY = pytest.StashKey[contextlib.ExitStack]()
REFUSED_KEY = pytest.StashKey[str]()


def output_path(config: pytest.Config, option: str) -> str | None:
    """Where an output goes: the path given (relative to the working folder), else its default name in the
    rootdir, as the thresholds file and the cache are; ``''`` writes none."""
    value = config.getoption(option)
    if value is None and option in OUTPUT_DEFAULTS:
        return str(Path(config.rootpath) / OUTPUT_DEFAULTS[option])
    return value or None


def runs_tests(config: pytest.Config) -> bool:
    """False for ``--collect-only``, ``--setup-only``, ``--setup-plan`` and ``--plan``: runs that run no test by design."""
    return not (
        config.option.collectonly or config.option.setuponly or config.option.setupplan or config.getoption("--plan")
    )


def set_aside_previous_outputs(config: pytest.Config, *, early: bool = False) -> None:
    """Once a run is known to be a gate run, move an output that an earlier run left at this run's paths to
    ``<file>.previous`` (the ``--baseline`` file excepted: it is read, then replaced at the end), so that whatever
    stops this run, no file there is mistaken for its result. ``--export-cache`` and ``--junitxml`` are among
    them. A run that runs no test (``--collect-only``) moves nothing.

    ``early``: called from the entry point's first hook, before the plugin is imported. Where the results folder
    does not exist yet or cannot be locked for a reason other than another run holding it, nothing is done now
    (no earlier output can be there, or the plugin's checks of the outputs will say why); the plugin's call
    does it then."""
    if config.stash.get(SET_ASIDE_KEY, False) or not runs_tests(config):
        return
    if early and not _lockable(config):
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


def _lockable(config: pytest.Config) -> bool:
    results = output_path(config, "--results-json") or output_path(config, "--report")
    if not results:
        return True
    folder = Path(results).parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def hold_run_lock(config: pytest.Config) -> None:
    """One gate run at a time per results.json: the run holds ``<results.json>.lock`` (holding its pid) until it
    ends. A second run on the same path stops before its first case, moving and writing nothing, with one
    ``ERROR:`` line naming the holder (exit 4); two runs no longer overwrite each other's results silently."""
    from harness.core.files import LockHeld, file_lock

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
