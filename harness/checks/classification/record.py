"""The results.json record of a BASIS demographic-classification case (BASIS-Bench §3.3)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class ClassificationRecord(CaseRecord):
    per_label: list[dict[str, Any]]
    confusion: dict[str, dict[str, dict[str, int]]]
    gap: dict[str, Any]
    n_answers: int


RECORD = ClassificationRecord
