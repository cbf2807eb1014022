"""This repository's entry to the gate: every function of :mod:`harness.gate_tests.test_counterfactual`, collected
wholesale."""

from harness.gate_tests.test_counterfactual import *  # noqa: F403
