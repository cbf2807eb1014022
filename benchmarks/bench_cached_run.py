"""The cost of a fully cached run: first run (loads a tiny hf model, generates) against a second run over
the same cache (target: no model load), through the gate's CachedModel.

    .venv/bin/python benchmarks/bench_cached_run.py [--n 64]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness.cache import OutputCache
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.generation.cached_model import CachedModel

from support import tiny_models as tm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(tm.build_qwen2_audio(Path(tmp) / "qwen2_audio"))
        requests = [
            GenerationRequest(
                f"Question {i}: who is speaking?", Audio(tm.tone(0.5 + 0.1 * (i % 7), 180 + 3 * i, seed=i))
            )
            for i in range(args.n)
        ]
        timings, models = [], []
        for _ in range(2):
            model = CachedModel(
                f"hf:{path}",
                OutputCache(Path(tmp) / "cache"),
                DecodingParams(max_new_tokens=16),
                {"device": "cpu", "batch_size": 16},
                progress=False,
            )
            started = time.perf_counter()
            answers = model.generate(requests)
            timings.append(time.perf_counter() - started)
            models.append((model.loaded, model.calls, answers))
    (first_loaded, first_calls, first), (second_loaded, second_calls, second) = models
    print(f"requests={args.n}")
    print(f"first run:  {timings[0]:.2f}s, model loaded: {first_loaded}, generated: {first_calls}")
    print(
        f"cached run: {timings[1]:.3f}s, model loaded: {second_loaded}, generated: {second_calls}, same answers: {first == second}"
    )
    print(
        f"speed-up: {timings[0] / timings[1]:.0f}x; target (no model load on a cached run): {'met' if not second_loaded else 'NOT met'}"
    )
    return 0 if not second_loaded and first == second else 1


if __name__ == "__main__":
    raise SystemExit(main())
