"""Generation progress: a tqdm bar on a terminal, plain lines in logs and in xdist workers, one bar per model x task."""

import io
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from harness.core import progress
from harness.core.progress import Progress
from harness.models import BACKENDS, register_backend

from support.gate import gate_project

pytest_plugins = ["pytester"]


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    monkeypatch.delenv("LALM_PROGRESS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def test_xdist_worker_prints_plain_lines_even_on_a_terminal(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    out = Tty()
    with Progress(20, "m story", stream=out) as bar:
        bar.update(20)
    assert (
        "\r" not in out.getvalue()
        and out.getvalue().startswith("[lalm] m story [")
        and "20/20 (100%)" in out.getvalue()
    )


def test_a_progress_inside_another_stays_silent():
    outer_out, inner_out = Tty(), Tty()
    with Progress(64, "m story", stream=outer_out) as outer:
        with Progress(32, "m generate", stream=inner_out) as inner:
            inner.update(32)
        outer.advance_to(32)
        outer.advance_to(20)  # never backwards
        assert outer.done == 32
        outer.advance_to(64)
    assert inner_out.getvalue() == ""
    assert outer_out.getvalue().rstrip("\n").split("\r")[-1].startswith("[lalm] m story: 100%")


def test_attached_terminal_receives_the_bar_inside_the_uncaptured_context():
    terminal, entered = Tty(), []

    class Uncaptured:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return False

    progress.attach_terminal(terminal, Uncaptured)
    try:
        with Progress(16, "m advisory") as bar:
            bar.update(16)
    finally:
        progress.detach_terminal()
    assert "16/16" in terminal.getvalue() and entered


def test_cached_model_shows_one_bar_per_model_and_task(tmp_path):
    from harness.cache import OutputCache
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation.cached_model import CachedModel

    register_backend("echo", "support.gate:EchoBackend")
    terminal = Tty()
    progress.attach_terminal(terminal)
    try:
        model = CachedModel("echo:m", OutputCache(tmp_path), DecodingParams(), chunk_size=16)
        model.generate([GenerationRequest(f"question {i}") for i in range(40)], label="demo/story")
    finally:
        progress.detach_terminal()
        BACKENDS.pop("echo")
    text = terminal.getvalue()
    assert text.count("[lalm] echo:m demo/story: 100%") == 1 and "40/40" in text and "generate" not in text


def run_in_terminal(args, cwd, timeout=600):
    """Run ``args`` with stdin, stdout and stderr on a pseudo-terminal; its exit status and everything it wrote."""
    leader, follower = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160")
    env.pop("PYTEST_XDIST_WORKER", None)
    process = subprocess.Popen(args, cwd=cwd, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    output, deadline = bytearray(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            output += data
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=60), output.decode("utf-8", "replace")


def gate_args(project, *extra):
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--model",
        "sim:biased",
        "-k",
        "advisory and gender",
        "--permutations",
        "99",
        "--report",
        "",
        "--results-json",
        "",
        *extra,
    ]


def left_after_the_probe() -> str:
    """``N/N`` of a task's bar: the demo's 324 recordings less the audio floor's task probe's, which it answered with
    their own audio before the first case (the audio floor's task probe, harness/gate/audio_floor.py)."""
    from harness.gate.audio_floor import AudioFloorSettings
    from harness.thresholds import packaged_thresholds

    left = 324 - AudioFloorSettings.from_thresholds(packaged_thresholds()).probe_requests_per_task
    return f"{left}/{left}"


def test_gate_on_a_terminal_draws_the_bar_and_in_a_log_prints_plain_lines(pytester):
    project = gate_project(pytester, "test_vibe.py")
    status, screen = run_in_terminal(gate_args(project, "--cache-dir", "tty-cache"), project.path)
    assert status == 1, screen[-2000:]
    bars = re.findall(r"\r\[lalm\] sim:biased demo/advisory: +\d+%[^\r\n]*", screen)
    assert bars and left_after_the_probe() in bars[-1] and "item/s]" in bars[-1]
    log = subprocess.run(
        gate_args(project, "--cache-dir", "log-cache", "-s"),
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "\r" not in log.stderr
    assert re.search(
        rf"^\[lalm\] sim:biased demo/advisory \[#+\] {left_after_the_probe()} \(100%\)", log.stderr, flags=re.M
    ), log.stderr[-2000:]


def test_gate_under_xdist_on_a_terminal_draws_no_bar(pytester):
    project = gate_project(pytester, "test_vibe.py")
    status, screen = run_in_terminal(gate_args(project, "--cache-dir", "xdist-cache", "-n", "2"), project.path)
    assert status == 1, screen[-2000:]
    assert "item/s" not in screen and "\r[lalm]" not in screen
    lines = [
        line.strip("\r") for line in screen.split("\n") if "[lalm]" in line
    ]  # in the failed cases' captured stderr
    assert lines and all(
        re.fullmatch(r"\[lalm\] sim:biased (\S+|audio floor task probe) \[[#.]{24}\] \d+/\d+ .* eta \S+", line)
        for line in lines
    ), lines
