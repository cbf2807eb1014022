"""VIBE open-ended bias checks (VIBE §II-D): one case per model x task x demographic dimension.

A case fails when its nTVD breaks the threshold in thresholds.yaml (by default: nTVD above max_ntvd and
Benjamini-Hochberg q below alpha over every nTVD test of the session).
"""


def test_ntvd(ntvd_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(ntvd_case)
    record_verdict(verdict)
    assert verdict.passed, verdict.message
