"""This repository's entry to the gate: every function of :mod:`harness.gate_tests.test_basis`, collected wholesale."""

from harness.gate_tests.test_basis import *  # noqa: F403
