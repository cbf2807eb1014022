"""This repository's entry to the gate: every function of :mod:`harness.gate_tests.test_extensions`, collected wholesale."""

from harness.gate_tests.test_extensions import *  # noqa: F403
