"""The gate's own pytest hook, for a team's plugin or conftest to act on a run's typed results.

:func:`pytest_lalm_fairness_results` is called once per gate run, on the controller (or the run without
pytest-xdist), with the run's :class:`harness.results.RunResults` after its verdict and exit status are known and
before results.json, the report and the CI summary are written. An implementation reads the typed object
(``results.verdict``, ``results.cases``, ``results.metadata``); it cannot change what is written. A run that stops
at setup, or that is no gate run, calls it not at all. ``docs/extending.md`` shows an example plugin.

The specification is added by :func:`add_hookspecs` from this package's ``pytest_addhooks`` (the entry point) and
from :mod:`harness.plugin`'s, whichever pytest registers first; it imports nothing of :mod:`harness`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.results import RunResults

RESULTS_HOOK = "pytest_lalm_fairness_results"


@pytest.hookspec
def pytest_lalm_fairness_results(results: RunResults) -> None:
    """A gate run's typed results, before results.json and the report are written (:mod:`lalm_fairness_pytest.hookspecs`)."""


def add_hookspecs(pluginmanager: pytest.PytestPluginManager) -> None:
    """Add this module's hook specifications, once: the entry point and :mod:`harness.plugin` both ask."""
    caller = getattr(pluginmanager.hook, RESULTS_HOOK, None)
    if caller is None or caller.spec is None:
        pluginmanager.add_hookspecs(sys.modules[__name__])
