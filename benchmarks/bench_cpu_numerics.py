"""The cost and the effect of the demo models' CPU numerics contract (harness/models/numerics.py).

    .venv/bin/python benchmarks/bench_cpu_numerics.py [--recordings 36] [--answers 24]

Runs Whisper tiny.en on demo recordings and SmolLM2 on VIBE prompts over those transcripts, each
configuration in a fresh process: the engines' own choices for this machine (``native``, the baseline),
``native`` with each instruction set forced (as another machine would choose), contract 1's settings (MKL's
AVX2 branch in both engines, which MKL ignores on non-Intel processors), and the contract with 1 and 2
threads. Prints the seconds per stage, the ratio to the baseline, and the share of outputs identical to
the contract's. Needs the [demo] extra.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.checks.ntvd.tables import audio_requests  # noqa: E402
from harness.models.numerics import CPU_NUMERICS, NUMERICS_ENV, cpu_description  # noqa: E402


def worker(recordings: int, answers: int, threads: int) -> dict:
    from harness.gate import Gate, GateConfig
    from harness.models import build_backend
    from harness.models.base import DecodingParams, GenerationRequest
    from harness.models.cascade import ASR_DECODING, SYSTEM_TEXT, USER_TEMPLATE

    whisper = build_backend("whisper:tiny.en", {"cpu_threads": threads})
    smollm2 = build_backend("smollm2:135m-instruct", {"threads": threads})
    gate = Gate(GateConfig(models=("sim:fair",), cache_dir=tempfile.mkdtemp(), bundled_exports={}, progress=False))
    requests = audio_requests(gate.context, "demo", "story")
    step = max(1, len(requests) // recordings)
    audio = [request.audio for request in requests[::step][:recordings]]
    started = time.perf_counter()
    transcripts = whisper.load().generate([GenerationRequest(prompt="", audio=item) for item in audio], ASR_DECODING)
    whisper_seconds = time.perf_counter() - started
    prompts = [audio_requests(gate.context, "demo", task)[0].prompt for task in ("personal_shopper", "story")]
    llm_requests = [
        GenerationRequest(
            prompt=USER_TEMPLATE.format(prompt=prompts[i % 2], transcript=transcripts[i % len(transcripts)]),
            system=SYSTEM_TEXT,
        )
        for i in range(answers)
    ]
    model = smollm2.load()
    started = time.perf_counter()
    texts = model.generate(llm_requests, DecodingParams())
    return {
        "whisper_seconds": whisper_seconds,
        "llm_seconds": time.perf_counter() - started,
        "outputs": transcripts + texts,
    }


def run(label: str, environment: dict, args: argparse.Namespace, threads: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in CPU_NUMERICS and key != NUMERICS_ENV}
    env.update(environment)
    command = [
        sys.executable,
        __file__,
        "--worker",
        "--recordings",
        str(args.recordings),
        "--answers",
        str(args.answers),
        "--threads",
        str(threads),
    ]
    finished = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        raise SystemExit(f"{label}: the worker failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=36)
    parser.add_argument("--answers", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.recordings, args.answers, args.threads)))
        return 0
    isas = ["AVX2"] + (["AVX512"] if "avx512f" in cpu_description().get("flags", ()) else [])
    configurations = [("native (baseline)", {NUMERICS_ENV: "native"}, 2)]
    configurations += [
        (
            f"native, {isa} forced",
            {NUMERICS_ENV: "native", "CT2_FORCE_CPU_ISA": isa, "MKL_CBWR": isa, "ATEN_CPU_CAPABILITY": isa.lower()},
            2,
        )
        for isa in isas
    ]
    contract_1 = {
        NUMERICS_ENV: "native",
        "CT2_FORCE_CPU_ISA": "AVX2",
        "CT2_USE_MKL": "1",
        "MKL_CBWR": "AVX2,STRICT",
        "ATEN_CPU_CAPABILITY": "avx2",
    }
    configurations += [("contract 1's settings", contract_1, 2)]
    configurations += [(f"contract, {threads} thread(s)", {}, threads) for threads in (1, 2)]
    results = {label: run(label, environment, args, threads) for label, environment, threads in configurations}
    reference = results["contract, 2 thread(s)"]["outputs"]
    baseline = results["native (baseline)"]
    print(
        f"{args.recordings} recordings through Whisper tiny.en, {args.answers} SmolLM2 answers; CPU: {cpu_description().get('model_name')}"
    )
    print(
        f"{'configuration':<26} {'whisper s':>9} {'ratio':>6} {'smollm2 s':>9} {'ratio':>6} {'identical to contract':>22}"
    )
    for label, result in results.items():
        same = sum(a == b for a, b in zip(result["outputs"], reference))
        print(
            f"{label:<26} {result['whisper_seconds']:>9.1f} {result['whisper_seconds'] / baseline['whisper_seconds']:>6.2f} "
            f"{result['llm_seconds']:>9.1f} {result['llm_seconds'] / baseline['llm_seconds']:>6.2f} {same:>12}/{len(reference)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
