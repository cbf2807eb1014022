"""Size and render time of the HTML report for 12 models, this tree's report against a baseline commit's report.

The input is a gate run's results.json (default: the demo gate run now, served from the shipped outputs) with
its cases copied once per model (``model#1`` ... ``model#12``). Each report is rendered in its own Python
process from its own ``harness`` package (the baseline's from ``git archive REF harness``): the first
render in the process (what a gate run pays) and the best of ``--repeats``; then, if Chromium is installed, loaded headless at 1200 x 900 (best of ``--repeats``). The
baseline reads results.json schema 1, so its copy of the input drops the record keys added since
(``decision``, ``floors``, an error's ``cause``, ``model``, ``corpus``, ``dimension``, ``variant``) and names an
unmeasured case's check ``error``. A report of schema 3 renders from :class:`harness.results.RunResults`, one of
schema 1 from the parsed JSON.

    .venv/bin/python benchmarks/bench_report.py [--results RESULTS_JSON] [--models 12] [--baseline-ref 99bca45]

The default baseline, 99bca45, is the report before issue 18 (failures last, ratio tables without plots).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ADDED_CASE_KEYS = ("decision", "floors")
ADDED_ERROR_KEYS = ("cause", "model", "corpus", "dimension", "variant")
RENDER = """
import json, sys, time
import harness.report
from harness.report import render_report
print(harness.report.__file__, file=sys.stderr)
results = json.load(open(sys.argv[1]))
try:
    from harness.results import parse_results
except ImportError:  # a report from before schema 3 renders the parsed JSON
    parse_results = None
if parse_results is not None:
    results = parse_results(results, sys.argv[1])
times = []
for _ in range(int(sys.argv[3])):
    started = time.perf_counter()
    page = render_report(results)
    times.append(time.perf_counter() - started)
open(sys.argv[2], "w", encoding="utf-8").write(page)
print(json.dumps({"first": times[0], "seconds": min(times), "bytes": len(page.encode())}))
"""


def demo_results(folder: Path) -> Path:
    path = folder / "demo.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "fairness_tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "--results-json",
            str(path),
            "--report",
            str(folder / "demo.html"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if not path.is_file():
        raise SystemExit("the demo gate run wrote no results.json")
    return path


def replicated(results: dict[str, Any], models: int) -> dict[str, Any]:
    """``results`` with every case once per model, the models named ``<model>#<i>``."""
    copied = copy.deepcopy(results)
    cases, fingerprints = [], {}
    for index in range(1, models + 1):
        for case in results["cases"]:
            case = copy.deepcopy(case)
            model = case.get("model") or "unknown"
            case["id"] = f"{case['id']}#{index}"
            if case.get("model"):
                case["model"] = f"{model}#{index}"
                fingerprints[case["model"]] = case.get("model_fingerprint", "")
            cases.append(case)
    copied["cases"] = cases
    copied["metadata"]["models"] = fingerprints
    copied["summary"] = {key: value * models for key, value in results["summary"].items()}
    return copied


def schema_one(results: dict[str, Any]) -> dict[str, Any]:
    copied = copy.deepcopy(results)
    copied["schema_version"] = 1
    for case in copied["cases"]:
        unmeasured = case.pop("status", None) == "unmeasured"
        if unmeasured:
            case["check"] = "error"
        for key in ADDED_ERROR_KEYS if unmeasured else ADDED_CASE_KEYS:
            case.pop(key, None)
    return copied


def render(package_root: Path, results: Path, page: Path, repeats: int) -> dict[str, Any]:
    environment = dict(os.environ, PYTHONPATH=str(package_root), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(results), str(page), str(repeats)],
        env=environment,
        cwd=results.parent,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode:
        raise SystemExit(f"rendering with {package_root} failed:\n{done.stderr[-3000:]}")
    loaded = Path(done.stderr.strip().splitlines()[-1])
    if not loaded.is_relative_to(package_root):
        raise SystemExit(f"rendering meant for {package_root} imported {loaded}")
    return json.loads(done.stdout)


def browser_seconds(page: Path, repeats: int) -> float | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--screenshot={page.with_suffix('.png')}",
                "--window-size=1200,900",
                page.as_uri(),
            ],
            capture_output=True,
            timeout=300,
        )
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="a gate run's results.json (default: run the demo gate now)")
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--baseline-ref", default="99bca45")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = json.loads((args.results or demo_results(folder)).read_text())
        many = replicated(source, args.models)
        (folder / "candidate.json").write_text(json.dumps(many))
        (folder / "baseline.json").write_text(json.dumps(schema_one(many)))
        archive = subprocess.run(
            ["git", "archive", args.baseline_ref, "harness"], cwd=REPO, capture_output=True, check=True
        ).stdout
        (folder / "baseline.tar").write_bytes(archive)
        with tarfile.open(folder / "baseline.tar") as tar:
            tar.extractall(folder / "baseline", filter="data")
        figures = {}
        for name, root in (("baseline", folder / "baseline"), ("candidate", REPO)):
            page = folder / f"{name}.html"
            figures[name] = render(root, folder / f"{name}.json", page, args.repeats) | {
                "browser": browser_seconds(page, args.repeats)
            }
    base, new = figures["baseline"], figures["candidate"]
    print(f"input: {len(many['cases'])} cases, {args.models} models; baseline report: {args.baseline_ref}")
    print(
        f"size:   baseline {base['bytes'] / 1e6:.2f} MB, this tree {new['bytes'] / 1e6:.2f} MB, ratio {new['bytes'] / base['bytes']:.2f}"
    )
    print(
        f"render: first in a process (templates compiled): baseline {base['first']:.3f} s, this tree {new['first']:.3f} s, "
        f"ratio {new['first'] / base['first']:.2f}; best of {args.repeats}: baseline {base['seconds']:.3f} s, "
        f"this tree {new['seconds']:.3f} s, ratio {new['seconds'] / base['seconds']:.2f} (Python)"
    )
    if base["browser"] is not None:
        print(
            f"load:   baseline {base['browser']:.2f} s, this tree {new['browser']:.2f} s, ratio {new['browser'] / base['browser']:.2f} "
            f"(headless Chromium to a 1200 x 900 screenshot, best of {args.repeats})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
