"""What the records of the BASIS checks asked in one evaluation mode share."""

from __future__ import annotations

import dataclasses

from harness.core.json_records import JsonRecord
from harness.records import CaseRecord, RecordPayload, Statistics

GAP_INTERVAL = "two-way speaker x item bootstrap"
"""How a BASIS gap's interval is estimated (:class:`GroupGap`)."""


@dataclasses.dataclass(frozen=True)
class GroupGap(JsonRecord):
    """The best-worst group gap of a BASIS case (BASIS-Bench §3.5), :class:`harness.metrics.crossed.CrossedGap` as
    its record states it: the contrast ``value`` of the ``best`` group less the ``worst`` in points, its 95% interval
    (``ci_low``, ``ci_high``; None where not ``estimable``, and ``reason`` why), its ``p`` and how the ``interval`` was
    estimated. A gap a test wrote without the last four reads with their defaults."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    best: str
    worst: str
    p: float | None = None
    estimable: bool = True

    def statistics(self) -> Statistics:
        """The gap and its interval, as the record's :class:`~harness.records.Statistics`."""
        return Statistics(gap=self.value, gap_ci=Statistics.interval(self.ci_low, self.ci_high))

    reason: str | None = None
    interval: str = GAP_INTERVAL


@dataclasses.dataclass(frozen=True)
class ModeEstimate(JsonRecord):
    """The mean over groups in one evaluation mode, with its 95% speaker-cluster bootstrap interval; ``estimable``
    where a writer stated it."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    estimable: bool | None = None

    OMITTED_WHEN_NONE = ("estimable",)


@dataclasses.dataclass(frozen=True)
class ModeEffect(JsonRecord):
    """One §3.4 mode effect: the ``minuend`` mode's mean less the ``subtrahend``'s, with its 95% interval."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    minuend: str
    subtrahend: str


@dataclasses.dataclass(frozen=True)
class ModeEffects(JsonRecord):
    """The BASIS-Bench §3.4 mode effects of one model and dimension (:func:`harness.metrics.basis.mode_effects`):
    the ``metric``, the bootstrap (``n_boot`` resamples of ``n_speakers`` speakers at ``level``), the estimate per
    mode and each effect (backbone, interactions, perception gap)."""

    metric: str
    n_boot: int
    level: float
    n_speakers: int
    per_mode: dict[str, ModeEstimate]
    effects: dict[str, ModeEffect]


@dataclasses.dataclass(kw_only=True)
class ModePayload(RecordPayload):
    """A BASIS case asked in one evaluation mode: per-group results and the §3.4 mode effects of its dimension."""

    mode: str
    per_group: list[JsonRecord]
    """Each group's row, of the row class its check's record declares (ICAT's, personalization's)."""
    n_answers: int
    n_speakers: int
    mode_effects: ModeEffects


@dataclasses.dataclass(kw_only=True)
class ModeRecord(ModePayload, CaseRecord):
    """The record of a BASIS case asked in one mode: the case's fields, then :class:`ModePayload`'s."""
