"""BASIS-Bench checks (BASIS-Bench §3): stereotypical bias, personalization, demographic classification and
robustness, on the BASIS item suite (``--basis-suite``, default the shipped demo suite).

Each case fails when its value breaks the threshold in thresholds.yaml; the message says which and why.
"""


def test_icat(icat_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(icat_case)
    record_verdict(verdict)
    assert verdict.passed, verdict.message


def test_personalization(personalization_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(personalization_case)
    record_verdict(verdict)
    assert verdict.passed, verdict.message


def test_classification(classification_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(classification_case)
    record_verdict(verdict)
    assert verdict.passed, verdict.message


def test_robustness(robustness_case, fairness_gate, record_verdict):
    verdict = fairness_gate.verdict(robustness_case)
    record_verdict(verdict)
    assert verdict.passed, verdict.message
