"""The results.json record of a BASIS personalization case (BASIS-Bench §3.2)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.basis_common.record import ModeRecord


@dataclasses.dataclass(kw_only=True)
class PersonalizationRecord(ModeRecord):
    gap: dict[str, Any]
    sets: list[str]
    stereotype_icat: float | None


RECORD = PersonalizationRecord
