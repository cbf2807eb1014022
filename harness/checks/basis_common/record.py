"""What the records of the BASIS checks asked in one evaluation mode share."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.core.json_records import JsonRecord
from harness.records import CaseRecord, RecordPayload

GAP_INTERVAL = "two-way speaker x item bootstrap"
"""How a BASIS gap's interval is estimated (:class:`GroupGap`)."""


@dataclasses.dataclass(frozen=True)
class GroupGap(JsonRecord):
    """The best-worst group gap of a BASIS case (BASIS-Bench §3.5), :class:`harness.metrics.crossed.CrossedGap` as
    its record states it: the contrast ``value`` of the ``best`` group less the ``worst`` in points, its 95% interval
    (``ci_low``, ``ci_high``; None where not ``estimable``, and ``reason`` why), its ``p`` and how the ``interval`` was
    estimated. A gap a test wrote without the last four reads with their defaults."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    best: str
    worst: str
    p: float | None = None
    estimable: bool = True
    reason: str | None = None
    interval: str = GAP_INTERVAL


@dataclasses.dataclass(kw_only=True)
class ModePayload(RecordPayload):
    """A BASIS case asked in one evaluation mode: per-group results and the §3.4 mode effects of its dimension."""

    mode: str
    per_group: list[dict[str, Any]]
    n_answers: int
    n_speakers: int
    mode_effects: dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class ModeRecord(ModePayload, CaseRecord):
    """The record of a BASIS case asked in one mode: the case's fields, then :class:`ModePayload`'s."""
