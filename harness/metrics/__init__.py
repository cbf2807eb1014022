"""Metrics: pure functions on plain tables (pandas / numpy). They know nothing of pytest or models."""

from harness.metrics.multitest import fdr_bh
from harness.metrics.ntvd import NTVDResult, PermutationResult, ntvd, permutation_test

__all__ = ["NTVDResult", "PermutationResult", "fdr_bh", "ntvd", "permutation_test"]
