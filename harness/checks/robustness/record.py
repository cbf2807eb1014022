"""The results.json record of a BASIS robustness case (BASIS-Bench §3.4: ASR and spoken QA by group)."""

from __future__ import annotations

import dataclasses

from harness.checks.basis_common.record import GroupGap
from harness.checks.basis_common.thresholds import RobustnessThresholds
from harness.core.json_records import JsonRecord
from harness.records import CaseRecord, RecordPayload, Statistics


@dataclasses.dataclass(frozen=True)
class DatasetScore(JsonRecord):
    """One content data set's score (the mean over its groups) for one dimension and task (``asr``, ``sqa``)."""

    set: str
    dimension: str
    score: float | None
    task: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class GroupScore(JsonRecord):
    """One group's score: the mean over the ``n_datasets`` data sets holding it of its mean score there, over ``n``
    answers (:func:`harness.metrics.basis.per_dataset_scores`). A record of results.json schema 1 stated ``correct``
    and no ``n_datasets``; older records state the counts as floats (``2.0``), kept as they are."""

    group: str
    n_datasets: float | None = None
    n: float
    correct: float | None = None
    score: float | None

    OMITTED_WHEN_NONE = ("n_datasets", "correct")


@dataclasses.dataclass(frozen=True)
class SetScore(JsonRecord):
    """One data set's score: the mean over its ``n_groups`` groups, over ``n`` answers."""

    set: str
    n_groups: float
    n: float
    score: float | None


@dataclasses.dataclass(frozen=True)
class CellScore(JsonRecord):
    """One (data set, group) cell, ``cell`` = ``set/group``: its ``n`` answers' mean score."""

    cell: str
    n: float
    score: float | None


@dataclasses.dataclass(frozen=True)
class ContentScore(JsonRecord):
    """The model's content-based score (BASIS-Bench §3.1, Table 7): ``value``, the mean of the ``asr`` and ``sqa``
    means, each data set's score, and the tasks that could not be measured. Empty (all None) in a record written
    before the score was recorded."""

    value: float | None = None
    asr: float | None = None
    sqa: float | None = None
    per_dataset: list[DatasetScore] = dataclasses.field(default_factory=list)
    not_measured: list[str] = dataclasses.field(default_factory=list)

    @property
    def recorded(self) -> bool:
        """Whether the record states a score (one written before the score was recorded states none)."""
        return self.value is not None or bool(self.per_dataset)


@dataclasses.dataclass(kw_only=True)
class RobustnessPayload(RecordPayload):
    """What a BASIS robustness case measured besides its value (§3.5): the task, the scores per group, data set
    and cell, the gap, the content-based score and the judge."""

    task: str
    per_group: list[GroupScore]
    gap: GroupGap
    per_dataset: list[SetScore] = dataclasses.field(default_factory=list)
    """Per item set: its groups, answers and score (the mean over its groups), BASIS-Bench Tables 8 and 10."""
    per_cell: list[CellScore] = dataclasses.field(default_factory=list)
    """Per (item set, group): answers and score (``cell`` is ``set/group``)."""
    content_score: ContentScore = dataclasses.field(default_factory=ContentScore)
    """The model's content-based score (Table 7): ``value``, the ``asr`` and ``sqa`` means, ``per_dataset``."""
    judge: str = "rules"
    """Who judged the open answers: ``rules`` (the offline rule judges), an LLM judge's spec and fingerprint
    (``--basis-judge``), or ``none`` when no answer needed one (multiple choice, WER)."""


@dataclasses.dataclass(kw_only=True)
class RobustnessRecord(RobustnessPayload, CaseRecord):
    threshold: RobustnessThresholds
    """What the case is judged by: its check's typed thresholds."""

    def statistics(self) -> Statistics:
        """The best-worst gap and its interval."""
        return self.gap.statistics()


RECORD = RobustnessRecord
