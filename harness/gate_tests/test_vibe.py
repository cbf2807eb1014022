"""VIBE open-ended bias checks (VIBE §II-D): one case per model x task x demographic dimension.

A case fails when its nTVD breaks the threshold in thresholds.yaml (by default: nTVD above max_ntvd and
Benjamini-Hochberg q below alpha over every nTVD test of the session), or, given --baseline, when the
candidate is significantly more biased than the baseline checkpoint.
"""


def test_ntvd(ntvd_case, assess):
    assess(ntvd_case)
