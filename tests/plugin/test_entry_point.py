"""The pytest entry point (``lalm_fairness_pytest``) costs nothing when the gate is not run: importing it imports
nothing but pytest's own modules and itself; it loads :mod:`harness.plugin` for a gate run only; in a folder whose
own ``harness/`` shadows the package, an unrelated run is untouched and a gate run stops with one error naming the
folder. (Its start-up time against bare pytest: ``benchmarks/bench_plugin_startup.py``.)

The runs here are subprocesses with plugin autoloading off and the entry point named with ``-p``, so that they
test this checkout's entry point whatever an installed copy of the package registers."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lalm_fairness_pytest
from lalm_fairness_pytest import options

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "pandas", "numpy", "jinja2", "torch", "harness", "yaml", "sklearn", "transformers")
ALLOWED_BEYOND_PYTEST = {"lalm_fairness_pytest"}


def python(*arguments, cwd=REPO, **environment):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **environment}
    return subprocess.run([sys.executable, *arguments], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def top_level_modules_after(statement):
    done = python("-c", f"import sys; {statement}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))")
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_importing_the_entry_point_imports_only_pytest_and_itself():
    with_pytest = top_level_modules_after("import pytest")
    with_entry_point = top_level_modules_after("import pytest, lalm_fairness_pytest")
    assert with_entry_point - with_pytest <= ALLOWED_BEYOND_PYTEST, with_entry_point - with_pytest
    assert not {module for module in with_entry_point if module in HEAVY}


def test_the_option_defaults_named_in_the_help_are_the_gates():
    from harness.gate import DEFAULT_JUDGE
    from harness.gate.config import DEFAULT_CACHE_DIR, DEFAULT_MODELS

    assert (options.DEFAULT_MODELS, options.DEFAULT_CACHE_DIR, options.DEFAULT_JUDGE) == (
        DEFAULT_MODELS,
        DEFAULT_CACHE_DIR,
        DEFAULT_JUDGE,
    )
    assert lalm_fairness_pytest.PACKAGE_FOLDER == REPO / "harness"


def unrelated_project(folder):
    folder.mkdir()
    (folder / "test_unrelated.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    return folder


def test_an_unrelated_run_loads_no_harness_module(tmp_path):
    project = unrelated_project(tmp_path / "team")
    (project / "conftest.py").write_text(
        "import sys\n\ndef pytest_sessionfinish(session):\n"
        "    print('harness modules:', sorted(m for m in sys.modules if m.split('.')[0] == 'harness'))\n"
    )
    done = python("-m", "pytest", "-p", "lalm_fairness_pytest", "-p", "no:cacheprovider", "-s", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "harness modules: []" in done.stdout and "1 passed" in done.stdout


def test_a_gate_module_collected_without_gate_options_loads_the_plugin(tmp_path):
    project = unrelated_project(tmp_path / "team")
    (project / "test_gate.py").write_text("from harness.gate_tests.test_vibe import *  # noqa: F403\n")
    done = python(
        "-m", "pytest", "-p", "lalm_fairness_pytest", "-p", "no:cacheprovider", "--collect-only",
        "--rootdir", str(project), cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "<Function test_ntvd[" in done.stdout and "<Function test_one>" in done.stdout
    assert "lalm-fairness: thresholds" in done.stdout  # the report header's line, said when the plugin loads


def test_under_xdist_the_controller_loads_the_plugin_when_a_worker_collects_a_gate_test(tmp_path):
    """No gate option: the controller, which collects nothing, learns from the workers that this is a gate run,
    and writes results.json (one case selected, served from the demo's shipped outputs)."""
    project = unrelated_project(tmp_path / "team")
    (project / "test_gate.py").write_text("from harness.gate_tests.test_vibe import *  # noqa: F403\n")
    done = python(
        "-m", "pytest", "-p", "lalm_fairness_pytest", "-p", "xdist", "-p", "no:cacheprovider", "-n", "2",
        "-k", "test_one or story-gender", "--rootdir", str(project), cwd=project,
    )  # fmt: skip
    assert done.returncode in (1, 8), done.stdout + done.stderr  # a spot check: 8 where its case passed
    results = json.loads((project / "results.json").read_text())
    assert [case["check"] for case in results["cases"]] == ["ntvd"]
    assert "lalm-fairness: verdict" in done.stdout


def test_in_a_shadowed_folder_an_unrelated_run_is_untouched_and_a_gate_run_names_the_folder(tmp_path):
    project = unrelated_project(tmp_path / "team")
    (project / "harness").mkdir()
    (project / "harness" / "__init__.py").write_text('"""The team\'s own harness."""\n')
    unrelated = python("-m", "pytest", "-p", "lalm_fairness_pytest", "-p", "no:cacheprovider", "-q", cwd=project)
    assert unrelated.returncode == 0, unrelated.stdout + unrelated.stderr
    assert "1 passed" in unrelated.stdout
    gate = python(
        "-m", "pytest", "-p", "lalm_fairness_pytest", "-p", "no:cacheprovider", "-q", "--model", "sim:fair",
        cwd=project,
    )  # fmt: skip
    assert gate.returncode == pytest.ExitCode.USAGE_ERROR, gate.stdout + gate.stderr
    errors = [line for line in (gate.stdout + gate.stderr).splitlines() if "lalm-fairness" in line]
    assert len(errors) == 1 and f"the folder {project / 'harness'} shadows the installed package" in errors[0]


def test_in_a_shadowed_folder_the_environments_pytest_runs_the_gate(tmp_path):
    """The README's "In your own repository" command (issue 47 item 7): the environment's ``pytest`` script, unlike
    ``python -m pytest``, does not put the current folder first on ``sys.path``, so beside a team's own ``harness/``
    package it imports the installed one and the gate runs (here one case, a spot check)."""
    script = Path(sys.executable).parent / "pytest"
    if not script.is_file():
        pytest.skip(f"no pytest script beside {sys.executable}")
    project = unrelated_project(tmp_path / "team")
    (project / "harness").mkdir()
    (project / "harness" / "__init__.py").write_text('"""The team\'s own harness."""\n')
    environment = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    gate = subprocess.run(
        [str(script), "-p", "lalm_fairness_pytest", "-p", "no:cacheprovider", "-q", "--pyargs", "harness.gate_tests.test_vibe",
         "-k", "story and gender", "--model", "sim:fair", "--permutations", "199", "--rootdir", str(project)],
        cwd=project, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert gate.returncode in (1, 7, 8), gate.stdout[-3000:] + gate.stderr[-3000:]
    assert "shadows the installed package" not in gate.stdout + gate.stderr
    assert json.loads((project / "results.json").read_text())["verdict"] == "spot-check"
