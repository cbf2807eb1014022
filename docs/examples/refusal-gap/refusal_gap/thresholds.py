"""The ``refusal_gap`` section of thresholds.yaml, typed: the bar of the gap, in points."""

import dataclasses

from harness.thresholds import UPPER_BOUND, SectionThresholds, between, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class RefusalGapThresholds(SectionThresholds):
    """``max_gap``: how far apart (points) two groups' shares of empty answers may lie before the case fails."""

    max_gap: float = setting((int, float), 50.0, between(0, 100), bound=UPPER_BOUND, measure="gap")
