"""A release verdict covers the configured gate and the baseline's cases (issue 45, items 1 and 4): a run of one
gate module is a spot check and no baseline; a candidate that does not run every case of its baseline is
unmeasured, naming the cases; a failing case whose comparison could not be made is a new failure, never a known
one; a corpus whose recordings changed is judged by its absolute thresholds only."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from harness.gate import release_outcome
from harness.gate.baseline import Baseline, candidate_case_id
from harness.gate.outcomes import EXIT_UNMEASURED
from harness.records import SPOT_CHECK

from support.gate import REPO, decided_cases, gate_project, thresholds_for_modules

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:cacheprovider", "--model", "sim:fair", "--judge", "sim:fair", "--permutations", "199")


def run(project, *args):
    return project.runpytest_subprocess(*ARGS, "--cache-dir", str(project.path / "cache"), *args)


def results(project, name="results.json"):
    return json.loads((project.path / name).read_text())


def test_one_gate_module_under_the_full_thresholds_is_a_spot_check_refused_as_a_baseline(pytester):
    """``pytest fairness_tests/test_wer.py`` with every check enabled: its gate is every enabled check's cases, so
    the run is a spot check (not a pass), names the cases it did not collect, and is refused as a baseline."""
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_wer.py", pytester.path / "test_wer.py")
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    run(pytester)
    written = results(pytester)
    scope = written["scope"]
    assert written["verdict"] == SPOT_CHECK and scope["spot_check"]
    assert scope["ran"] == 4 and scope["gate_cases"] > 30
    assert {entry["check"] for entry in scope["not_collected"]} >= {"ntvd", "counterfactual", "icat"}
    shutil.copy(pytester.path / "results.json", pytester.path / "one-file.json")
    refused = run(pytester, "--baseline", "one-file.json", "--results-json", "")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "one-file.json: a spot check is not a baseline: it ran 4 of the" in refused.stderr.str()


def test_a_candidate_that_does_not_run_every_baseline_case_is_unmeasured_naming_them(pytester):
    """The baseline ran the WER and judge-score ratios; the candidate turns the WER ratio off in its thresholds,
    which would leave only cases it passes: each missing case is an unmeasured case of the candidate, naming the
    baseline's case, and the verdict is unmeasured, not pass."""
    project = gate_project(pytester, "test_wer.py")
    run(project, "--results-json", "released.json")
    assert results(project, "released.json")["verdict"] != "fail"
    (project.path / "thresholds.yaml").write_text(
        thresholds_for_modules(["test_wer.py"]) + "\nwer_ratio:\n  defaults:\n    enabled: false\n"
    )
    result = run(project, "--baseline", "released.json")
    written = results(project)
    assert result.ret == EXIT_UNMEASURED and written["verdict"] == "unmeasured"
    missing = [case for case in written["cases"] if case["check"] == "wer_ratio"]
    assert sorted(case["id"] for case in missing) == ["sim:fair-demo-accent", "sim:fair-demo-gender"]
    assert all(case["status"] == "unmeasured" and case["cause"]["kind"] == "config" for case in missing)
    assert all("is not in this run's gate (wer_ratio is turned off in" in case["message"] for case in missing)
    assert "not measured (config" in result.stdout.str() and "released.json" in result.stdout.str()
    assert "wer_ratio" in written["scope"]["off"]


def test_a_changed_corpus_is_judged_by_its_absolute_thresholds_only(pytester):
    """The baseline's recorded content hash of the corpus differs from this run's: no case is paired (status
    unsupported, the message says why), whatever the two runs' records would say."""
    project = gate_project(pytester, "test_wer.py")
    run(project, "--results-json", "released.json")
    released = results(project, "released.json")
    released["metadata"]["corpora"]["demo"]["hash"] = "0" * 16
    (project.path / "released.json").write_text(json.dumps(released))
    run(project, "--baseline", "released.json")
    cases = [case for case in decided_cases(results(project)) if case["check"] == "wer_ratio"]
    assert cases and all(case["baseline"]["status"] == "unsupported" for case in cases)
    assert all("corpus 'demo' differs from the one in the baseline" in case["baseline"]["message"] for case in cases)
    # judged by the absolute thresholds alone: passed, or unmeasured by design (27 speakers cannot detect 1.11)
    assert all(case.get("release") == "pass" or case["by_design"] for case in cases)


def test_a_failing_case_is_a_known_failure_only_when_compared():
    assert release_outcome(False, False, True, False) == "known failure"
    assert release_outcome(False, False, False, False) == "new failure"  # unsupported: never a known failure
    assert release_outcome(False, False, False, None) == "new failure"
    assert release_outcome(False, True, True, False) == "regression"
    assert release_outcome(True, False, False, False) == "pass"
    assert release_outcome(True, False, True, False) == "no regression"


def test_changed_corpus_names_both_hashes_and_ignores_a_corpus_the_baseline_did_not_hash():
    baseline = Baseline("released.json", "m", {}, {"demo": "aaa", "old": None})
    corpora = {"demo": SimpleNamespace(content_hash="bbb"), "old": SimpleNamespace(content_hash="ccc")}
    reason = baseline.changed_corpus("demo", corpora)
    assert "content hash aaa there, bbb here" in reason and "absolute thresholds only" in reason
    assert baseline.changed_corpus("demo", {"demo": SimpleNamespace(content_hash="aaa")}) is None
    assert baseline.changed_corpus("old", corpora) is None  # no hash recorded: nothing to compare
    assert baseline.changed_corpus("stereoset", corpora) is None  # a BASIS set, not a corpus of the run


def test_candidate_case_id_replaces_the_baseline_model():
    assert candidate_case_id("sim:fair-demo-gender", "sim:fair", "sim:biased") == "sim:biased-demo-gender"
    assert candidate_case_id("other-id", "sim:fair", "m") == "m-other-id"
