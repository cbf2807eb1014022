"""What the records of the BASIS checks asked in one evaluation mode share."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.records import CaseRecord, RecordPayload


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
