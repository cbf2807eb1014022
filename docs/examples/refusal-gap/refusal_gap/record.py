"""The results.json record of a refusal-gap case: the case's fields and each group's refusal share."""

import dataclasses

from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class RefusalGapRecord(CaseRecord):
    rates: dict[str, float]
    """Group -> its share of empty answers (0-100)."""


RECORD = RefusalGapRecord
