"""The gate's test modules, shipped with the package: one test function per registered check, made here.

Every check of :data:`harness.checks.CHECKS` gets one function ``test_<name>(<name>_case, assess)`` that
asserts its case's verdict (``assess``, :mod:`harness.plugin`). A check names the module that collects it by
its ``gate_module`` (``vibe``, ``wer``, ``basis``, ``counterfactual``; any other value, such as a plugin check's default
``extensions``, is collected by ``test_extensions``), so a new check is collected without naming it anywhere.

In a model team's own repository, after ``pip install lalm-fairness``: ``pytest --pyargs harness.gate_tests``
(the pytest plugin is registered by the package's ``pytest11`` entry point; ``thresholds.yaml`` is read from
the directory pytest runs in). This repository's ``fairness_tests/`` collects these same modules wholesale.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

SHIPPED_MODULES = ("vibe", "wer", "basis", "counterfactual")
EXTENSIONS = "extensions"


def gate_function(check_name: str) -> Callable[..., None]:
    """``test_<check_name>(<check_name>_case, assess)``: asserts the verdict of one case of the check."""
    fixture = f"{check_name}_case"

    def test(**fixtures) -> None:
        fixtures["assess"](fixtures[fixture])

    test.__name__ = test.__qualname__ = f"test_{check_name}"
    test.__doc__ = f"One case of the {check_name!r} check: passes when the gate's verdict on it is a pass."
    test.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in (fixture, "assess")]
    )
    return test


def gate_functions(module: str) -> dict[str, Callable[..., None]]:
    """The gate functions that module ``test_<module>`` collects: the checks whose ``gate_module`` is ``module``
    (for ``extensions``: every check whose ``gate_module`` is not one of :data:`SHIPPED_MODULES`)."""
    from harness.checks import all_checks

    def collected_by(check) -> str:
        declared = getattr(check, "gate_module", EXTENSIONS)
        return declared if declared in SHIPPED_MODULES else EXTENSIONS

    return {f"test_{check.name}": gate_function(check.name) for check in all_checks() if collected_by(check) == module}
