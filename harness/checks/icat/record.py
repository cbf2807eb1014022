"""The results.json record of a BASIS ICAT case (BASIS-Bench §3.1)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from harness.checks.basis_common.record import ModePayload, ModeRecord
from harness.checks.basis_common.thresholds import IcatThresholds
from harness.core.json_records import JsonRecord


@dataclasses.dataclass(frozen=True)
class GroupShares(JsonRecord):
    """Table 9's cell pair of one group in one mode: of its ``n`` answers, the percent choosing the group's
    stereotype (S%) and its anti-stereotype (AS%)."""

    n: int
    stereotype: float
    anti_stereotype: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class IcatGroupRow(JsonRecord):
    """One group's ICAT (BASIS-Bench §3.1, :func:`harness.metrics.basis.stereoset_scores`): of its ``n`` answers, how
    many chose the ``stereotype``, the ``anti_stereotype`` (JSON ``anti-stereotype``), the ``unrelated`` option or
    none (``unknown``); ss = 100 x stereotype / (stereotype + anti-stereotype), lms = 100 x meaningful / n,
    icat = lms x min(ss, 100 - ss) / 50, and the ``unknown_rate`` (percent); ``left_out``: its answers with no
    meaningful option, in words (None when none; not written in a record made before it)."""

    JSON_KEYS: ClassVar[dict[str, str]] = {"anti_stereotype": "anti-stereotype"}
    WRITTEN_AS_READ: ClassVar[tuple[str, ...]] = ("left_out",)

    group: str
    n: float
    stereotype: float
    anti_stereotype: float
    unrelated: float
    unknown: float
    ss: float | None
    lms: float | None
    icat: float | None
    unknown_rate: float | None
    left_out: str | None = None


@dataclasses.dataclass(frozen=True)
class ShareChange(JsonRecord):
    """The change in one group's S% between two modes, with its paired two-way speaker x item bootstrap interval
    and p (None where not ``estimable``, and ``reason`` why)."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    estimable: bool
    reason: str | None


@dataclasses.dataclass(frozen=True)
class ShareEffect(JsonRecord):
    """One §3.4 effect on the stereotype shares: ``minuend`` mode less ``subtrahend`` mode, per group."""

    minuend: str
    subtrahend: str
    per_group: dict[str, ShareChange]


@dataclasses.dataclass(frozen=True)
class StereotypeShares(JsonRecord):
    """Table 9 (S% / AS% per mode and group) and the §3.4 effects on S% per group (:meth:`IcatCheck.shares`), with
    what they measure, how the intervals are estimated and the resamples. Empty in a record written before the
    shares were recorded."""

    measure: str = ""
    interval: str = ""
    n_boot: int = 0
    per_mode: dict[str, dict[str, GroupShares]] = dataclasses.field(default_factory=dict)
    effects: dict[str, ShareEffect] = dataclasses.field(default_factory=dict)

    @property
    def recorded(self) -> bool:
        """Whether the record states the shares (one written before they were recorded states none)."""
        return bool(self.per_mode)


@dataclasses.dataclass(kw_only=True)
class IcatPayload(ModePayload):
    """What a BASIS ICAT case measured besides its value (§3.1): the pooled stereotype score and ICAT, the share of
    unknown answers, how the answers were read and the stereotype shares."""

    per_group: list[IcatGroupRow]
    pooled_ss: float | None
    pooled_ss_ci: list[float | None]
    pooled_p: float | None
    pooled_icat: float | None
    unknown_rate: float | None
    answer_rules: dict[str, int]
    stereotype_shares: StereotypeShares = dataclasses.field(default_factory=StereotypeShares)
    """Table 9 (S% / AS% per mode and group) and the §3.4 effects on S% per group (:meth:`IcatCheck.shares`)."""


@dataclasses.dataclass(kw_only=True)
class IcatRecord(IcatPayload, ModeRecord):
    threshold: IcatThresholds
    """What the case is judged by: its check's typed thresholds."""


RECORD = IcatRecord
