"""This repository's entry to the gate: every function of :mod:`harness.gate_tests.test_wer`, collected wholesale."""

from harness.gate_tests.test_wer import *  # noqa: F403
