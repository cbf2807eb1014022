"""The results.json record of a ratio case (WER ratio, judge-score ratio): the group ratio and every method's row."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.records import CaseRecord


@dataclasses.dataclass(kw_only=True)
class RatioRecord(CaseRecord):
    """A group ratio of expected WER or of mean judge score; ``comparisons`` holds every method's row."""

    ci: list[float | None]
    p: float | None
    q: float | None
    comparisons: list[dict[str, Any]]
    semantics: dict[str, Any]
