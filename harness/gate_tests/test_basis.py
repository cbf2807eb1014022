"""BASIS-Bench checks (BASIS-Bench §3): stereotypical bias, personalization, demographic classification and
robustness, on the BASIS item suite (``--basis-suite``, default the shipped demo suite).

Each case fails when its value breaks the threshold in thresholds.yaml (or, given --baseline, on a
significant regression against the baseline checkpoint); the message says which and why.
"""


def test_icat(icat_case, assess):
    assess(icat_case)


def test_personalization(personalization_case, assess):
    assess(personalization_case)


def test_classification(classification_case, assess):
    assess(classification_case)


def test_robustness(robustness_case, assess):
    assess(robustness_case)
