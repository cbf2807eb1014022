"""The view of a check: how the report shows its records (title, template, first-screen words, margins).

A check folder's ``view.py`` defines ``VIEW``, a :class:`CheckView`. A view sees only the check's typed
records, read back from results.json (never the gate, the run context or a model), so a report renders from
results.json alone. Its template lies in the check's folder and reads the context that :attr:`CheckView.context`
makes; shared templates of a family (BASIS, the ratio checks) live in the family's shared folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Records = Sequence[Any]


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckView:
    """``title`` heads the check's report section, drawn by ``template`` (a file of the check's folder) from
    ``context(records)``; ``label`` names the check on the first screen.

    The first screen's headline and margin of a case with a ``decision`` are generic
    (:func:`harness.report.summary.decided_headline`, :func:`harness.report.summary.margin_parts`) and ask the
    view three things: ``magnitude_rule(threshold)``, the effect a case must exceed, in words;
    ``magnitude_margin(threshold, estimate)``, how far the deciding estimate lies inside that effect as a
    share of it; and how to print an estimate (``estimate_digits``, ``estimate_unit``). Records written before
    results.json schema 2 (no ``decision``) are worded by ``legacy_headline`` and measured by ``legacy_margin``."""

    title: str
    label: str
    template: str
    context: Callable[[Records], dict[str, Any]]
    magnitude_rule: Callable[[Mapping[str, Any]], str]
    magnitude_margin: Callable[[Mapping[str, Any], float], float | None]
    legacy_headline: Callable[[Any], dict[str, str]]
    legacy_margin: Callable[[Any], float | None]
    estimate_digits: int = 1
    estimate_unit: str = ""
