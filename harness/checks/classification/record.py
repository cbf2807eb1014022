"""The results.json record of a BASIS demographic-classification case (BASIS-Bench §3.3)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from harness.checks.basis_common.thresholds import ClassificationThresholds
from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class ClassificationRecord(CaseRecord):
    THRESHOLDS: ClassVar[type[ClassificationThresholds]] = ClassificationThresholds
    """What :attr:`threshold` states, typed (:meth:`ClassificationThresholds.from_record`)."""

    per_label: list[dict[str, Any]]
    confusion: dict[str, dict[str, dict[str, int]]]
    gap: dict[str, Any]
    n_answers: int


RECORD = ClassificationRecord
