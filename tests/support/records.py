"""nTVD records as results.json holds them (with their decision and baseline blocks), and a results.json of them,
for the report tests."""

from harness.results import parse_results, record_from_json


def case(model="sim:biased", task="advisory", dimension="gender", value=40.0, q=0.001, passed=False, **extra):
    """An nTVD case as results.json holds it."""
    record = {
        "check": "ntvd",
        "id": f"{model}-{task}-{dimension}",
        "nodeid": f"test_vibe.py::test_ntvd[{model}-{task}-{dimension}]",
        "model": model,
        "model_fingerprint": f"{model}@1",
        "corpus": "demo",
        "dimension": dimension,
        "variant": task,
        "task": task,
        "value": value,
        "p": q,
        "q": q,
        "threshold": {"max_ntvd": 20.0, "alpha": 0.05, "rule": "both", "tau": 10},
        "passed": passed,
        "message": "msg",
        "n_speakers": 20,
        "n_groups": 2,
        "n_permutations": 999,
        "seed": 0,
        "per_attribute": {"activity": value},
        "dropped_attributes": [],
        "answer_status": {"extracted": 10, "refusal": 1, "unextractable": 0, "empty": 0},
        "most_divergent": {
            "attribute": "activity",
            "groups": ["female", "male"],
            "values": ["yoga", "chess"],
            "probabilities": {"female": [0.8, 0.2], "male": [0.1, 0.9]},
        },
        "tau_sensitivity": {},
        "refusal_ntvd": None,
        "collapsed_attributes": [],
        "minimum_detectable_ntvd": {"population": None},
        "extractor": "rules",
        "canonical": None,
        "example_pair": None,
        "paired_data": None,
    }
    record.update(extra)
    return record


def typed(*cases):
    return [record_from_json(data, f"case {index}") for index, data in enumerate(cases)]


def results_json(cases):
    """A results.json document of these cases, as the gate writes it."""
    failed = sum(not c["passed"] for c in cases)
    return {
        "schema_version": 3,
        "verdict": "fail" if failed else "pass",
        "summary": {"cases": len(cases), "passed": len(cases) - failed, "failed": failed, "unmeasured": 0},
        "metadata": {"models": {"sim:biased": "fp"}, "model_calls": 0, "cache_hits": 5, "models_loaded": []},
        "cases": cases,
    }


def results(cases):
    """The typed results (:class:`harness.results.RunResults`) of :func:`results_json`."""
    return parse_results(results_json(cases))


def ntvd_record(**changes):
    """A typed nTVD record (:func:`case` with ``changes``)."""
    return record_from_json(case(**changes), "case")


MEASURE = "nTVD on common values beyond group exchange"


def decision(estimate, p, p_adjusted, relevant, rule="both", label="nTVD across groups"):
    """A decided nTVD decision block as results.json holds it."""
    return {
        "p": p if relevant or rule != "both" else 1.0,
        "comparisons": 1,
        "family_size": 43,
        "p_adjusted": p_adjusted,
        "alpha": 0.05,
        "relevant": relevant,
        "significant": p_adjusted <= 0.05,
        "estimable": True,
        "reason": None,
        "correction": "within the case one comparison; Bonferroni across the model's 43 selected bias cases",
        "statistic": "nTVD over attributes (0-100), speaker-level permutation p-value",
        "rule": rule,
        "contrasts": [
            {"label": label, "estimate": estimate, "ci_low": None, "ci_high": None, "p": p, "relevant": relevant}
        ],
        "untestable": [],
        "label": label,
        "estimate": estimate,
        "ci_low": None,
        "ci_high": None,
    }


def compared(baseline_value, delta, p_value, p_adjusted, regressed):
    """A baseline block of a case compared with its baseline on :data:`MEASURE`."""
    return {
        "status": "compared",
        "baseline_value": baseline_value,
        "delta": delta,
        "p_value": p_value,
        "regressed": regressed,
        "message": "vs baseline: ...",
        "measure": MEASURE,
        "decision": {
            "p_adjusted": p_adjusted,
            "alpha": 0.05,
            "rule": "both",
            "margin": 2.0,
            "margin_key": "max_increase",
        },
        "source": "runs/1.2/results.json",
        "model": "sim:fair",
    }


def regressed_within_its_bar():
    """Candidate review as the release example has it: nTVD 16.74 within the bar of 20 (its adjusted p 1), yet a
    regression on the release test's measure, 1.24 -> 12.00."""
    return case(
        task="candidate_review",
        value=16.74,
        q=0.0002,
        passed=False,
        decision=decision(16.74, 9.999e-05, 1.0, relevant=False),
        absolute_passed=True,
        release="regression",
        baseline=compared(1.24, 10.76, 4.29e-06, 0.000185, regressed=True),
    )
