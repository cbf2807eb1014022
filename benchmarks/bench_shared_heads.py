"""The demo cascade's LLM stage with and without shared prompt heads (SmolLM2-135M-Instruct on the CPU).

Answers N requests of one VIBE task the way the cascade asks them (the task prompt, then the transcript of
one of the demo corpus's sentences) twice: once as the backend does, computing the chat text before the
transcript once and reusing its key/value cache, and once with every request prefilled whole (the
baseline). Prints how many answers agree and the speed-up measured in this run. Target >= 2x for a
task whose fields are mostly closed (candidate_review: 2.1x measured, 48/48 identical); the story task's
six open values make decoding, which the shared head does not shorten, the larger part (1.5x measured,
48/48 identical). Needs the [demo] extra.

    .venv/bin/python benchmarks/bench_shared_heads.py [--n 48] [--task candidate_review] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.core.requests import DecodingParams, GenerationRequest
from harness.data import resolve_corpus
from harness.models.cascade import SYSTEM_TEXT, USER_TEMPLATE
from harness.models.text_llm import Plan, TextLLM, TextLLMBackend
from harness.tasks import TASKS


class WholePromptLLM(TextLLM):
    """The baseline: no shared head, every request's chat text is its tail."""

    def plan(self, request: GenerationRequest) -> Plan:
        plan = super().plan(request)
        return Plan((), plan.head + plan.tail, plan.prefill, plan.program)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--task", default="candidate_review", choices=sorted(TASKS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    backend = TextLLMBackend("smollm2:135m-instruct", "135m-instruct", {"threads": args.threads})
    shared = backend.load()
    whole = WholePromptLLM(backend, shared.tokenizer, shared.model)
    sentences = list(dict.fromkeys(resolve_corpus("demo").table["transcript"]))
    prompt = TASKS[args.task].render("")
    requests = [
        GenerationRequest(
            prompt=USER_TEMPLATE.format(
                prompt=prompt, transcript=sentences[i % len(sentences)] + " Thanks." * (i // len(sentences))
            ),
            system=SYSTEM_TEXT,
        )
        for i in range(args.n)
    ]
    params = DecodingParams()
    timings = {}
    answers = {}
    for name, llm in (("whole prompts (baseline)", whole), ("shared heads", shared)):
        started = time.perf_counter()
        answers[name] = llm.generate(requests, params)
        timings[name] = time.perf_counter() - started
        print(f"{name:26s} {timings[name]:7.1f} s  ({timings[name] / args.n:.2f} s per request)")
    same = sum(a == b for a, b in zip(*answers.values()))
    print(f"identical answers: {same}/{args.n}")
    target = "target >= 2x" if args.task == "candidate_review" else "no target for this task; 2x for candidate_review"
    print(f"speed-up: {timings['whole prompts (baseline)'] / timings['shared heads']:.1f}x ({target})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
