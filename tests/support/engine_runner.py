"""Runs a backend spec on a request file, in the engine's venv (see ``support.engine.run_offline``).

    python tests/support/engine_runner.py SPEC REQUESTS.json OUT.json [--decoding JSON] [--options JSON] [--cache-dir DIR]

Writes ``{"answers": [...], "seconds": {"load": s, "generate": s}}``; with ``--cache-dir``, through the
gate's :class:`~harness.generation.cached_model.CachedModel` over that cache, adding ``loaded`` (whether the engine was
started), ``calls`` and ``hits``. The engine spawns its workers, so everything runs under
``if __name__ == "__main__"``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main() -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    from engine import read_requests

    from harness.cache import OutputCache
    from harness.core.files import atomic_write_text
    from harness.core.requests import DecodingParams
    from harness.generation.cached_model import CachedModel
    from harness.models import build_backend

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("requests")
    parser.add_argument("out")
    parser.add_argument("--decoding", default="{}")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument(
        "--raw-rounds",
        type=int,
        default=0,
        help="also time N rounds each of the backend's generate and of a raw LLM.generate on its prompts",
    )
    args = parser.parse_args()
    requests = read_requests(Path(args.requests))
    decoding = DecodingParams.from_mapping(json.loads(args.decoding), source="--decoding")
    options = json.loads(args.options)
    started = time.monotonic()
    if args.cache_dir:
        cached = CachedModel(args.spec, OutputCache(args.cache_dir), decoding, options, progress=False)
        answers = cached.generate(requests)
        report = {"answers": answers, "loaded": cached.loaded, "calls": cached.calls, "hits": cached.hits,
                  "seconds": {"total": time.monotonic() - started}}  # fmt: skip
    else:
        model = build_backend(args.spec, options).load()
        loaded = time.monotonic()
        answers = model.generate(requests, decoding)
        report = {"answers": answers, "seconds": {"load": loaded - started, "generate": time.monotonic() - loaded}}
        if args.raw_rounds:
            report["overhead"] = time_against_raw(model, requests, decoding, args.raw_rounds)
    atomic_write_text(Path(args.out), json.dumps(report))
    return 0


def time_against_raw(model, requests, decoding, rounds: int) -> dict:
    """Seconds of the ``vllm:`` model's ``generate`` and of a raw ``LLM.generate`` on prompts rendered
    beforehand (the same inputs and sampling parameters), alternated, best of ``rounds`` each."""
    prompts = [model.prompt(request) for request in requests]
    sampling = model.sampling_params(decoding)
    harness_s, raw_s = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        model.generate(requests, decoding)
        harness_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        model.llm.generate(prompts, sampling, use_tqdm=False)
        raw_s.append(time.perf_counter() - started)
    return {"harness": min(harness_s), "raw": min(raw_s)}


if __name__ == "__main__":
    raise SystemExit(main())
