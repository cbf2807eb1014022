"""What the paper's free-prose VIBE protocol costs the embedded demo's LLM, against the self-report form it declares.

For each task the demo's LLM stage (``smollm2:135m-instruct``, the cascade's own prompt template around a demo
transcript) answers the same request twice: under the paper protocol (free prose, the task's token budget) and
under the self-report variant (the ``Label:`` form, decoded inside it, the default budget). Prints, per task, the
seconds and tokens of each and the ratio prose / form, measured in the same run; and whether the prose answer ran
to the end of its budget (SmolLM2-135M loops), which is why the demo declares the variant
(``DEMO_VIBE_VARIANT`` in ``harness/models/cascade.py``).

Usage: ``python benchmarks/bench_demo_prose.py [--tasks story candidate_review] [--threads 1]`` (needs the
``[demo]`` extra; about a minute per task on one core).

``--rebuild N`` measures instead what rebuilding the shipped outputs under the paper protocol would cost, as the
build runs it: for each task, N distinct (transcript, voice description) pairs of the shipped default export answered
in one ``generate`` call (batched as the backend batches, the task's token budget), then extracted by the demo LLM as
the paper's extractor (the JSON schema, decoded inside it); seconds per answer for each, tokens per second, and the
share of answers that ran to the end of their budget. It then projects the hours of a rebuild from the number of
distinct VIBE requests of each shipped export (``python benchmarks/bench_demo_prose.py --rebuild 16 --threads 2``:
about 4 minutes per task on two cores).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

from harness.cache import OutputCache
from harness.core.requests import DecodingParams, GenerationRequest
from harness.data import resolve_corpus
from harness.extraction.llm import LLMExtractor
from harness.gate import BUNDLED_EXPORTS
from harness.models import build_backend
from harness.models.cascade import (
    DEMO_LLM,
    DEMO_MODEL,
    SYSTEM_TEXT,
    USER_TEMPLATE,
    VOICE_BLIND_MODEL,
    VOICE_SYSTEM_TEXT,
    VOICE_USER_TEMPLATE,
    split_voice,
)
from harness.tasks import TASKS
from harness.tasks.base import SELF_REPORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["story", "candidate_review"], choices=sorted(TASKS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--rebuild", type=int, default=0, metavar="N", help="measure a rebuild's cost on N answers per task"
    )
    args = parser.parse_args(argv)
    if args.rebuild:
        return rebuild_cost(args.tasks, args.rebuild, args.threads)
    transcript = str(resolve_corpus("demo", None).table["transcript"].iloc[0])
    model = build_backend(DEMO_LLM, {"threads": args.threads}).load()
    print(f"demo LLM {DEMO_LLM}, transcript {transcript!r}")
    for name in args.tasks:
        task = TASKS[name]
        timings = {}
        for protocol, budget in (("paper", task.max_new_tokens), (SELF_REPORT, DecodingParams().max_new_tokens)):
            request = task.request(transcript, None, protocol=protocol)
            request = GenerationRequest(
                prompt=USER_TEMPLATE.format(transcript=transcript, prompt=request.prompt),
                system=SYSTEM_TEXT,
                answer_form=request.answer_form,
            )
            started = time.monotonic()
            (answer,) = model.generate([request], DecodingParams(max_new_tokens=budget))
            seconds = time.monotonic() - started
            tokens = len(model.tokenizer.encode(answer))
            timings[protocol] = seconds
            print(
                f"  {name} {protocol:11s} {seconds:6.1f} s  {tokens:4d} tokens of a {budget}-token budget"
                f"{'  (ran to the end of its budget)' if tokens >= budget else ''}: {answer[:90]!r}"
            )
        print(f"  {name} ratio prose / form: {timings['paper'] / timings[SELF_REPORT]:.1f}x")
    return 0


def heard_pairs(export: Path) -> list[tuple[str, str | None]]:
    """The distinct (transcript, voice description) pairs of a shipped export's VIBE answers, in file order: one LLM
    request per pair and task under the paper protocol (the voice-blind release has no description)."""
    pairs: dict[tuple[str, str | None], None] = {}
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        for entry in map(json.loads, handle):
            if "key" in entry and json.loads(entry.get("metadata") or "{}").get("label") == f"demo/{next(iter(TASKS))}":
                transcript, voice, _ = split_voice(entry["text"])
                pairs[(transcript, voice)] = None
    return list(pairs)


def llm_stage_request(transcript: str, voice: str | None, task, protocol: str) -> GenerationRequest:
    """What the voice-aware cascade's LLM stage is asked for ``task`` under ``protocol`` (its template and system text)."""
    request = task.request(transcript, None, protocol=protocol)
    return GenerationRequest(
        prompt=VOICE_USER_TEMPLATE.format(transcript=transcript, voice=voice, prompt=request.prompt),
        system=VOICE_SYSTEM_TEXT,
        answer_form=request.answer_form,
    )


def rebuild_cost(task_names: list[str], n: int, threads: int) -> int:
    pairs = heard_pairs(BUNDLED_EXPORTS[DEMO_MODEL][0])
    requests_per_task = {
        DEMO_MODEL: len(pairs),
        VOICE_BLIND_MODEL: len(heard_pairs(BUNDLED_EXPORTS[VOICE_BLIND_MODEL][0])),
    }
    model = build_backend(DEMO_LLM, {"threads": threads, "batch_size": n}).load()
    extractor = LLMExtractor.from_spec(DEMO_LLM, OutputCache(tempfile.mkdtemp()), options={"threads": threads})
    print(f"demo LLM {DEMO_LLM}, {threads} thread(s), {n} answers per task in one batch")
    seconds_per_answer = []
    for name in task_names:
        task = TASKS[name]
        requests = [llm_stage_request(transcript, voice, task, "paper") for transcript, voice in pairs[:n]]
        started = time.monotonic()
        answers = model.generate(requests, DecodingParams(max_new_tokens=task.max_new_tokens))
        generated = time.monotonic() - started
        tokens = [len(model.tokenizer.encode(answer)) for answer in answers]
        started = time.monotonic()
        extractions = extractor.extract_many(answers, task)
        extracted = time.monotonic() - started
        statuses = [item.extraction.status for item in extractions]
        forms = [llm_stage_request(transcript, voice, task, SELF_REPORT) for transcript, voice in pairs[:n]]
        started = time.monotonic()
        model.generate(forms, DecodingParams())
        filled = time.monotonic() - started
        seconds_per_answer.append((generated + extracted) / len(answers))
        print(
            f"  {name}: generation {generated / len(answers):5.1f} s/answer ({sum(tokens) / generated:5.1f} tokens/s, "
            f"{sum(t >= task.max_new_tokens for t in tokens)}/{len(tokens)} ran to the {task.max_new_tokens}-token budget); "
            f"extraction {extracted / len(answers):5.1f} s/answer "
            f"({statuses.count('extracted')} extracted, {statuses.count('unextractable')} unextractable); "
            f"the self-report form {filled / len(answers):4.1f} s/answer: paper protocol / form "
            f"{(generated + extracted) / filled:4.1f}x"
        )
    mean = sum(seconds_per_answer) / len(seconds_per_answer)
    for spec, per_task in requests_per_task.items():
        total = per_task * len(TASKS)
        print(
            f"  {spec}: {per_task} distinct heard pairs x {len(TASKS)} tasks = {total} answers -> {total * mean / 3600:.1f} h"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
