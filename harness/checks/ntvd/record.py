"""The results.json record of an nTVD case (VIBE §II-D)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class NtvdRecord(CaseRecord):
    task: str
    p: float | None
    q: float | None
    n_speakers: int
    n_groups: int
    n_permutations: int
    seed: int
    per_attribute: dict[str, float | None]
    dropped_attributes: list[str]
    single_group_attributes: list[str] = dataclasses.field(default_factory=list)
    groups_left_out: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    q_family: int | None = None
    protocol: str = "self-report"
    cut_answers: int | None = None
    answer_status: dict[str, int]
    most_divergent: dict[str, Any] | None
    tau_sensitivity: dict[str, float | None]
    refusal_ntvd: float | None
    collapsed_attributes: list[str]
    minimum_detectable_ntvd: dict[str, float | None]
    extractor: str
    canonical: dict[str, Any] | None
    example_pair: dict[str, Any] | None


RECORD = NtvdRecord
