"""The gate session keeps its setup objects out of the garbage collector's view while the checks run, and gives
them back at the end, collecting less often meanwhile (harness.plugin.session.FairnessSession.freeze_setup_objects)."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from harness.plugin.session import CHECKS_GC_THRESHOLDS, FairnessSession


def test_setup_objects_are_frozen_once_and_thawed_at_the_end():
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    session = FairnessSession(SimpleNamespace())
    try:
        session.freeze_setup_objects()
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.get_threshold() == CHECKS_GC_THRESHOLDS
        session.freeze_setup_objects()  # a second call changes nothing
        assert gc.get_freeze_count() == frozen and gc.get_threshold() == CHECKS_GC_THRESHOLDS
    finally:
        session.thaw_setup_objects()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
    session.thaw_setup_objects()  # nothing frozen: nothing to do
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


def test_the_runs_objects_are_frozen_before_pytests_last_collections_and_thawed_by_the_last_cleanup():
    """pytest's unraisable-exception hook collects garbage twice as the run ends (at unconfigure and in a cleanup):
    the session freezes what the run left alive at unconfigure, and the entry point's first-registered (so last
    run) cleanup thaws everything and restores the thresholds."""
    from lalm_fairness_pytest import SESSION_PLUGIN, thaw_gate_session

    thresholds = gc.get_threshold()
    session = FairnessSession(SimpleNamespace())
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin={SESSION_PLUGIN: session}.get))
    try:
        session.pytest_unconfigure()  # nothing frozen at setup: nothing to freeze
        assert gc.get_freeze_count() == 0
        session.freeze_setup_objects()
        frozen = gc.get_freeze_count()
        left_by_the_run = [[index] for index in range(1000)]
        session.pytest_unconfigure()
        assert gc.get_freeze_count() >= frozen + len(left_by_the_run)
    finally:
        thaw_gate_session(config)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
    thaw_gate_session(SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: None)))  # no session
