"""What the installed plugin costs a pytest run that is not a gate run: a one-line unrelated test, run by bare pytest,
with the entry point (``-p lalm_fairness_pytest``, what ``pip install lalm-fairness`` registers) and with the whole
plugin (``-p harness.plugin``, what the entry point loads for a gate run), each ``--repeat`` times in turn.

Every run is ``python -m pytest -q -p no:cacheprovider test_unrelated.py`` in an empty temporary folder with plugin
autoloading off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), so that only the named plugin differs. Prints each
variant's median wall time and its excess over bare pytest. Target (issue 41): the entry point within 0.2 s of bare
pytest, median of 5.

    .venv/bin/python benchmarks/bench_plugin_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_EXCESS_S = 0.2
VARIANTS = {"bare pytest": [], "entry point": ["-p", "lalm_fairness_pytest"], "whole plugin": ["-p", "harness.plugin"]}


def timed_run(folder: Path, plugin: list[str]) -> float:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_unrelated.py"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    timings: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_unrelated.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        for _ in range(args.repeat):
            for name, plugin in VARIANTS.items():
                timings[name].append(timed_run(folder, plugin))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    bare = medians["bare pytest"]
    for name, median in medians.items():
        spread = f"{min(timings[name]):.2f}-{max(timings[name]):.2f}"
        print(
            f"{name:13s} median {median:.2f}s (range {spread}s), {median - bare:+.2f}s over bare, {median / bare:.2f}x"
        )
    excess = medians["entry point"] - bare
    print(
        f"target (entry point within {TARGET_EXCESS_S:g} s of bare pytest): {'met' if excess <= TARGET_EXCESS_S else 'NOT met'}"
    )
    return 0 if excess <= TARGET_EXCESS_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
