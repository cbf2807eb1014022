"""The results.json record of an nTVD case (VIBE §II-D)."""

from __future__ import annotations

import dataclasses

from harness.checks.ntvd.thresholds import NtvdThresholds
from harness.core.json_records import JsonRecord
from harness.records import AttributeDistribution, CaseRecord, RecordPayload, Statistics


@dataclasses.dataclass(frozen=True)
class CanonicalNtvd(JsonRecord):
    """nTVD after merging near-duplicate values by embedding similarity (VIBE §IV, fragmentation): the score, the
    embedder, and each merge as ``[attribute, value, canonical value]``."""

    ntvd: float | None
    embedder: str
    merges: list[list[str]]


@dataclasses.dataclass(frozen=True)
class ExampleSide(JsonRecord):
    """One side of an example pair: the speaker's ``group``, ``speaker`` and extracted ``value``; what the model was
    given besides the audio (``heard``, a transcript; ``voice``, a voice description; None where none) and its
    ``answer``."""

    group: str
    speaker: str
    value: str
    heard: str | None
    voice: str | None
    answer: str


@dataclasses.dataclass(frozen=True)
class ExamplePair(JsonRecord):
    """Two answers to the same content (``content_id``) from speakers of two groups whose values of ``attribute``
    differ: the qualitative evidence behind a score (VIBE Fig. 1)."""

    attribute: str
    content_id: str
    sides: list[ExampleSide]


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
    most_divergent: AttributeDistribution | None
    tau_sensitivity: dict[str, float | None]
    refusal_ntvd: float | None
    collapsed_attributes: list[str]
    minimum_detectable_ntvd: dict[str, float | None]
    extractor: str
    canonical: CanonicalNtvd | None
    example_pair: ExamplePair | None


@dataclasses.dataclass(kw_only=True)
class NtvdRecord(NtvdPayload, CaseRecord):
    """The results.json record of an nTVD case: the case's fields, then :class:`NtvdPayload`'s."""

    threshold: NtvdThresholds
    """What the case is judged by: the nTVD check's typed thresholds."""

    def figure_distribution(self) -> AttributeDistribution | None:
        """The most divergent attribute's P_g(v), drawn under a failing case."""
        return self.most_divergent

    def statistics(self) -> Statistics:
        """The permutation p and VIBE's BH q (reported; the gate's adjusted p decides)."""
        return Statistics(p=self.p, q=self.q)


RECORD = NtvdRecord
