"""The view of a check: how the report shows its records (title, template, first-screen words, margins).

A check folder's ``view.py`` defines ``VIEW``, a :class:`CheckView`. A view sees only the check's typed
records, read back from results.json (never the gate, the run context or a model), so a report renders from
results.json alone. Its template lies in the check's folder and reads the context that :attr:`CheckView.context`
makes; shared templates of a family (BASIS, the ratio checks) live in the family's shared folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

Records = Sequence[Any]


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckView:
    """``title`` heads the check's report section, drawn by ``template`` (a file of the check's folder) from
    ``context(records)``; ``label`` names the check on the first screen.

    The first screen's headline and margin of a case with a ``decision`` are generic
    (:func:`harness.report.summary.decided_headline`, :func:`harness.report.summary.margin_parts`) and ask the
    view three things of a record: ``magnitude_rule(record)``, the effect a case must exceed, in words (e.g. "nTVD >
    20", from the record's thresholds, typed by the check's :class:`~harness.thresholds.SectionThresholds`);
    ``magnitude_margin(record, estimate)``, how far the deciding estimate lies inside that effect as a share of it;
    and how to print an estimate (``estimate_digits``, ``estimate_unit``).

    Records written before results.json schema 2 (no ``decision``) are worded by ``legacy_headline`` and measured
    by ``legacy_margin`` where a check had such records; a check without them leaves both out, and
    :meth:`headline_without_decision` and :meth:`margin_without_decision` word such a record from its value and
    its magnitude rule."""

    title: str
    label: str
    template: str
    context: Callable[[Records], dict[str, Any]]
    magnitude_rule: Callable[[Any], str]
    magnitude_margin: Callable[[Any, float], float | None]
    legacy_headline: Callable[[Any], dict[str, str]] | None = None
    legacy_margin: Callable[[Any], float | None] | None = None
    estimate_digits: int = 1
    estimate_unit: str = ""

    def headline_without_decision(self, record: Any) -> dict[str, str]:
        """The first-screen headline of a record without a ``decision``: ``legacy_headline``, else the value and
        the magnitude rule."""
        if self.legacy_headline is not None:
            return self.legacy_headline(record)
        value = "n/a" if record.value is None else f"{record.value:.{self.estimate_digits}f}{self.estimate_unit}"
        return {"value": f"{self.label} {value}", "threshold": self.magnitude_rule(record), "uncertainty": "–"}

    def margin_without_decision(self, record: Any) -> float | None:
        """How far a record without a ``decision`` lies from failing: ``legacy_margin``, else the magnitude margin of
        its value."""
        if self.legacy_margin is not None:
            return self.legacy_margin(record)
        return None if record.value is None else self.magnitude_margin(record, record.value)
