"""The results.json record of a BASIS ICAT case (BASIS-Bench §3.1)."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.checks.basis_common.record import ModePayload, ModeRecord
from harness.checks.basis_common.thresholds import IcatThresholds


@dataclasses.dataclass(kw_only=True)
class IcatPayload(ModePayload):
    """What a BASIS ICAT case measured besides its value (§3.1): the pooled stereotype score and ICAT, the share of
    unknown answers, how the answers were read and the stereotype shares."""

    pooled_ss: float | None
    pooled_ss_ci: list[float | None]
    pooled_p: float | None
    pooled_icat: float | None
    unknown_rate: float | None
    answer_rules: dict[str, int]
    stereotype_shares: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Table 9 (S% / AS% per mode and group) and the §3.4 effects on S% per group (:meth:`IcatCheck.shares`)."""


@dataclasses.dataclass(kw_only=True)
class IcatRecord(IcatPayload, ModeRecord):
    threshold: IcatThresholds
    """What the case is judged by: its check's typed thresholds."""


RECORD = IcatRecord
