"""plan -> ``lalm-fairness-generate --ray`` on a 2-node Ray cluster on 127.0.0.1 -> ``--import-cache --offline``:
the records equal the in-process run's, and a worker node's raylet killed mid-run loses nothing and writes nothing
twice. The cluster (``ray start --head`` and one worker node, one CPU each) is stopped by the process ids of its
session. Skips, saying why, only where ``ray`` is not installed."""

from __future__ import annotations

import gzip
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.generation.request_plan import read_plan

from support.engine import free_port

pytest.importorskip("ray", reason="ray is not installed: pip install 'lalm-fairness[ray]'")
pytest.importorskip("pyarrow")
psutil = pytest.importorskip("psutil")

from test_plan import SIM_SELECTION, gate, in_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
MODELS = ("--model", "sim:fair", "--model", "sim:biased")


class LocalCluster:
    """A head and one worker node on 127.0.0.1 in a session folder of their own, one CPU each."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="r", dir="/tmp")  # unix socket paths must stay short
        self.port = free_port()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}  # fmt: skip
        self.worker_raylet: int | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def processes(self, name: str | None = None) -> list[psutil.Process]:
        """The processes of this cluster's session (their command lines name its folder)."""
        found = []
        for process in psutil.process_iter(["pid", "name", "cmdline"]):
            line = " ".join(process.info["cmdline"] or [])
            if self.folder in line and (name is None or name in (process.info["name"] or "") or name in line):
                found.append(process)
        return found

    def start(self) -> LocalCluster:
        common = ["--num-cpus=1", "--num-gpus=0", "--disable-usage-stats"]
        self._ray("start", "--head", f"--port={self.port}", "--node-ip-address=127.0.0.1", "--include-dashboard=false",
                  f"--temp-dir={self.folder}", *common)  # fmt: skip
        head_raylets = {process.pid for process in self.processes("raylet")}
        self._ray("start", f"--address={self.address}", "--node-ip-address=127.0.0.1", *common)
        workers = [process.pid for process in self.processes("raylet") if process.pid not in head_raylets]
        assert len(workers) == 1, f"expected one worker raylet, found {workers}"
        self.worker_raylet = workers[0]
        return self

    def _ray(self, *arguments: str) -> None:
        done = subprocess.run([str(RAY), *arguments], capture_output=True, text=True, env=self.env, timeout=180)
        assert done.returncode == 0, f"ray {' '.join(arguments)} exited {done.returncode}:\n{done.stderr[-3000:]}"

    def kill_worker_raylet(self) -> None:
        os.kill(self.worker_raylet, signal.SIGKILL)

    def stop(self) -> None:
        for process in self.processes():
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(self.processes(), timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def cluster():
    cluster = LocalCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def export_keys(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        handle.readline()
        return [json.loads(line)["key"] for line in handle]


@pytest.mark.slow
def test_a_plan_filled_on_a_two_node_cluster_with_a_node_lost_rescores_to_the_in_process_records(tmp_path, cluster):
    expected = in_process(tmp_path / "in-process", SIM_SELECTION, *MODELS)
    workdir, cache = tmp_path / "planned", tmp_path / "planned" / "cache"
    plan, outputs, imports, killed = workdir / "plan.parquet", [], [], False
    for round_number in range(1, 6):
        gate(workdir, *SIM_SELECTION, *MODELS, "--cache-dir", str(cache), "--plan", str(plan), *imports)
        rows = read_plan(plan)
        if not rows:
            break
        out = workdir / f"round{round_number}.jsonl.gz"
        command = [sys.executable, "-m", "harness.generation.fill_plan", "--plan", str(plan), "--out", str(out), "--ray",
                   cluster.address, "--workers", "2", "--no-progress"]  # fmt: skip
        driver = subprocess.Popen(command, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not killed:
            deadline = time.monotonic() + 300
            while not out.exists() and driver.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert driver.poll() is None, "the fill ended before a node could be lost"
            cluster.kill_worker_raylet()
            killed = True
        stdout, stderr = driver.communicate(timeout=900)
        assert driver.returncode == 0, f"{stdout}\n{stderr[-4000:]}"
        keys = export_keys(out)
        assert len(keys) == len(set(keys)) and set(keys) == {row.key for row in rows}, "lost or duplicated outputs"
        assert f"{len(rows)} planned: {len(rows)} done" in stdout and "0 failed, 0 left" in stdout
        outputs.append(out)
        imports = ["--import-cache", str(out)]
    assert killed and outputs
    results = workdir / "results.json"
    gate(workdir, *SIM_SELECTION, *MODELS, "--cache-dir", str(cache), "--offline", "--results-json", str(results))
    assert json.loads(results.read_text())["cases"] == expected["cases"]
