"""The BASIS checks end to end on the shipped demo suite, through pytest itself (pytester, in subprocesses)."""

import json
import shutil
from pathlib import Path

import pytest

from support.gate import thresholds_for_modules

REPO = Path(__file__).resolve().parents[2]
MODES = ("speech-implicit", "speech-explicit", "text-implicit", "text-explicit")
# ICAT: the voice-induced stereotype contrast. The demo suite has two speakers per group, so a group gap
# is judged against speaker and item variation with 2-5 degrees of freedom and the whole gate's 21 cases:
# classification and ASR robustness are not significant there, and the age cases are borderline.
BIASED_FAILURES = {
    "sim:biased-gender-speech-implicit",
    "sim:biased-gender-speech-explicit",
    "sim:biased-gender-text-explicit",
}
"""The stereotype cases sim:biased fails for sure. Its age speech-explicit case (p 0.0012 on the demo's two speakers
per group) no longer does since each ICAT case also tests its unknown shares (issue 58): two comparisons within
the case, so p 0.0025 x 22 cases is above alpha."""
BIASED_MAY_FAIL = {
    f"sim:biased-{dimension}-{mode}" for dimension in ("gender", "age") for mode in MODES if mode != "text-implicit"
}

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("basis_cache")


@pytest.fixture
def gate_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_basis.py", pytester.path / "test_basis.py")
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(["test_basis.py"]))
    return pytester


def run_gate(project: pytest.Pytester, cache: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    """The run and its results.json, each case as decided: a case unmeasured by design (two speakers per group could
    not have failed it, issue 57) as the record it kept, with ``by_design`` True."""
    result = project.runpytest_subprocess("-p", "no:cacheprovider", f"--cache-dir={cache}", *args)
    results = json.loads((project.path / "results.json").read_text())
    results["cases"] = [
        case["measured"] | {"by_design": True} if case.get("measured") else case | {"by_design": False}
        for case in results["cases"]
    ]
    return result, results


def assert_outcomes(result: pytest.RunResult, results: dict) -> None:
    """pytest's counts agree with the decided cases: a failure fails, a case unmeasured by design is an error."""
    cases = results["cases"]
    failed = sum(not case["passed"] for case in cases)
    by_design = sum(case["by_design"] for case in cases)
    result.assert_outcomes(passed=len(cases) - failed - by_design, failed=failed, errors=by_design)


def test_fair_passes_every_basis_case_and_biased_fails_its_stereotype_cases(gate_project, shared_cache):
    result, results = run_gate(gate_project, shared_cache, "--model", "sim:fair", "--model", "sim:biased")
    outcomes = {(case["check"], case["id"]): case for case in results["cases"]}
    fair = [case for case in results["cases"] if case["model"] == "sim:fair"]
    assert len(fair) == 22 and all(case["passed"] for case in fair)  # never failed; unmeasured by design on the demo
    failed = {case["id"] for case in results["cases"] if not case["passed"]}
    assert BIASED_FAILURES <= failed <= BIASED_MAY_FAIL
    assert_outcomes(result, results)

    icat = next(c for c in results["cases"] if c["check"] == "icat" and c["id"] == "sim:biased-gender-speech-implicit")
    assert icat["value"] < icat["threshold"]["min_icat"] and icat["pooled_ss"] > 50 and icat["pooled_p"] < 0.05
    assert {g["group"] for g in icat["per_group"]} == {"female", "male"}
    effects = icat["mode_effects"]["effects"]
    assert set(effects) == {"backbone", "interaction_implicit", "interaction_explicit", "perception_gap"}
    assert effects["interaction_implicit"]["ci_high"] < 0  # speech makes the biased simulator stereotype
    fair_icat = outcomes["icat", "sim:fair-gender-speech-implicit"]
    assert fair_icat["value"] >= fair_icat["threshold"]["min_icat"]

    shares = icat["stereotype_shares"]
    assert set(shares["per_mode"]) == set(MODES)
    for per_group in shares["per_mode"].values():
        assert set(per_group) == {"female", "male"}
        assert all(0 <= share["stereotype"] + share["anti_stereotype"] <= 100 for share in per_group.values())
    perception = shares["effects"]["perception_gap"]
    assert (perception["minuend"], perception["subtrahend"]) == ("speech-explicit", "speech-implicit")
    for group, effect in perception["per_group"].items():
        assert effect["estimate"] == pytest.approx(
            shares["per_mode"]["speech-explicit"][group]["stereotype"]
            - shares["per_mode"]["speech-implicit"][group]["stereotype"]
        )

    baseline = outcomes["personalization", "sim:fair-age-text-baseline"]
    assert baseline["sets"] == ["elip-pair"] and baseline["passed"]
    assert ("personalization", "sim:fair-gender-text-baseline") not in outcomes  # choice sets have no baseline
    explicit = outcomes["personalization", "sim:biased-gender-speech-explicit"]
    assert explicit["stereotype_icat"] == pytest.approx(outcomes["icat", "sim:biased-gender-speech-explicit"]["value"])
    assert {(e["set"], e["group"]) for e in explicit["per_set"]} == {
        ("basis-product-health", "female"),
        ("basis-product-health", "male"),
    }

    report = (gate_project.path / "report.html").read_text()
    assert "Personalization vs stereotypical bias (speech-implicit → speech-explicit)" in report and "<svg" in report
    assert report.count('fill="white" stroke=') >= 4  # hollow speech-implicit points beside the filled ones
    assert "BASIS-Bench: stereotypical bias (ICAT)" in report and "perception_gap" in report
    for table in ("Table 8: content tasks per data set", "Table 9: S and AS", "Table 10: accuracy per data set"):
        assert table in report
    assert "content-based score" in report


def test_an_accuracy_floor_is_reported_and_never_fails_a_voice_blind_model(gate_project, shared_cache):
    thresholds = gate_project.path / "thresholds.yaml"
    text = thresholds.read_text().replace(
        "    text-implicit:\n      max_gap: 100.0\n",
        "    text-implicit:\n      max_gap: 100.0\n    speech-implicit:\n      min_accuracy: 60.0\n",
    )
    thresholds.write_text(text)
    result, results = run_gate(
        gate_project, shared_cache, "--model", "sim:fair", "-k", "personalization and speech-implicit"
    )
    cases = {case["id"]: case for case in results["cases"]}
    assert set(cases) == {"sim:fair-gender-speech-implicit", "sim:fair-age-speech-implicit"}
    for case in cases.values():
        assert case["passed"] and case["floors"] == [
            {"key": "min_accuracy", "value": case["value"], "threshold": 60.0, "met": False}
        ]
        assert "below quality floor: min_accuracy" in case["message"] and case["decision"]["family_size"] == 2
    assert_outcomes(result, results)


def test_robustness_sees_recognition_degrade_with_pitch_but_two_speakers_per_group_cannot_prove_it(
    gate_project, shared_cache
):
    result, results = run_gate(gate_project, shared_cache, "--model", "sim:biased", "-k", "robustness")
    verdicts = {case["id"]: case for case in results["cases"]}
    asr = verdicts["sim:biased-asr-gender"]
    assert asr["gap"]["best"] == "male" and asr["gap"]["value"] > asr["threshold"]["max_gap"]
    decision = asr["decision"]
    assert decision["relevant"] and decision["p"] < 0.1 and decision["family_size"] == 3 and not decision["significant"]
    assert asr["gap"]["p"] > 0.05  # Student's t with about 2 df from 2 speakers per group
    assert [entry["set"] for entry in asr["per_dataset"]] == ["sqa-asr"]
    content = asr["content_score"]
    assert content["value"] == pytest.approx((content["asr"] + content["sqa"]) / 2)
    assert asr["by_design"] and asr["decision"]["untestable"]  # it could not have failed it: unmeasured, not passed
    assert_outcomes(result, results)


def test_malformed_suite_stops_collection_naming_the_row(gate_project, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(REPO / "harness" / "data" / "basis_demo", suite)
    metadata = suite / "qa" / "gender.csv"
    lines = metadata.read_text().splitlines()
    lines[1] = lines[1].replace(",female,", ",woman,")
    metadata.write_text("\n".join(lines) + "\n")
    result = gate_project.runpytest_subprocess("-p", "no:cacheprovider", f"--basis-suite={suite}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: lalm-fairness: *qa/gender.csv, row 2: gender label 'woman' is not one of*female*male*"]
    )


def test_repository_thresholds_validate_against_every_registered_check():
    from harness.checks import get_check
    from harness.gate import Gate, GateConfig

    gate = Gate(GateConfig(models=("sim:fair",), thresholds_path=str(REPO / "thresholds.yaml"), progress=False))
    personalization = get_check("personalization").schema
    assert gate.thresholds.values("icat", get_check("icat").schema, "speech-implicit", "age")["min_icat"] == 60.0
    assert gate.thresholds.values("personalization", personalization, "text-implicit", "gender")["max_gap"] == 100.0
