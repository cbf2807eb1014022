"""A run's scope is part of its verdict (issue 37): a run of fewer than every case of its gate is a spot check,
never a release verdict, and no baseline; a check that cannot run is unmeasured, one turned off is listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.gate.baseline import load_baseline
from harness.gate.outcomes import EXIT_BIAS_FAILURE, EXIT_SPOT_CHECK, EXIT_UNMEASURED, exit_status
from harness.gate.scope import NOT_COLLECTED, deselection_reason, run_scope
from harness.records import SPOT_CHECK, UnmeasuredRecord
from harness.report.summary import first_screen
from harness.results import Summary, read_results, scope_from_json
from harness.run_decision import decide_run
from tests.support.gate import gate_project
from tests.support.records import ntvd_record

pytest_plugins = ["pytester"]

GATE = [
    ("ntvd", "m-story-gender"),
    ("ntvd", "m-story-accent"),
    ("wer", "m-demo-gender"),
    ("score_ratio", "m-demo-gender"),
]


def test_scope_names_every_case_that_did_not_run_with_its_reason():
    scope = run_scope(
        GATE,
        ran=[("ntvd", "m-story-gender"), ("score_ratio", "m-demo-gender")],
        deselected={("ntvd", "m-story-accent"): "deselected by -k 'gender'"},
        skipped={("score_ratio", "m-demo-gender"): "needs a GPU"},
        off=["icat"],
    )
    assert (scope.gate_cases, scope.ran, scope.spot_check) == (4, 1, True)
    assert [(e.check, e.id, e.reason) for e in scope.omitted] == [
        ("ntvd", "m-story-accent", "deselected by -k 'gender'"),
        ("score_ratio", "m-demo-gender", "needs a GPU"),
        ("wer", "m-demo-gender", NOT_COLLECTED),
    ]
    assert scope_from_json(json.loads(json.dumps(scope.to_json())), "r.json") == scope
    assert scope.title() == "SPOT CHECK — 1 of 4 cases; not a release verdict"
    full = run_scope(GATE, ran=GATE, deselected={}, skipped={})
    assert not full.spot_check and full.ran == full.gate_cases == 4


def test_a_case_id_shared_by_two_checks_is_two_cases():
    scope = run_scope([("wer", "m-demo-gender"), ("score_ratio", "m-demo-gender")], [("wer", "m-demo-gender")], {}, {})
    assert scope.gate_cases == 2 and [e.check for e in scope.not_collected] == ["score_ratio"]


def test_deselection_reason_names_the_expressions():
    assert deselection_reason("advisory and accent", None) == "deselected by -k 'advisory and accent'"
    assert deselection_reason("a", "slow") == "deselected by -k 'a' and -m 'slow'"
    assert deselection_reason("", "") == "deselected by a plugin's deselection hook"


@pytest.mark.parametrize(
    ("failed", "unmeasured", "status"), [(0, 0, EXIT_SPOT_CHECK), (1, 1, EXIT_BIAS_FAILURE), (0, 1, EXIT_UNMEASURED)]
)
def test_a_spot_check_is_never_pass_and_exits_with_its_selected_cases_status(failed, unmeasured, status):
    cases = (
        [ntvd_record(passed=True)]
        + [ntvd_record(passed=False)] * failed
        + [UnmeasuredRecord(check="ntvd", id="m-story-gender", message="not measured")] * unmeasured
    )
    verdict = decide_run(cases, spot_check=True).verdict
    assert verdict == SPOT_CHECK and exit_status(verdict, Summary.of(cases)) == status
    assert decide_run(cases, stopped=True, spot_check=True).verdict == "incomplete"


def spot_check_results(tmp_path: Path) -> Path:
    scope = run_scope(GATE, [GATE[0]], {case: "deselected by -k 'x'" for case in GATE[1:]}, {})
    path = tmp_path / "spot.json"
    summary = {"cases": 0, "passed": 0, "failed": 0, "unmeasured": 0}
    document = {
        "schema_version": 3,
        "verdict": SPOT_CHECK,
        "summary": summary,
        "scope": scope.to_json(),
        "metadata": {},
    }
    path.write_text(json.dumps(document | {"cases": []}))
    return path


def test_a_spot_check_is_refused_as_a_baseline_naming_what_it_lacks(tmp_path):
    path = spot_check_results(tmp_path)
    with pytest.raises(ValueError, match=r"spot\.json: a spot check is not a baseline: it ran 1 of the 4 cases") as err:
        load_baseline(path)
    assert "ntvd m-story-accent (deselected by -k 'x')" in str(err.value) and "lacks 3" in str(err.value)


def test_the_first_screen_of_a_spot_check_never_says_may_be_released(tmp_path):
    screen = first_screen(read_results(spot_check_results(tmp_path)))
    assert screen["spot_check"] == "SPOT CHECK — 1 of 4 cases; not a release verdict"
    assert screen["bar"] == SPOT_CHECK


@pytest.mark.parametrize(
    ("failed", "unmeasured", "word", "bar"), [(1, 0, "FAILED", "fail"), (0, 1, "UNMEASURED", "unmeasured")]
)
def test_a_failing_spot_check_says_so_on_its_first_screen(tmp_path, failed, unmeasured, word, bar):
    """Issue 59, item 7: a failing spot check (exit 1) opened on a grey "SPOT CHECK" bar that did not say it failed."""
    import dataclasses

    from harness.report.ci_summary import render_summary

    results = read_results(spot_check_results(tmp_path))
    results = dataclasses.replace(results, summary=Summary(1, 1 - failed - unmeasured, failed, unmeasured))
    screen = first_screen(results)
    assert screen["spot_check"] == f"SPOT CHECK {word} — 1 of 4 cases; not a release verdict"
    assert screen["bar"] == bar
    assert render_summary(results).startswith(f"### Voice-induced bias gate: **SPOT CHECK {word} — 1 of 4 cases")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return gate_project(pytester, "test_vibe.py", "test_wer.py")


def test_a_keyword_run_is_a_spot_check_refused_as_baseline_and_unjudged_score_ratio_is_unmeasured(project):
    """One in-process run of ``-k "advisory and accent or score_ratio"``: the spot check's results.json, report
    title and exit status; then that file given as --baseline stops the next run before any case (exit 4)."""
    cache = str(project.path / "cache")
    args = ("-p", "no:cacheprovider", "--model", "sim:fair", "--permutations", "199", "--cache-dir", cache)
    result = project.runpytest_inprocess(*args, "-k", "advisory and accent or score_ratio")
    results = json.loads((project.path / "results.json").read_text())
    assert result.ret == EXIT_UNMEASURED and results["verdict"] == SPOT_CHECK
    scope = results["scope"]
    assert scope["spot_check"] and scope["ran"] == 3 and scope["gate_cases"] == 14
    assert len(scope["deselected"]) == 11 and all(
        e["reason"].startswith("deselected by -k") for e in scope["deselected"]
    )
    unjudged = [case for case in results["cases"] if case.get("status") == "unmeasured"]
    assert len(unjudged) == 2 and all("pass --judge SPEC" in case["cause"]["message"] for case in unjudged)
    html = (project.path / "report.html").read_text()
    assert "SPOT CHECK UNMEASURED — 3 of 14 cases; not a release verdict" in html and "may be released" not in html
    assert 'class="verdict verdict-unmeasured"' in html
    (project.path / "spot.json").write_text((project.path / "results.json").read_text())
    refused = project.runpytest_inprocess(*args, "--baseline", str(project.path / "spot.json"), "--results-json", "")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "a spot check is not a baseline: it ran 3 of the 14 cases" in str(refused.stdout) + str(refused.stderr)


def test_a_passing_spot_check_has_an_exit_status_of_its_own(project):
    """Issue 47 item 8: CI tells a passing spot check from a release pass by its exit status, 8, which neither
    pytest (0-6) nor the gate's other outcomes use."""
    used = {int(code) for code in pytest.ExitCode} | {EXIT_BIAS_FAILURE, EXIT_UNMEASURED, 2, 4}
    assert EXIT_SPOT_CHECK not in used
    args = ("-p", "no:cacheprovider", "--model", "sim:fair", "--permutations", "199")
    result = project.runpytest_inprocess(*args, "--cache-dir", str(project.path / "cache"), "-k", "advisory and accent")
    results = json.loads((project.path / "results.json").read_text())
    assert results["verdict"] == SPOT_CHECK and results["summary"]["failed"] == results["summary"]["unmeasured"] == 0
    assert result.ret == EXIT_SPOT_CHECK == 8
