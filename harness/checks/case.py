"""One gate case (:class:`Case`): the unit every layer of a check names, from the requests it asks to the verdict
and the baseline comparison (:mod:`harness.checks.base`, :mod:`harness.checks.verdict`,
:mod:`harness.checks.release`), kept apart so that those modules import it without importing one another."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class Case:
    """One gate case. ``variant`` is the check's second axis (a task, a mode), or None."""

    check: str
    model: str
    corpus: str
    dimension: str
    variant: str | None
    id: str
