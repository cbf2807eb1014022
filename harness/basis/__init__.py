"""BASIS-Bench item sets (stereotype, personalization, QA), the requests of the four evaluation modes,
the judges for free-text answers and the answer tables the BASIS checks score.

A suite is a folder with ``suite.yaml`` (see :mod:`harness.basis.suite`); ``--basis-suite PATH`` selects
one, the default is the shipped demo suite :data:`DEMO_SUITE_PATH`.
"""

from __future__ import annotations

from pathlib import Path

from harness.basis.suite import BasisError, BasisSuite, ItemSet, load_suite

DEMO_SUITE_PATH = Path(__file__).resolve().parents[1] / "data" / "basis_demo"


def resolve_suite(path: str | Path | None = None) -> BasisSuite:
    """The suite at ``path``, or the shipped demo suite."""
    return load_suite(DEMO_SUITE_PATH if path is None else path)


__all__ = ["DEMO_SUITE_PATH", "BasisError", "BasisSuite", "ItemSet", "load_suite", "resolve_suite"]
