"""The checks: one folder per check, registered by name in :data:`CHECKS` (lazily, ``harness.registry``).

A check folder (a package) holds ``check.py`` (``CHECK``, its :class:`~harness.checks.base.Check` subclass:
cases, requests, tables, verdict, baseline comparison), ``record.py`` (``RECORD``, its results.json record
class), ``view.py`` (``VIEW``, its :class:`~harness.checks.view.CheckView`) and the template the view names.
The registry maps a check's name to its package; another distribution adds a check through the entry-point
group ``lalm_fairness.checks`` (``name = "package.folder"``). Everything else is derived from it: the record
types, the report's views and labels, the gate's test functions and the thresholds schema. This module
imports no check: :func:`get_check` imports ``check.py`` and the report imports only ``record.py`` and
``view.py``, which never import fitting code.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

from harness.registry import Registry

CHECKS = Registry(
    "check",
    "checks",
    {
        "ntvd": "harness.checks.ntvd",
        "wer_ratio": "harness.checks.wer_ratio",
        "score_ratio": "harness.checks.score_ratio",
        "icat": "harness.checks.icat",
        "personalization": "harness.checks.personalization",
        "classification": "harness.checks.classification",
        "robustness": "harness.checks.robustness",
        "counterfactual": "harness.checks.counterfactual",
    },
)
"""Check name -> its folder (a package), in report order (built-ins first, then entry points)."""

PARTS = {"check": "CHECK", "record": "RECORD", "view": "VIEW"}
BUILTIN_FOLDER = Path(__file__).parent
"""Where the built-in check folders lie, and the partials their families share (``basis_common/``, ``semantic_aware/``)."""


def check_part(name: str, part: str) -> Any:
    """The ``CHECK``, ``RECORD`` or ``VIEW`` of check ``name``, from its folder's ``check.py``, ``record.py`` or
    ``view.py``; a folder that lacks one is an error naming the check, the module and the attribute."""
    if name not in CHECKS:
        raise KeyError(CHECKS.unknown(name))
    module_name = f"{CHECKS[name]}.{part}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise LookupError(
            f"check {name!r}: its folder {CHECKS[name]} has no {part}.py (a check folder holds "
            f"{', '.join(f'{p}.py' for p in PARTS)})"
        ) from None
    if not hasattr(module, PARTS[part]):
        raise LookupError(f"check {name!r}: {module_name} defines no {PARTS[part]}")
    return getattr(module, PARTS[part])


def check_folder(name: str) -> Path:
    """The folder of check ``name`` (where its template lies)."""
    return Path(importlib.import_module(CHECKS[name]).__file__).parent


@functools.cache
def get_check(name: str):
    """The (shared, stateless) instance of check ``name``; its ``name`` must be its registry name."""
    check = check_part(name, "check")()
    if check.name != name:
        raise LookupError(f"check {name!r}: {CHECKS[name]}.check.CHECK is named {check.name!r}")
    return check


def all_checks() -> list:
    return [get_check(name) for name in CHECKS]


def record_types() -> dict[str, type]:
    """Check name -> its record class (``record.py``'s ``RECORD``)."""
    return {name: check_part(name, "record") for name in CHECKS}


def views() -> dict[str, Any]:
    """Check name -> its :class:`~harness.checks.view.CheckView`, in report order."""
    return {name: check_part(name, "view") for name in CHECKS}


__all__ = ["BUILTIN_FOLDER", "CHECKS", "all_checks", "check_folder", "check_part", "get_check", "record_types", "views"]
