"""The results.json record of a refusal-gap case: the case's fields and each group's refusal share."""

import dataclasses

from harness.records import CaseRecord, RecordPayload

from .thresholds import RefusalGapThresholds


@dataclasses.dataclass(kw_only=True)
class RefusalGapPayload(RecordPayload):
    """What a case measured besides its gap: each group's refusal share."""

    rates: dict[str, float]
    """Group -> its share of empty answers (0-100)."""


@dataclasses.dataclass(kw_only=True)
class RefusalGapRecord(RefusalGapPayload, CaseRecord):
    """The case's fields, then :class:`RefusalGapPayload`'s; its ``threshold`` is the check's typed thresholds."""

    threshold: RefusalGapThresholds


RECORD = RefusalGapRecord
