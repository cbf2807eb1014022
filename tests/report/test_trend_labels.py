"""The trend labels each unmeasured case with its own check, even where two checks share case ids (issue 37)."""

from harness.report.trend import unmeasured_key


def error(nodeid: str | None, case_id: str = "m-demo-gender") -> dict:
    return {"check": "error", "id": case_id, "passed": False, "message": "x"} | ({"nodeid": nodeid} if nodeid else {})


def test_an_unmeasured_judge_score_case_is_not_labelled_wer_ratio():
    measured = {"m-demo-gender": ["wer_ratio"]}  # the WER case measured in every run, the judge-score case never
    key = unmeasured_key(error("test_wer.py::test_score_ratio[m-demo-gender]"), measured)
    assert key == ("score_ratio", "m-demo-gender")
    assert unmeasured_key(error("test_wer.py::test_wer_ratio[m-demo-gender]"), measured) == (
        "wer_ratio",
        "m-demo-gender",
    )


def test_without_a_nodeid_the_one_check_measuring_the_id_names_it():
    assert unmeasured_key(error(None), {"m-demo-gender": ["wer_ratio"]}) == ("wer_ratio", "m-demo-gender")
    assert unmeasured_key(error(None), {"m-demo-gender": ["wer_ratio", "score_ratio"]}) == ("error", "m-demo-gender")
