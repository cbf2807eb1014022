"""The README's "For example" commands are true as written (issue 47, item 9).

Each command of the block is run here as the README gives it (``.venv/bin/python`` is this interpreter; the
outputs and the cache go to a temporary folder, as ``--results-json``, ``--report`` and ``--cache-dir`` say), and
the claim of its comment is checked: the cases it runs, its workers, its exit status and each model's verdict as
results.json's decision holds it. The release example (``--baseline`` the shipped voice-blind results) is run, and
its figures checked against the README, by ``tests/gate/test_gate_end_to_end.py``'s
``test_release_example_gates_the_voice_aware_demo_against_the_voice_blind_release``; here its command is checked
to name that baseline. The ``hf:/ckpts/1.3`` command needs a real checkpoint and its previous release's results;
only its form is checked.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gate import DEMO_RELEASE_RESULTS
from harness.gate.outcomes import EXIT_BIAS_FAILURE
from harness.results import RunResults, read_results

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def example_commands() -> dict[str, str]:
    """The block's commands (the arguments after ``pytest fairness_tests``) -> the claim of each one's comment."""
    block = README.read_text().split("For example:", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = {}
    for line in block.strip().splitlines():
        command, _, comment = line.partition("#")
        prefix = ".venv/bin/python -m pytest fairness_tests"
        assert command.startswith(prefix), line
        commands[command.removeprefix(prefix).strip()] = comment.strip()
    return commands


def run_example(arguments: str, folder: Path) -> tuple[int, str, RunResults]:
    """Run ``pytest fairness_tests <arguments>`` from ``folder`` as the README does, writing there."""
    command = [
        sys.executable, "-m", "pytest", str(REPO / "fairness_tests"), *shlex.split(arguments),
        "--rootdir", str(REPO), "-p", "no:cacheprovider", "--cache-dir", str(folder / "cache"),
        "--results-json", str(folder / "results.json"), "--report", str(folder / "report.html"),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=900)
    output = finished.stdout + finished.stderr
    return finished.returncode, output, read_results(folder / "results.json")


def test_the_block_holds_the_commands_these_tests_run():
    assert list(example_commands()) == [
        "-k advisory",
        "-n 2",
        "--model sim:fair --model sim:biased",
        "--baseline harness/data/demo_outputs/voice-blind/results.json",
        "--model hf:/ckpts/1.3 --baseline runs/1.2/results.json",
    ]


@pytest.mark.slow
def test_keyword_advisory_runs_only_the_advisory_checks(tmp_path):
    assert example_commands()["-k advisory"] == "only the Advisory checks"
    status, output, results = run_example("-k advisory", tmp_path)
    assert results.cases and all("advisory" in case.id for case in results.cases), output[-2000:]
    assert {case.variant for case in results.cases} == {"advisory"}
    assert results.verdict == "spot-check" and results.scope.ran == len(results.cases) < results.scope.gate_cases
    assert status == EXIT_BIAS_FAILURE  # the default's advisory gender case fails (the quick start's advisory 30.2)


@pytest.mark.slow
def test_two_workers_give_the_first_commands_verdict(tmp_path):
    assert example_commands()["-n 2"] == "two xdist workers"
    status, output, results = run_example("-n 2", tmp_path)
    assert results.metadata.workers == 2 and "2/2 workers" in output, output[-2000:]
    summary = results.summary
    quoted = (
        f"The first command **exits 1** ({summary.cases} cases: {summary.passed} passed, {summary.failed} failed, "
        f"{summary.unmeasured} unmeasured)"
    )
    assert status == 1 and results.verdict == "fail" and quoted in README.read_text()


@pytest.mark.slow
def test_the_simulators_give_the_verdicts_the_comment_states(tmp_path):
    arguments = "--model sim:fair --model sim:biased"
    comment = example_commands()[arguments]
    status, output, results = run_example(arguments, tmp_path)
    stated = dict(re.findall(r"(sim:\w+) ([A-Z]+)", comment))
    assert {model.model: model.verdict.upper() for model in results.decision.models} == stated, output[-2000:]
    assert f"exit {status}" in comment
    for model, verdict in stated.items():
        assert re.search(rf"^lalm-fairness: model {model}: {verdict} \(", output, flags=re.MULTILINE)


def test_the_release_example_names_the_shipped_previous_release():
    arguments = next(command for command in example_commands() if command.startswith("--baseline"))
    assert example_commands()[arguments] == "against the demo's previous release"
    assert REPO / arguments.split()[1] == DEMO_RELEASE_RESULTS and DEMO_RELEASE_RESULTS.is_file()
    end_to_end = (REPO / "tests" / "gate" / "test_gate_end_to_end.py").read_text()
    assert "def test_release_example_gates_the_voice_aware_demo_against_the_voice_blind_release" in end_to_end
    assert read_results(DEMO_RELEASE_RESULTS).verdict in ("pass", "fail", "unmeasured")  # a release, not a spot check


def test_the_release_gating_example_gates_a_checkpoint_against_its_previous_results():
    arguments = "--model hf:/ckpts/1.3 --baseline runs/1.2/results.json"
    assert example_commands()[arguments] == "release gating"
    model, baseline = shlex.split(arguments)[1], shlex.split(arguments)[3]
    assert model.startswith("hf:") and baseline.endswith("results.json")
