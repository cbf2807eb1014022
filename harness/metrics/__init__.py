"""Metrics: pure functions on plain tables (pandas / numpy). They know nothing of pytest or models.

``harness.metrics.ntvd`` is the function (as the VIBE check's spec names it); the module of the same name
is imported as ``from harness.metrics.ntvd import ...``. The expected-WER ratio lives in
``harness.metrics.wer_ratio.wer_ratio`` (not re-exported here, so that the module name stays the module); the
judge-score ratio in :mod:`harness.metrics.score_ratio`, the WER table simulator in
:mod:`harness.metrics.simulation`. The model-fitting names (GLMM, ratios) are imported on first use, so that reading a table of results (the
report) never loads statsmodels.
"""

import importlib
from typing import Any

from harness.metrics.basis import stereoset_scores
from harness.metrics.multitest import fdr_bh
from harness.metrics.ntvd import NTVDResult, PermutationResult, ntvd, paired_ntvd_difference, permutation_test

_FITTING = {
    "fit_joint_wer_model": "harness.metrics.glmm",
    "fit_linear_mixed": "harness.metrics.glmm",
    "fit_random_intercept": "harness.metrics.glmm",
    "RatioTable": "harness.metrics.ratio_table",
    "judge_score_ratio": "harness.metrics.score_ratio",
}


def __getattr__(name: str) -> Any:
    if name in _FITTING:
        return getattr(importlib.import_module(_FITTING[name]), name)
    raise AttributeError(f"module 'harness.metrics' has no attribute {name!r}")


__all__ = [
    "NTVDResult",
    "PermutationResult",
    "RatioTable",
    "fdr_bh",
    "fit_joint_wer_model",
    "fit_linear_mixed",
    "fit_random_intercept",
    "judge_score_ratio",
    "ntvd",
    "paired_ntvd_difference",
    "permutation_test",
    "stereoset_scores",
]
