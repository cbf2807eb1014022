"""The results.json record of an nTVD case (VIBE §II-D)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.ntvd.thresholds import NtvdThresholds
from harness.records import CaseRecord, RecordPayload


@dataclasses.dataclass(kw_only=True)
class NtvdPayload(RecordPayload):
    """What an nTVD case measured besides its value (VIBE §II-D): p, BH q and its family, the speakers, groups and
    permutations, nTVD per attribute and what the authors' rule left out, the answers' statuses, the diagnostics
    (tau sensitivity, refusal nTVD, collapsed attributes, minimum detectable nTVD, merged values) and an example
    pair."""

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


@dataclasses.dataclass(kw_only=True)
class NtvdRecord(NtvdPayload, CaseRecord):
    """The results.json record of an nTVD case: the case's fields, then :class:`NtvdPayload`'s."""

    threshold: NtvdThresholds
    """What the case is judged by: the nTVD check's typed thresholds."""


RECORD = NtvdRecord
