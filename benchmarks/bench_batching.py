"""Batched versus one-at-a-time generation through the hf: backend, with a tiny model on CPU.

Builds a tiny random Qwen2-Audio checkpoint (real processor: 30 s Whisper windows per audio), generates
answers for N audio requests of varied lengths once with ``batch_size=B`` and once with ``batch_size=1``,
checks that both give identical outputs, and prints the speed-up measured in this run (target >= 3x).

    .venv/bin/python benchmarks/bench_batching.py [--n 32] [--batch-size 32] [--max-new-tokens 128] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.models.hf import HFBackend

from support import tiny_models as tm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (0: torch default; 1 avoids thread contention noise)"
    )
    args = ap.parse_args()

    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the disabled end-of-sequence below is deliberate
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(tm.build_qwen2_audio(Path(tmp) / "qwen2_audio"))
        reqs = [
            GenerationRequest(
                f"Question {i}: who is speaking?", Audio(tm.tone(0.5 + 0.25 * (i % 5), 180 + 7 * i, seed=i))
            )
            for i in range(args.n)
        ]
        params = DecodingParams(max_new_tokens=args.max_new_tokens)
        batched = HFBackend(
            spec="hf:tiny", target=path, options={"batch_size": args.batch_size, "device": "cpu"}
        ).load()
        single = HFBackend(spec="hf:tiny", target=path, options={"batch_size": 1, "device": "cpu"}).load()
        # A random tiny model emits its end-of-turn token after a few steps; real answers run for tens to
        # hundreds of tokens, which is where batching pays. So end-of-sequence is disabled here: every
        # request decodes exactly max_new_tokens, in both modes alike.
        for model in (batched, single):
            model.special_ids["eos_token_id"] = -1
        batched.generate(reqs[:2], params)  # warm-up (first-call overheads)
        single.generate(reqs[:2], params)

        t0 = time.perf_counter()
        out_b = batched.generate(reqs, params)
        t_batched = time.perf_counter() - t0
        t0 = time.perf_counter()
        out_s = single.generate(reqs, params)
        t_single = time.perf_counter() - t0

    same = out_b == out_s
    ratio = t_single / t_batched
    print(
        f"requests={args.n} batch_size={args.batch_size} max_new_tokens={args.max_new_tokens} threads={torch.get_num_threads()}"
    )
    print(f"one-at-a-time: {t_single:.2f}s ({args.n / t_single:.1f} req/s)")
    print(f"batched:       {t_batched:.2f}s ({args.n / t_batched:.1f} req/s)")
    print(f"speed-up: {ratio:.1f}x (target >= 3x) outputs identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
