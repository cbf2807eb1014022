"""The results.json record of a BASIS ICAT case (BASIS-Bench §3.1)."""

from __future__ import annotations

import dataclasses

from harness.checks.basis_common.record import ModeRecord


@dataclasses.dataclass(kw_only=True)
class IcatRecord(ModeRecord):
    pooled_ss: float | None
    pooled_ss_ci: list[float | None]
    pooled_p: float | None
    pooled_icat: float | None
    unknown_rate: float | None
    answer_rules: dict[str, int]


RECORD = IcatRecord
