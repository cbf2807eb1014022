"""The cost of decoding every audio file at load: the shipped demo corpus and BASIS demo suite loaded with
a cold memo (every file decoded), a warm one (files only hashed), and the header-only check that loading
did before (soundfile.info per file), all measured in this run; prints the ratios to the header-only load.

    .venv/bin/python benchmarks/bench_audio_checks.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import soundfile

from harness.data import DEMO_CORPUS_PATH, load_corpus
from harness.data.audio import AUDIO_CHECKS_FILE, AudioChecks
from harness.data.basis_suite import DEMO_SUITE_PATH, load_suite


def load_both(audio_checks: AudioChecks | None) -> int:
    """Load the demo corpus and suite; with None, as loading did before: the corpus audio checked by header
    only, the suite's recordings only found to exist."""
    corpus = load_corpus(DEMO_CORPUS_PATH, check_audio=audio_checks is not None, audio_checks=audio_checks)
    if audio_checks is None:
        for relative in corpus.table["audio"]:
            if soundfile.info(str(corpus.root / relative)).frames == 0:
                raise SystemExit(f"{relative}: no samples")
    suite = load_suite(DEMO_SUITE_PATH, audio_checks, check_audio=audio_checks is not None)
    return len(corpus.table) + sum(len(item_set.table) for item_set in suite.sets)


def best_of(repeat: int, run) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = load_both(AudioChecks())
    with tempfile.TemporaryDirectory() as folder:
        memo = Path(folder) / AUDIO_CHECKS_FILE

        def cold() -> None:
            memo.unlink(missing_ok=True)
            load_both(AudioChecks(memo))

        header_only = best_of(args.repeat, lambda: load_both(None))
        cold_load = best_of(args.repeat, cold)
        warm_load = best_of(args.repeat, lambda: load_both(AudioChecks(memo)))
    print(f"audio files: {files} (demo corpus + BASIS demo suite)")
    print(f"header-only check (before): {header_only:.3f}s")
    print(f"full decode, cold memo:     {cold_load:.3f}s  ratio {cold_load / header_only:.2f}x")
    print(f"full decode, warm memo:     {warm_load:.3f}s  ratio {warm_load / header_only:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
