"""The trend labels each unmeasured case with its own check, even where two checks share case ids (issue 37)."""

from harness.records import UnmeasuredRecord
from harness.report.trend import trend_view
from harness.results import parse_results


def ratio(check: str, passed: bool = True) -> dict:
    """A WER or judge-score ratio record of model ``m`` on the demo corpus's gender dimension."""
    return {
        "check": check,
        "id": "m-demo-gender",
        "model": "m",
        "model_fingerprint": "m@1",
        "corpus": "demo",
        "dimension": "gender",
        "variant": None,
        "value": 1.02,
        "threshold": {"lower": 0.9, "upper": 1.11},
        "passed": passed,
        "message": "m-demo-gender: ratio within bounds",
        "ci": [0.95, 1.09],
        "p": 0.6,
        "q": None,
        "comparisons": [],
        "semantics": {},
    }


def legacy_unmeasured(check: str) -> dict:
    """How a schema-2 file recorded an unmeasured case: ``check: error``, its check only in the node id."""
    return {
        "check": "error",
        "id": "m-demo-gender",
        "nodeid": f"fairness_tests/test_wer.py::test_{check}[m-demo-gender]",
        "passed": False,
        "message": "not measured (config): no judge",
        "model": "m",
        "corpus": "demo",
        "dimension": "gender",
    }


def run(cases: list, version: int = 2) -> dict:
    summary = {"cases": len(cases), "passed": 1, "failed": 0, "unmeasured": len(cases) - 1}
    return {"schema_version": version, "verdict": "unmeasured", "summary": summary, "metadata": {}, "cases": cases}


def test_an_unmeasured_judge_score_case_is_not_labelled_wer_ratio():
    """Both runs measured the WER ratio; neither measured the judge-score ratio, which shares its case id."""
    runs = [parse_results(run([ratio("wer_ratio"), legacy_unmeasured("score_ratio")])) for _ in range(2)]
    assert isinstance(runs[0].cases[1], UnmeasuredRecord) and runs[0].cases[1].check == "score_ratio"
    view = trend_view(["a", "b"], runs, {})
    panels = {item["check"]: item for item in view["shown"] + [p for group in view["folded"] for p in group["panels"]]}
    assert set(panels) == {"wer_ratio", "score_ratio"}
    assert panels["score_ratio"]["latest"] == "unmeasured"
    assert panels["wer_ratio"]["latest"] == "passed"
    assert len(panels["score_ratio"]["chart"]["unmeasured"]) == 2 and not panels["wer_ratio"]["chart"]["unmeasured"]


def test_a_schema_3_unmeasured_case_keeps_its_check_in_the_trend():
    unmeasured = UnmeasuredRecord(
        check="score_ratio", id="m-demo-gender", model="m", corpus="demo", dimension="gender", message="no judge"
    ).to_json()
    runs = [parse_results(run([ratio("wer_ratio"), unmeasured], version=3)) for _ in range(2)]
    view = trend_view(["a", "b"], runs, {})
    checks = sorted(item["check"] for item in view["shown"] + [p for g in view["folded"] for p in g["panels"]])
    assert checks == ["score_ratio", "wer_ratio"]
