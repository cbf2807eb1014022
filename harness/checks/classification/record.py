"""The results.json record of a BASIS demographic-classification case (BASIS-Bench §3.3)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.basis_common.record import GroupGap
from harness.checks.basis_common.thresholds import ClassificationThresholds
from harness.records import CaseRecord, RecordPayload


@dataclasses.dataclass(kw_only=True)
class ClassificationPayload(RecordPayload):
    """What a BASIS classification case measured besides its value (§3.3): accuracy per label, the confusion
    table, the gap and the answers."""

    per_label: list[dict[str, Any]]
    confusion: dict[str, dict[str, dict[str, int]]]
    gap: GroupGap
    n_answers: int


@dataclasses.dataclass(kw_only=True)
class ClassificationRecord(ClassificationPayload, CaseRecord):
    threshold: ClassificationThresholds
    """What the case is judged by: its check's typed thresholds."""


RECORD = ClassificationRecord
