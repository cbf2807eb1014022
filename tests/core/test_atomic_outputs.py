"""Atomic outputs (issue 13, part 3): results.json, report.html, the junit XML and cache exports are written to
a temporary file beside the target, fsynced and renamed, so a ``kill -9`` leaves the old file or the new one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.files import atomic_write, atomic_write_text

from support.gate import gate_project as make_gate_project

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]

SLOW_WRITER = """
import sys, time
from harness.core.files import atomic_write
with atomic_write(sys.argv[1], "wb") as handle:
    for k in range(10_000):
        handle.write(b"new" * 40_000)
        handle.flush()
        if k == 3:
            print("writing", flush=True)
        time.sleep(0.01)
"""


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.lalm-tmp"))


def wait_for_line(process: subprocess.Popen, marker: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if marker in line:
            return
        if not line and process.poll() is not None:
            raise AssertionError(f"the process ended (status {process.returncode}) before printing {marker!r}")
    raise AssertionError(f"no {marker!r} within {timeout} s")


@pytest.mark.parametrize("attempt", range(3))
def test_kill_during_a_slow_write_leaves_the_old_file_and_the_next_write_cleans_up(tmp_path, attempt):
    target = tmp_path / "results.json"
    target.write_text('{"old": true}')
    process = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(target)], stdout=subprocess.PIPE, text=True,
                               cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))  # fmt: skip
    try:
        wait_for_line(process, "writing", 60)
        time.sleep(0.05 * attempt)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(10)
        process.stdout.close()
    assert process.returncode == -signal.SIGKILL
    assert target.read_text() == '{"old": true}'
    left = temporaries(tmp_path)
    assert len(left) == 1 and left[0].stat().st_size > 0  # the killed writer's partial file, beside the target
    atomic_write_text(target, '{"new": true}')
    assert json.loads(target.read_text()) == {"new": True}
    assert temporaries(tmp_path) == []


def test_a_failing_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old report")
    with pytest.raises(RuntimeError, match="renderer broke"), atomic_write(target, "w") as handle:
        handle.write("half a rep")
        raise RuntimeError("renderer broke")
    assert target.read_text() == "old report"
    assert temporaries(tmp_path) == []


def test_a_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("{}")
    target.chmod(0o640)
    atomic_write_text(target, "[]")
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_cache_entry_written_without_fsync_is_whole_and_leaves_no_temporary(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda descriptor: synced.append(descriptor))
    target = tmp_path / "clip.f0"
    atomic_write_text(target, "118.5", durable=False)
    atomic_write_text(target, "120.25", durable=False)
    assert target.read_text() == "120.25"
    assert temporaries(tmp_path) == [] and synced == []
    atomic_write_text(target, "121.0")
    assert len(synced) >= 1, "a durable write still syncs"


@pytest.fixture
def gate_project(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_gate_project(pytester, "test_vibe.py")


GATE_ARGS = ("-p", "no:cacheprovider", "--permutations", "99", "--model", "sim:fair", "-k", "advisory and gender")
OUTPUTS = ("results.json", "report.html", "junit.xml", "export.jsonl.gz")


def output_args(folder: Path) -> list[str]:
    return ["--results-json", str(folder / "results.json"), "--report", str(folder / "report.html"),
            "--junitxml", str(folder / "junit.xml"), "--export-cache", str(folder / "export.jsonl.gz")]  # fmt: skip


def test_gate_replaces_every_output_through_a_temporary_file(gate_project):
    out = gate_project.path / "out"
    out.mkdir()
    for name in OUTPUTS:
        (out / name).write_text("OLD")
    result = gate_project.runpytest_subprocess(*GATE_ARGS, *output_args(out))
    result.assert_outcomes(passed=1)
    assert json.loads((out / "results.json").read_text())["verdict"] == "spot-check"  # GATE_ARGS selects with -k
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert "<testsuites" in (out / "junit.xml").read_text()
    assert f"generated xml file: {out / 'junit.xml'}" in result.stdout.str()
    import gzip

    with gzip.open(out / "export.jsonl.gz", "rt") as handle:
        assert json.loads(handle.readline())["entries"] > 0
    assert temporaries(out) == []


def test_kill_while_the_gate_writes_its_outputs_leaves_the_old_files(gate_project):
    """The gate is killed at the first fsync of an output (its bytes written, not yet renamed): no output is
    half written, the previous run's are kept whole beside their paths as ``*.previous`` (moved aside when the
    run began, so that nothing at the paths passes for this run's result), and the next run writes them all and
    clears the killed run's files. Files written atomically elsewhere (the cache folder's audio-check memo)
    are fsynced as usual."""
    gate_project.makeconftest(
        'pytest_plugins = ["harness.plugin"]\n'
        "import os, sys, time, harness.core.files\n"
        "if os.environ.get('HANG_AT_FSYNC'):\n"
        "    real_fsync = os.fsync\n"
        "    def hang(fd):\n"
        "        if not os.readlink(f'/proc/self/fd/{fd}').startswith(os.environ['HANG_IN']):\n"
        "            return real_fsync(fd)\n"
        "        open(os.environ['HANG_AT_FSYNC'], 'w').close(); time.sleep(120)\n"
        "    harness.core.files.os = type('os', (), {**{k: getattr(os, k) for k in dir(os) if not k.startswith('__')}, 'fsync': staticmethod(hang)})\n"
    )
    out = gate_project.path / "out"
    out.mkdir()
    for name in OUTPUTS:
        (out / name).write_text("OLD")
    command = [sys.executable, "-m", "pytest", *GATE_ARGS, *output_args(out)]
    marker = gate_project.path / "fsync-reached"
    env = dict(os.environ, HANG_AT_FSYNC=str(marker), HANG_IN=str(out.resolve()))
    process = subprocess.Popen(command, cwd=gate_project.path, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), f"the gate never fsynced an output (status {process.poll()})"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait(10)
    assert all((out / f"{name}.previous").read_text() == "OLD" and not (out / name).exists() for name in OUTPUTS)
    assert temporaries(out)  # the killed run's partial file
    result = gate_project.runpytest_subprocess(*GATE_ARGS, *output_args(out))
    result.assert_outcomes(passed=1)
    assert all((out / name).read_bytes() != b"OLD" for name in OUTPUTS)
    assert temporaries(out) == []
