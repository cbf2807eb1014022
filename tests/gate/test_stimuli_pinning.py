"""Stimuli are pinned by content (issue 58): each BASIS item set's content hash and recording hashes are in the run
metadata, and a case whose item set changed since the baseline (a recording re-synthesised under the same ids) is
not paired with it: its comparison is ``unsupported``, naming the set and the recording; the same suite compares."""

import json
import shutil
from pathlib import Path

import pytest

from support.gate import decided_cases, thresholds_for_modules

REPO = Path(__file__).resolve().parents[2]
CHANGED = "00001_f01"

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_basis.py", pytester.path / "test_basis.py")
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(["test_basis.py"]))
    shutil.copytree(REPO / "harness" / "data" / "basis_demo", pytester.path / "suite")
    return pytester


def run(project: pytest.Pytester, *args: str) -> dict:
    project.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--cache-dir={project.path / 'cache'}", f"--basis-suite={project.path / 'suite'}",
        "--model", "sim:biased", *args,
    )  # fmt: skip
    written = args[args.index("--results-json") + 1] if "--results-json" in args else "results.json"
    return json.loads((project.path / written).read_text())


def test_a_recording_changed_under_the_same_ids_makes_its_cases_unsupported_naming_it(project):
    released = run(project, "--results-json", "released.json")
    sets = released["metadata"]["basis_suite"]["sets"]
    assert set(sets) >= {"stereoset-gender", "stereoset-age"} and CHANGED in sets["stereoset-gender"]["recordings"]

    same = run(project, "--baseline", "released.json")
    same_cases = [case for case in decided_cases(same) if case.get("baseline")]
    assert same_cases and {case["baseline"]["status"] for case in same_cases} <= {
        "compared",
        "not estimable",
        "backbone",
        "underpowered",
    }

    speech = project.path / "suite" / "stereoset" / "speech" / "gender"
    shutil.copy(speech / "00001_f02.flac", speech / f"{CHANGED}.flac")  # another voice under f01's id
    changed = run(project, "--baseline", "released.json")
    assert changed["metadata"]["basis_suite"]["sets"]["stereoset-gender"]["hash"] != sets["stereoset-gender"]["hash"]
    for case in [case for case in decided_cases(changed) if case.get("baseline")]:
        comparison = case["baseline"]
        if case["dimension"] == "gender":
            assert comparison["status"] == "unsupported", case["id"]
            assert "item set 'stereoset-gender'" in comparison["message"], case["id"]
            assert f"recordings changed: {CHANGED}" in comparison["message"], case["id"]
        else:
            assert comparison["status"] != "unsupported", (case["id"], comparison["message"])
