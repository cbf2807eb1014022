"""A run that stops before it finishes never looks like a verdict (README, "What a failure means").

Each test runs the gate as a user does, in a real ``pytest`` process, and stops it with a real signal (or
``-x``): results.json, report.html and summary.md then say INCOMPLETE with the tests that did not run, the
exit status is 2, and the previous run's files are kept beside them as ``*.previous``. A setup error
(exit 4) leaves no earlier run's outputs at the paths this run would have written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.gate.outcomes import EXIT_SPOT_CHECK

REPO = Path(__file__).resolve().parents[2]

# A model that answers as sim:fair, one request per 20 ms, so that a signal lands mid-generation.
SLOW_BACKEND = """
import time
from pathlib import Path

from harness.models import build_backend, register_backend
from harness.models.base import Backend


class SlowBackend(Backend):
    def __init__(self, spec, target, options):
        self.spec = spec
        self.inner = build_backend("sim:fair", options)

    def fingerprint(self):
        return "slow:" + self.inner.fingerprint()

    def load(self):
        return SlowModel(self.inner.load())


class SlowModel:
    def __init__(self, inner):
        self.inner = inner

    def generate(self, requests, params):
        Path("generating.flag").touch()
        time.sleep(0.02 * len(requests))
        return self.inner.generate(requests, params)


register_backend("slow", "slow_backend:SlowBackend")
"""

# A Ctrl-C that lands inside a finaliser: Python prints "Exception ignored in ..." and the KeyboardInterrupt is gone.
LOSES_AN_INTERRUPT = """
import os
import signal


class SignalledInAFinaliser:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here, inside the finaliser
            pass


finished = []


def pytest_runtest_teardown(item):
    finished.append(item.nodeid)
    if len(finished) == 3:
        SignalledInAFinaliser()  # collected at once
"""


def start_gate(folder: Path, *args: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "fairness_tests"),
        "--rootdir",
        str(REPO),
        "-p",
        "no:cacheprovider",
        "-v",
        "--cache-dir",
        str(folder / "cache"),
        "--results-json",
        str(folder / "runs" / "1.3" / "results.json"),
        "--report",
        str(folder / "runs" / "1.3" / "report.html"),
        "--summary-md",
        str(folder / "runs" / "1.3" / "summary.md"),
        # what is interrupted is the run, not its statistics' precision: 999 permutations a case, not 10,000
        "--permutations",
        "999",
        *args,
    ]
    return subprocess.Popen(
        command,
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{folder}:{REPO}"},
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """A background job of a non-interactive shell starts with SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler: the gate must get the signal as a user's terminal gives it, however the suite runs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_after(process: subprocess.Popen, sig: int, when) -> tuple[int, str]:
    """Send ``sig`` once ``when(lines)`` holds for the output so far; the exit status and the whole output."""
    lines = []
    deadline = time.monotonic() + 300
    for line in process.stdout:
        lines.append(line)
        if when(lines) or time.monotonic() > deadline:
            process.send_signal(sig)
            break
    lines.append(process.stdout.read())
    return process.wait(timeout=120), "".join(lines)


def passed_lines(count: int):
    return lambda lines: sum(" PASSED" in line for line in lines) >= count


def assert_incomplete(folder: Path, status: int, output: str, stopped_by: str) -> dict:
    run = folder / "runs" / "1.3"
    results = json.loads((run / "results.json").read_text())
    assert status == 2, output[-3000:]
    assert results["verdict"] == "incomplete" and results["incomplete"]["stopped_by"].startswith(stopped_by)
    not_run = results["incomplete"]["not_run"]
    assert not_run and results["incomplete"]["selected"] == results["incomplete"]["finished"] + len(not_run)
    assert all("::" in nodeid for nodeid in not_run)
    assert "PASS — may be released" not in (run / "report.html").read_text()
    report = (run / "report.html").read_text()
    assert "INCOMPLETE</span> — do not release: the run did not finish" in report and "Every case passed" not in report
    assert (run / "summary.md").read_text().startswith("### Voice-induced bias gate: **INCOMPLETE**")
    assert "lalm-fairness: INCOMPLETE, do not release" in output
    return results


@pytest.fixture
def previous_run(tmp_path):
    """A complete earlier run's results.json at the path the next run writes."""
    run = tmp_path / "runs" / "1.3"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"schema_version": 2, "verdict": "pass", "cases": []}))
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_statistics_writes_incomplete_and_keeps_the_previous_run(previous_run, sig):
    """The VIBE nTVD cases (10 of the gate's, each a permutation test) stopped after the fifth has passed."""
    status, output = stop_after(start_gate(previous_run, "--model", "sim:fair", "-k", "ntvd"), sig, passed_lines(5))
    results = assert_incomplete(previous_run, status, output, "an interruption")
    assert 5 <= results["summary"]["cases"] < 10
    kept = json.loads((previous_run / "runs" / "1.3" / "results.json.previous").read_text())
    assert kept["verdict"] == "pass"


def test_a_ctrl_c_lost_in_a_finaliser_still_stops_the_run_at_the_next_case(previous_run):
    (previous_run / "loses_an_interrupt.py").write_text(LOSES_AN_INTERRUPT)
    finished = start_gate(previous_run, "--model", "sim:fair", "-p", "loses_an_interrupt", "-W", "ignore")
    output = finished.communicate(timeout=600)[0]
    results = assert_incomplete(previous_run, finished.returncode, output, "an interruption")
    assert results["summary"]["cases"] == 3, output[-3000:]


@pytest.mark.slow
def test_a_signal_mid_generation_under_xdist_writes_incomplete(tmp_path):
    (tmp_path / "slow_backend.py").write_text(SLOW_BACKEND)
    process = start_gate(tmp_path, "--model", "slow:fair", "-n", "2", "-p", "slow_backend")
    status, output = stop_after(process, signal.SIGTERM, lambda lines: (tmp_path / "generating.flag").exists())
    assert_incomplete(tmp_path, status, output, "an interruption")


@pytest.mark.slow
def test_stopping_at_the_first_failure_is_incomplete_not_a_fail(tmp_path):
    finished = start_gate(tmp_path, "--model", "sim:biased", "-x")
    output = finished.communicate(timeout=600)[0]
    results = assert_incomplete(tmp_path, finished.returncode, output, "-x / --maxfail")
    assert results["summary"]["failed"] == 1


def test_a_setup_error_leaves_no_earlier_outputs_at_this_runs_paths(previous_run):
    finished = start_gate(previous_run, "--model", "nosuchbackend:x")
    output = finished.communicate(timeout=300)[0]
    assert finished.returncode == 4, output[-2000:]
    run = previous_run / "runs" / "1.3"
    assert not (run / "results.json").exists() and (run / "results.json.previous").exists()


def test_missing_output_folders_are_made_and_an_unwritable_path_is_refused_before_any_case(tmp_path):
    (tmp_path / "runs").write_text("a file where a folder should be")
    finished = start_gate(tmp_path, "--model", "sim:fair")
    output = finished.communicate(timeout=300)[0]
    assert finished.returncode == 4, output[-2000:]
    assert f"ERROR: lalm-fairness: --results-json {tmp_path}/runs/1.3/results.json: cannot be written" in output
    assert " PASSED" not in output
    (tmp_path / "runs").unlink()
    finished = start_gate(tmp_path, "--model", "sim:fair", "-k", "ntvd and advisory")
    output = finished.communicate(timeout=300)[0]
    # a spot check (-k): passed (8), failed (1) or unmeasured by design (7)
    assert finished.returncode in (1, 7, EXIT_SPOT_CHECK), output[-2000:]
    assert json.loads((tmp_path / "runs" / "1.3" / "results.json").read_text())["verdict"] == "spot-check"


def test_an_incomplete_run_is_refused_as_a_baseline(tmp_path):
    from harness.gate.baseline import load_baseline

    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": 2, "verdict": "incomplete", "cases": []}))
    with pytest.raises(ValueError, match="an incomplete run .* is not a baseline"):
        load_baseline(path)


def test_a_second_run_on_the_same_results_is_refused_before_any_case_and_touches_nothing(previous_run):
    """Issue 23: two concurrent runs in one folder. The first holds ``results.json.lock`` for its whole run; the
    second stops with one ERROR line naming it (exit 4), moving and writing nothing, then the lock is gone."""
    from harness.core.files import file_lock

    run = previous_run / "runs" / "1.3"
    before = (run / "results.json").read_bytes()
    with file_lock(run / "results.json.lock", wait=False):
        finished = start_gate(previous_run, "--model", "sim:fair", "-k", "advisory")
        output = finished.communicate(timeout=300)[0]
    assert finished.returncode == 4, output[-2000:]
    assert f"ERROR: lalm-fairness: another gate run (pid {os.getpid()}) is writing {run}/results.json" in output
    assert " PASSED" not in output
    assert (run / "results.json").read_bytes() == before and not (run / "results.json.previous").exists()
    assert not (run / "results.json.lock").exists()
    finished = start_gate(previous_run, "--model", "sim:fair", "-k", "advisory")
    output = finished.communicate(timeout=300)[0]
    assert finished.returncode == EXIT_SPOT_CHECK, output[-2000:]
    assert not (run / "results.json.lock").exists()
    assert not list((previous_run / "cache").glob(".*.lock")), "the cache's generation locks are removed once released"


def start_plain_gate(folder: Path) -> subprocess.Popen:
    """The README's first command as a user runs it, in ``folder`` (its rootdir): no gate option, so the run is
    known to be a gate run only from the test files it names; outputs at their defaults there."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "fairness_tests"),
            "--rootdir",
            str(folder),
            "-p",
            "no:cacheprovider",
            "-v",
        ],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=_default_sigint,
    )


def assert_no_earlier_verdict(folder: Path, status: int, output: str) -> None:
    """Exit 2, and results.json is absent or this run's INCOMPLETE one; the earlier PASS kept aside."""
    assert status == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    results = folder / "results.json"
    assert not results.exists() or json.loads(results.read_text())["verdict"] == "incomplete", output[-3000:]
    assert json.loads((folder / "results.json.previous").read_text())["verdict"] == "pass"


@pytest.mark.parametrize("seconds", [0.5, 1.5, 2.5])
def test_ctrl_c_at_any_moment_of_the_start_exits_2_and_leaves_no_earlier_verdict(tmp_path, seconds):
    """Issue 59, item 2: Ctrl-C 0.5-2.5 s into the README's first command (plugin imports, the gate being built,
    collection) left the previous run's PASS in results.json, and at 2.5 s exited 130."""
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 2, "verdict": "pass", "cases": []}))
    process = start_plain_gate(tmp_path)
    time.sleep(seconds)
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=120)[0]
    assert_no_earlier_verdict(tmp_path, process.returncode, output)


def test_ctrl_c_right_after_collection_writes_incomplete(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 2, "verdict": "pass", "cases": []}))
    status, output = stop_after(start_plain_gate(tmp_path), signal.SIGINT, lambda lines: "collected" in lines[-1])
    assert_no_earlier_verdict(tmp_path, status, output)
    assert json.loads((tmp_path / "results.json").read_text())["verdict"] == "incomplete"


def test_a_run_of_other_tests_keeps_its_own_signal_handlers(tmp_path):
    """The entry point's early handler is given back in a run that is not a gate run (it pays nothing)."""
    (tmp_path / "test_other.py").write_text(
        "import signal\n\ndef test_handlers():\n"
        "    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
    )
    (tmp_path / "results.json").write_text("an earlier run's")
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=_default_sigint,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout[-2000:]
    assert (tmp_path / "results.json").read_text() == "an earlier run's"
