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
