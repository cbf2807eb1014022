"""The results.json record of a BASIS personalization case (BASIS-Bench §3.2)."""

from __future__ import annotations

import dataclasses

from harness.checks.basis_common.record import GroupGap, ModePayload, ModeRecord
from harness.checks.basis_common.thresholds import PersonalizationThresholds
from harness.core.json_records import JsonRecord
from harness.records import Statistics


@dataclasses.dataclass(frozen=True)
class GroupAccuracy(JsonRecord):
    """One group's personalization accuracy in one mode: of its ``n`` answers, the ``correct`` ones, the
    ``accuracy`` in percent and the percent of answers naming no option (``unknown_rate``; a record written before
    issue 58 states none)."""

    group: str
    n: float
    correct: float
    accuracy: float | None
    unknown_rate: float | None = None

    OMITTED_WHEN_NONE = ("unknown_rate",)


@dataclasses.dataclass(frozen=True)
class SetAccuracy(JsonRecord):
    """Table 10's cell: one item set's accuracy in percent for one group, over its ``n`` answers."""

    set: str
    group: str
    n: int
    accuracy: float


@dataclasses.dataclass(kw_only=True)
class PersonalizationPayload(ModePayload):
    """What a BASIS personalization case measured besides its value (§3.2): the accuracy gap, the judge, the
    item sets, the same model's ICAT and the accuracy per set."""

    per_group: list[GroupAccuracy]
    gap: GroupGap
    judge: str = "rules"
    """Who judged the open answers: ``rules`` (the offline rule judges), an LLM judge's spec and fingerprint
    (``--basis-judge``), or ``none`` when no answer needed one (multiple choice, WER)."""
    sets: list[str]
    stereotype_icat: float | None
    """The same model's mean ICAT on the dimension in the same mode (speech-implicit and speech-explicit: Figure 2)."""
    per_set: list[SetAccuracy] = dataclasses.field(default_factory=list)
    """Accuracy per item set and group (``set``, ``group``, ``n``, ``accuracy``): Table 10."""


@dataclasses.dataclass(kw_only=True)
class PersonalizationRecord(PersonalizationPayload, ModeRecord):
    threshold: PersonalizationThresholds
    """What the case is judged by: its check's typed thresholds."""

    def statistics(self) -> Statistics:
        """The best-worst gap and its interval."""
        return self.gap.statistics()


RECORD = PersonalizationRecord
