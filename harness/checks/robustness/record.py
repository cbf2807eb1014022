"""The results.json record of a BASIS robustness case (BASIS-Bench §3.4: ASR and spoken QA by group)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.basis_common.record import GroupGap
from harness.checks.basis_common.thresholds import RobustnessThresholds
from harness.records import CaseRecord, RecordPayload


@dataclasses.dataclass(kw_only=True)
class RobustnessPayload(RecordPayload):
    """What a BASIS robustness case measured besides its value (§3.5): the task, the scores per group, data set
    and cell, the gap, the content-based score and the judge."""

    task: str
    per_group: list[dict[str, Any]]
    gap: GroupGap
    per_dataset: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Per item set: its groups, answers and score (the mean over its groups), BASIS-Bench Tables 8 and 10."""
    per_cell: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Per (item set, group): answers and score (``cell`` is ``set/group``)."""
    content_score: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The model's content-based score (Table 7): ``value``, the ``asr`` and ``sqa`` means, ``per_dataset``."""
    judge: str = "rules"
    """Who judged the open answers: ``rules`` (the offline rule judges), an LLM judge's spec and fingerprint
    (``--basis-judge``), or ``none`` when no answer needed one (multiple choice, WER)."""


@dataclasses.dataclass(kw_only=True)
class RobustnessRecord(RobustnessPayload, CaseRecord):
    threshold: RobustnessThresholds
    """What the case is judged by: its check's typed thresholds."""


RECORD = RobustnessRecord
