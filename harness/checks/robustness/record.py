"""The results.json record of a BASIS robustness case (BASIS-Bench §3.4: ASR and spoken QA by group)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class RobustnessRecord(CaseRecord):
    task: str
    per_group: list[dict[str, Any]]
    gap: dict[str, Any]
    judge: str = "rules"
    """Who judged the open answers: ``rules`` (the offline rule judges), an LLM judge's spec and fingerprint
    (``--basis-judge``), or ``none`` when no answer needed one (multiple choice, WER)."""


RECORD = RobustnessRecord
