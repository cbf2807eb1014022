"""This repository's entry to the gate: the shipped gate module :mod:`harness.gate_tests.test_basis`, collected here."""

from harness.gate_tests.test_basis import test_icat, test_personalization, test_classification, test_robustness  # noqa: F401
