"""A plan filled by 2 Ray workers against the same plan filled in process, on a CPU with a tiny random checkpoint.

The plan is the WER-ratio cases' transcription requests of a tiny random Qwen2-Audio (``hf:``, the engine tests'
checkpoint) on the demo corpus's first ``--sentences`` sentences (every speaker). The benchmark times: writing
the plan (``pytest ... --plan``, a subprocess); filling it in process (:func:`harness.generation.fill_plan.fill`, one model,
the baseline, torch and transformers imported before it is timed); filling it with ``--workers 2`` on a local Ray cluster of 2 CPUs started for the run (with and
without the cluster's start and the actors' model loads, which the first batch pays); and importing the filled
export into a fresh cache. It prints the throughput of each fill in requests per second, the ratio of the Ray
fill's to the in-process fill's, and the plan and import time as a share of the in-process generation time.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ray_generate.py [--sentences 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def timed(action):
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=3, help="demo sentences in the corpus (every speaker)")
    args = parser.parse_args()

    from harness.cache import OutputCache
    from harness.generation.fill_plan import fill
    from harness.generation.ray_fill import fill_on_ray
    from harness.generation.request_plan import read_plan

    from support import engine as es

    with tempfile.TemporaryDirectory(prefix="bench-ray-") as scratch:
        folder = Path(scratch)
        checkpoint = es.build_engine_checkpoint(folder / "tiny-qwen2-audio")
        corpus = es.small_corpus(folder / "corpus", sentences=args.sentences)
        plan = folder / "plan.parquet"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--rootdir", scratch,
                   "--pyargs", "harness.gate_tests.test_wer", "-k", "wer_ratio", "--model", f"hf:{checkpoint}",
                   "--corpus", f"small={corpus}", "--embedder", "none", "--cache-dir", str(folder / "plan-cache"),
                   "--plan", str(plan)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done, plan_s = timed(lambda: subprocess.run(command, capture_output=True, text=True, env=env, cwd=scratch))
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            return 1
        rows = read_plan(plan)
        import torch  # noqa: F401  (imported before the clock starts, as each Ray worker imports it before its first batch)
        import transformers  # noqa: F401

        in_process_out = folder / "in-process.jsonl.gz"
        counts, in_process_s = timed(
            lambda: fill(rows, in_process_out, OutputCache(folder / "in-process-cache"), progress=False)
        )
        assert counts.failed == 0 and counts.left == 0, counts.line()

        import ray

        ray_out = folder / "ray.jsonl.gz"
        _, start_s = timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False))
        counts, ray_s = timed(
            lambda: fill_on_ray(rows, ray_out, OutputCache(folder / "ray-cache"), address="auto", workers=2)
        )
        assert counts.failed == 0 and counts.left == 0, counts.line()
        _, import_s = timed(lambda: OutputCache(folder / "import-cache").import_file(ray_out))

    requests = len(rows)
    print(f"plan: {requests} requests ({args.sentences} sentences x every demo speaker, WER-ratio transcriptions)")
    print(f"in process, 1 model:      {in_process_s:7.1f} s  {requests / in_process_s:6.2f} requests/s (baseline)")
    print(f"Ray, 2 workers (2 CPUs):  {ray_s:7.1f} s  {requests / ray_s:6.2f} requests/s  "
          f"ratio {in_process_s / ray_s:.2f} x the baseline; cluster start {start_s:.1f} s more")  # fmt: skip
    print(f"plan {plan_s:.1f} s (a pytest run) and import {import_s:.2f} s: "
          f"{(plan_s + import_s) / in_process_s:.0%} of the in-process generation time")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
