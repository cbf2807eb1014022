"""The extension path end to end: another package adds a check (and the simulator's answers to its prompt) through
entry points, and the gate collects it, judges it, writes its record to results.json and draws its view in the
report, with nothing of this repository edited. The package is the example of docs/extending.md,
docs/examples/refusal-gap/, installed here by a dist-info that declares the entry points of its pyproject.toml."""

import json
import os
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "refusal-gap"
pytest_plugins = ["pytester"]


def example_site(root: Path) -> Path:
    """A folder holding the example's dist-info (its name, version and entry points, from its pyproject.toml), so
    that with the example's folder on the path the registries find it as an installed distribution would be found."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items()) + "\n"
            for group, entries in project["entry-points"].items()
        )
    )
    return root


def python_path(tmp_path: Path) -> str:
    site = example_site(tmp_path / "site")
    return os.pathsep.join([str(site), str(EXAMPLE), str(REPO), os.environ.get("PYTHONPATH", "")])


def test_a_check_from_another_package_runs_through_the_gate(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path(tmp_path))
    pytester.makefile(".yaml", thresholds="refusal_gap:\n  defaults:\n    max_gap: 40\n")
    result = pytester.runpytest_subprocess(
        "--pyargs",
        "harness.gate_tests",
        "-p",
        "no:cacheprovider",
        "--model",
        "sim:fair",
        "--permutations",
        "50",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--results-json",
        "results.json",
        "--report",
        "report.html",
        "-k",
        "refusal_gap",
        "-rA",
    )
    output = result.stdout.str()
    assert "test_extensions.py::test_refusal_gap[sim:fair-demo-gender]" in output, output[-3000:]
    results = json.loads((pytester.path / "results.json").read_text())
    refusal_cases = [case for case in results["cases"] if case["check"] == "refusal_gap"]
    assert {case["dimension"] for case in refusal_cases} == {"gender", "accent"}
    assert all(
        case["threshold"] == {"max_gap": 40.0} and set(case["rates"]) and case["model"] == "sim:fair"
        for case in refusal_cases
    )
    assert all(case["passed"] == (case["value"] <= 40.0) for case in refusal_cases)
    assert all(case["message"].endswith("-> pass" if case["passed"] else "-> FAIL: bias") for case in refusal_cases)
    passing = 8 if results["verdict"] == "spot-check" else 0  # a passing spot check is not a release pass
    assert result.ret == (passing if all(case["passed"] for case in refusal_cases) else 1)
    report = (pytester.path / "report.html").read_text()
    assert "Refusal gap" in report and "The share of empty answers (refusals) by group" in report


def test_a_thresholds_key_the_extension_does_not_declare_names_the_check(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path(tmp_path))
    pytester.makefile(".yaml", thresholds="refusal_gap:\n  defaults:\n    max_ratio: 2\n")
    result = pytester.runpytest_subprocess(
        "--pyargs",
        "harness.gate_tests",
        "-p",
        "no:cacheprovider",
        "--model",
        "sim:fair",
        "--cache-dir",
        str(tmp_path / "cache"),
        "-k",
        "refusal_gap",
    )
    assert result.ret == 4
    assert (
        "refusal_gap" in result.stderr.str() + result.stdout.str()
        and "max_ratio" in result.stderr.str() + result.stdout.str()
    )
