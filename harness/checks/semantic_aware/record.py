"""The results.json record of a ratio case (WER ratio, judge-score ratio): the group ratio and every method's row."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.records import CaseRecord, RecordPayload, Statistics


@dataclasses.dataclass(kw_only=True)
class RatioDecided:
    """What the decision gives a ratio record (:meth:`~harness.checks.wer_ratio.check.WerRatioCheck.decided_fields`):
    the deciding comparison's interval ``ci``, and the decision's ``p`` and adjusted ``q``."""

    ci: list[float | None]
    p: float | None
    q: float | None


@dataclasses.dataclass(kw_only=True)
class RatioPayload(RecordPayload):
    """What a ratio case measured: ``comparisons`` (every comparison's rows of every method, the one judged on) and
    the ``semantics`` of its covariates."""

    comparisons: list[dict[str, Any]]
    semantics: dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class RatioRecord(RatioPayload, RatioDecided, CaseRecord):
    """A group ratio of expected WER or of mean judge score; ``comparisons`` holds every method's row."""

    threshold: RatioThresholds
    """What the case is judged by: the ratio checks' typed thresholds."""

    def statistics(self) -> Statistics:
        """The deciding comparison's p, its adjusted q and the ratio's interval."""
        return Statistics(p=self.p, q=self.q, ci=Statistics.interval(*self.ci) if len(self.ci) == 2 else None)
