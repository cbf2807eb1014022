"""This repository's entry to the gate: every function of :mod:`harness.gate_tests.test_vibe`, collected wholesale."""

from harness.gate_tests.test_vibe import *  # noqa: F403
