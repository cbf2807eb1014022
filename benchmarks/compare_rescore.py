"""The cached re-score of two checkouts of this repository, run back to back over one corpus and one filled output
cache: their wall and CPU times (user + system of the gate process and its workers) and whether they wrote the same
records.

Run the cold gate once first (``benchmarks/bench_cached_rescore.py --corpus-dir DIR`` builds the CREMA-D-sized corpus;
any gate run with ``--cache-dir CACHE`` fills the cache), then::

    .venv/bin/python benchmarks/compare_rescore.py --baseline /path/to/main-checkout --candidate . \\
        --manifest DIR/manifest.csv --cache-dir CACHE [--pairs 3] [--permutations 1000]

Each pair runs the baseline, then the candidate (``sim:fair`` and ``sim:biased``, every option of
:mod:`benchmarks.bench_cached_rescore`'s cached run), each in its own checkout (``PYTHONPATH`` its root, bytecode
caching on). On a machine shared with other work the wall times stretch, so the figures to read are the medians
per side and their ratio, taken in the same session. The records compared are each run's results.json without its
volatile run metadata (:data:`VOLATILE_METADATA`: when, what was loaded or read) and without the thresholds' source
path (each checkout names its own built-in file). Exit 1 when any record differs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VOLATILE_METADATA = ("created", "cache_hits", "models_loaded", "model_calls", "outputs", "compute_environment")
MODELS = ("sim:fair", "sim:biased")


def comparable_records(results: dict) -> dict:
    """``results`` (a parsed results.json) without what differs between two checkouts by design: the volatile run
    metadata and the path of the built-in thresholds file."""
    metadata = {k: v for k, v in results.get("metadata", {}).items() if k not in VOLATILE_METADATA}
    if isinstance(metadata.get("thresholds"), dict):
        metadata["thresholds"] = {k: v for k, v in metadata["thresholds"].items() if k != "source"}
    return {**results, "metadata": metadata}


def differences(first: object, second: object, where: str = "") -> list[str]:
    """The JSON paths at which ``first`` and ``second`` differ."""
    if isinstance(first, dict) and isinstance(second, dict):
        return [path for key in sorted(set(first) | set(second), key=str)
                for path in differences(first.get(key), second.get(key), f"{where}.{key}")]  # fmt: skip
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [path for i, (a, b) in enumerate(zip(first, second)) for path in differences(a, b, f"{where}[{i}]")]
    return [] if first == second else [where or "."]


def cached_run(repo: Path, manifest: Path, cache_dir: Path, work: Path, permutations: int) -> tuple[float, float]:
    """One cached gate run of the checkout at ``repo``: its wall and CPU seconds (results.json written to ``work``)."""
    models = [argument for model in MODELS for argument in ("--model", model)]
    command = [
        sys.executable, "-m", "pytest", str(repo / "fairness_tests"), "-q", "-p", "no:cacheprovider", "-n", "0",
        "--rootdir", str(work), "--corpus", f"cremad={manifest}", *models, "--permutations", str(permutations),
        "--cache-dir", str(cache_dir), "--results-json", str(work / "results.json"), "--report", "",
    ]  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if k not in ("LALM_ARM_STORE", "PYTHONDONTWRITEBYTECODE")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=repo, env={**environment, "PYTHONPATH": str(repo)}, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the checkout to compare against (main)")
    parser.add_argument("--candidate", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True, help="a cache the cold run filled")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--permutations", type=int, default=1000)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {"baseline": [], "candidate": []}
    changed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            records = {}
            for side in ("baseline", "candidate"):
                work = Path(tmp) / f"{side}{pair}"
                work.mkdir()
                wall, cpu = cached_run(getattr(args, side).resolve(), args.manifest.resolve(),
                                       args.cache_dir.resolve(), work, args.permutations)  # fmt: skip
                times[side].append((wall, cpu))
                records[side] = comparable_records(json.loads((work / "results.json").read_text(encoding="utf-8")))
                print(f"pair {pair + 1} {side:9s}: wall {wall:6.1f}s  CPU {cpu:6.1f}s", flush=True)
            changed += differences(records["baseline"], records["candidate"])
    medians = {side: [statistics.median(run[k] for run in runs) for k in (0, 1)] for side, runs in times.items()}
    for side, (wall, cpu) in medians.items():
        print(f"median {side:9s}: wall {wall:6.1f}s  CPU {cpu:6.1f}s")
    print(f"candidate / baseline: wall {medians['candidate'][0] / medians['baseline'][0]:.3f}, "
          f"CPU {medians['candidate'][1] / medians['baseline'][1]:.3f}")  # fmt: skip
    print("same records" if not changed else f"records differ at {len(changed)} place(s): {', '.join(changed[:10])}")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
