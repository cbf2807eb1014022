"""The gate's own hook, ``pytest_lalm_fairness_results``: a conftest that implements it receives the run's typed
:class:`harness.results.RunResults` once, before results.json and the report are written."""

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.gate.outcomes import EXIT_UNMEASURED

from support.gate import thresholds_for_modules

REPO = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]
DOC_EXAMPLE = re.search(
    r"## Acting on a run's results.*?```python\n(.*?)```", (REPO / "docs" / "extending.md").read_text(), re.DOTALL
).group(1)

CONFTEST = """
import json
from pathlib import Path

from harness.results import RunResults

pytest_plugins = ["harness.plugin"]


def pytest_lalm_fairness_results(results):
    calls = json.loads(Path("hooked.json").read_text()) if Path("hooked.json").exists() else []
    calls.append(
        {
            "typed": isinstance(results, RunResults),
            "verdict": results.verdict,
            "case_ids": [case.id for case in results.cases],
            "statuses": [case.status for case in results.cases],
            "results_json_written": Path("results.json").exists(),
            "report_written": Path("report.html").exists(),
        }
    )
    Path("hooked.json").write_text(json.dumps(calls))
"""


def test_a_conftest_implementing_the_hook_receives_the_typed_results_before_they_are_written(pytester):
    """A fast gate run (the score-ratio cases without a judge are unmeasured before any model call), with two
    implementations: the conftest's, which records what it is given, and docs/extending.md's example plugin."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(example_plugin=DOC_EXAMPLE)
    pytester.syspathinsert()
    shutil.copy(REPO / "fairness_tests" / "test_wer.py", pytester.path / "test_wer.py")
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(["test_wer.py"]))
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-p", "example_plugin", "--model", "sim:fair", "-k", "score_ratio"
    )
    assert result.ret == EXIT_UNMEASURED
    [call] = json.loads((pytester.path / "hooked.json").read_text())
    written = json.loads((pytester.path / "results.json").read_text())
    assert call["typed"] is True
    assert call["verdict"] == written["verdict"] == "spot-check"
    assert call["case_ids"] == [case["id"] for case in written["cases"]]
    assert call["statuses"] == [case["status"] for case in written["cases"]] == ["unmeasured"] * 2
    assert (call["results_json_written"], call["report_written"]) == (False, False)
    listed = (pytester.path / "unmeasured.txt").read_text().splitlines()
    assert listed[0] == "verdict spot-check" and len(listed) == 3
    assert all(line.startswith("score_ratio sim:fair-demo-") for line in listed[1:])
    assert "pass --judge SPEC" in "".join(listed)


def test_a_conftest_implementing_the_hook_runs_in_a_run_that_is_no_gate_run(pytester):
    """The entry point declares the hook before any conftest is read, so a team's conftest that implements it does
    not break its other test runs (pytest refuses a ``pytest_*`` function it has no specification for), and the
    hook is not called where no gate ran."""
    pytester.makeconftest(
        "def pytest_lalm_fairness_results(results):\n    raise AssertionError('called outside a gate run')\n"
    )
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
