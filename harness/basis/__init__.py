"""BASIS-Bench: the requests of the four evaluation modes and the judges of free-text answers.

The item suite itself is data (:mod:`harness.data.basis_suite`, re-exported here): a folder with
``suite.yaml``; ``--basis-suite PATH`` selects one, the default is the shipped demo suite
:data:`DEMO_SUITE_PATH`.
"""

from __future__ import annotations

from harness.data.basis_suite import DEMO_SUITE_PATH, BasisError, BasisSuite, ItemSet, load_suite, resolve_suite

__all__ = ["DEMO_SUITE_PATH", "BasisError", "BasisSuite", "ItemSet", "load_suite", "resolve_suite"]
