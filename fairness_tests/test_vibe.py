"""This repository's entry to the gate: the shipped gate module :mod:`harness.gate_tests.test_vibe`, collected here."""

from harness.gate_tests.test_vibe import test_ntvd  # noqa: F401
