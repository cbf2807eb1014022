"""What an installation pays for (issue 47 item 7): the test suite's own tools are in the ``[test]`` extra, not the
run-time dependencies, and nothing the package or its gate modules ship imports them."""

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_ONLY = ("hypothesis",)
"""Packages only the test suite imports (hypothesis' pytest plugin would slow every pytest run of a user)."""
SHIPPED = [REPO / "harness", REPO / "lalm_fairness_pytest", REPO / "fairness_tests", REPO / "conftest.py"]


def requirement_names(requirements: list[str]) -> set[str]:
    return {requirement.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip() for requirement in requirements}


def imported_top_level_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_test_suites_tools_are_in_the_test_extra_and_not_run_time_requirements():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    run_time = requirement_names(project["dependencies"])
    test_extra = requirement_names(project["optional-dependencies"]["test"])
    for package in TEST_ONLY:
        assert package not in run_time and package in test_extra, package


def test_nothing_shipped_imports_a_test_only_package():
    files = [file for root in SHIPPED for file in ([root] if root.is_file() else sorted(root.rglob("*.py")))]
    assert len(files) > 50
    importing = {
        str(file.relative_to(REPO)): sorted(imported_top_level_modules(file) & set(TEST_ONLY))
        for file in files
        if imported_top_level_modules(file) & set(TEST_ONLY)
    }
    assert importing == {}
