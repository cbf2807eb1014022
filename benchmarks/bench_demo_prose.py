"""What the paper's free-prose VIBE protocol costs the embedded demo's LLM, against the self-report form it declares.

For each task the demo's LLM stage (``smollm2:135m-instruct``, the cascade's own prompt template around a demo
transcript) answers the same request twice: under the paper protocol (free prose, the task's token budget) and
under the self-report variant (the ``Label:`` form, decoded inside it, the default budget). Prints, per task, the
seconds and tokens of each and the ratio prose / form, measured in the same run; and whether the prose answer ran
to the end of its budget (SmolLM2-135M loops), which is why the demo declares the variant
(``DEMO_VIBE_VARIANT`` in ``harness/models/cascade.py``).

Usage: ``python benchmarks/bench_demo_prose.py [--tasks story candidate_review] [--threads 1]`` (needs the
``[demo]`` extra; about a minute per task on one core).
"""

from __future__ import annotations

import argparse
import time

from harness.core.requests import DecodingParams, GenerationRequest
from harness.data import resolve_corpus
from harness.models import build_backend
from harness.models.cascade import DEMO_LLM, SYSTEM_TEXT, USER_TEMPLATE
from harness.tasks import TASKS
from harness.tasks.base import SELF_REPORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["story", "candidate_review"], choices=sorted(TASKS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
