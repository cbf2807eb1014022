"""The results.json record of a BASIS demographic-classification case (BASIS-Bench §3.3)."""

from __future__ import annotations

import dataclasses

from harness.checks.basis_common.record import GroupGap
from harness.checks.basis_common.thresholds import ClassificationThresholds
from harness.core.json_records import JsonRecord
from harness.records import CaseRecord, RecordPayload, Statistics


@dataclasses.dataclass(frozen=True)
class LabelAccuracy(JsonRecord):
    """Table 8's cell: of one item set's ``n`` items whose true label is ``label``, the ``correct`` ones and the
    ``accuracy`` in percent (the label's recall; None where it has no item)."""

    set: str
    label: str
    n: int
    correct: int
    accuracy: float | None


@dataclasses.dataclass(kw_only=True)
class ClassificationPayload(RecordPayload):
    """What a BASIS classification case measured besides its value (§3.3): accuracy per label, the confusion
    table, the gap and the answers."""

    per_label: list[LabelAccuracy]
    confusion: dict[str, dict[str, dict[str, int]]]
    gap: GroupGap
    n_answers: int


@dataclasses.dataclass(kw_only=True)
class ClassificationRecord(ClassificationPayload, CaseRecord):
    threshold: ClassificationThresholds
    """What the case is judged by: its check's typed thresholds."""

    def statistics(self) -> Statistics:
        """The best-worst gap and its interval."""
        return self.gap.statistics()


RECORD = ClassificationRecord
