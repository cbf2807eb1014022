"""The built wheel, installed into a fresh virtual environment, runs the gate from an empty directory that
holds nothing but its own thresholds.yaml (the README's "In your own repository")."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THRESHOLDS = """\
ntvd:
  defaults:
    max_ntvd: 100
"""


def run(*command, cwd=None, timeout=600, allowed=(0,)):
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode in allowed, f"{command}: {result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.slow
def test_the_installed_wheel_runs_the_gate_from_an_empty_directory(tmp_path):
    run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "wheels", REPO
    )
    wheel = next((tmp_path / "wheels").glob("lalm_fairness-*.whl"))
    venv = tmp_path / "venv"
    run("python3", "-m", "venv", venv)
    run(venv / "bin" / "pip", "install", "-q", "--no-compile", wheel, timeout=900)  # compiled as imported
    project = tmp_path / "model-team"
    project.mkdir()
    (project / "thresholds.yaml").write_text(THRESHOLDS)
    located = run(venv / "bin" / "python", "-c", "import harness; print(harness.__file__)", cwd=project)
    assert located.stdout.strip().startswith(str(venv))
    result = run(
        venv / "bin" / "python",
        "-m",
        "pytest",
        "--pyargs",
        "harness.gate_tests",
        "--model",
        "sim:fair",
        "--permutations",
        "999",
        "-p",
        "no:cacheprovider",
        "-q",
        cwd=project,
        timeout=900,
        allowed=(0, 1, 7),
    )
    results = json.loads((project / "results.json").read_text())
    assert result.returncode == {"pass": 0, "fail": 1, "unmeasured": 7}[results["verdict"]]
    assert results["metadata"]["thresholds"]["source"] == "thresholds.yaml"  # relative to the folder pytest ran in
    decided = [case.get("measured") or case for case in results["cases"]]
    # the team's defaults never shadow the built-in accent bar (issue 59): 100 for gender, 30 for accent
    assert {(case["dimension"], case["threshold"]["max_ntvd"]) for case in decided if case["check"] == "ntvd"} == {
        ("gender", 100),
        ("accent", 30.0),
    }
    unmeasured = [case for case in results["cases"] if case.get("status") == "unmeasured" and not case.get("measured")]
    assert unmeasured and all("test_score_ratio" in case["nodeid"] for case in unmeasured)  # no --judge given
    assert any("pass --judge SPEC" in case["message"] for case in unmeasured)
    assert {case["check"] for case in decided if case.get("status") != "unmeasured"} == {
        "ntvd",
        "wer_ratio",
        "icat",
        "personalization",
        "classification",
        "robustness",
        "counterfactual",
    }
    assert (project / "report.html").is_file() and (project / ".lalm_cache").is_dir()
