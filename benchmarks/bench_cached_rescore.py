"""A cached re-score of a CREMA-D-sized corpus: the gate run twice over one output cache, cold then cached, every
check included (the counterfactual arms and the audio floor among them).

The corpus has CREMA-D's design and names (VIBE §II-C; :mod:`harness.data.cremad_design`): 91 speakers 1001..1091
(43 female, 48 male, genders shuffled), each saying CREMA-D's 12 sentences in its 6 emotions, files named
``<speaker>_<sentence>_<emotion>_XX.wav`` as in the release: 6552 clips. Each clip is spoken by espeak-ng
(22,050 Hz, so every clip is resampled to 16 kHz), one voice variant, pitch and speed per speaker, the emotion
moving pitch and speed a little. The gate then runs ``fairness_tests`` on it with ``sim:fair`` and
``sim:biased`` (a pytest subprocess each time, ``-p no:cacheprovider``, every option of the quick start); the
first run generates every answer (cold), the second reads all of them from the cache (cached). The benchmark
prints both wall times, their CPU times (user + system, which a machine busy with other work does not stretch),
their ratio, whether bytecode caching is on (under ``PYTHONDONTWRITEBYTECODE`` every run compiles its imports
afresh), and whether the two runs wrote the same records (results.json, the volatile run metadata left out).
Each run's peak resident memory is that of the gate process or of any of its workers (Praat's pool), whichever is
larger. The floor is the cost of reading every answer of the cache once (one ``SELECT`` of all its entries, in this
process), which no re-score can beat; the bench prints the cached run's ratio to it.
``--profile FILE`` runs the cached run under cProfile and prints its 15 most costly functions (own time) and its
25 most costly harness functions (cumulative time).

    .venv/bin/python benchmarks/bench_cached_rescore.py [--corpus-dir DIR] [--permutations 1000] [--profile FILE]
    .venv/bin/python benchmarks/bench_cached_rescore.py --long-speakers 12 24   # ~30 s recordings: peak memory per size

``--corpus-dir`` keeps the synthesized corpus between invocations (espeak-ng takes about 2 minutes for the 6552
clips on a 2-core machine); without it the corpus is built in a temporary folder. Targets (issue 46): the cached
run within 15 s, the cold run within 300 s, peak memory within 2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile

from harness.data.cremad_design import EMOTIONS, SENTENCES, SPEAKERS
from harness.data.voice_transforms.arm_audio import ARM_STORE_ENV

REPO = Path(__file__).resolve().parents[1]
TARGET_CACHED_S = 15.0
TARGET_COLD_S = 300.0
TARGET_PEAK_GB = 2.0
MODELS = ("sim:fair", "sim:biased")
# espeak-ng voice variants; each speaker takes one, a base pitch (0-99) and a speed (words per minute).
VOICES = {"female": ("f1", "f2", "f3", "f4", "f5"), "male": ("m1", "m2", "m3", "m4", "m5", "m6", "m7")}
PITCH = {"female": (50, 80), "male": (20, 45)}
# Emotion -> (pitch offset, speed offset): CREMA-D's actors speak anger and happiness higher and faster,
# sadness lower and slower.
EMOTION_PROSODY = {"ANG": (8, 20), "DIS": (-4, -10), "FEA": (10, 15), "HAP": (12, 10), "NEU": (0, 0), "SAD": (-8, -25)}
# run metadata that differs between a cold and a cached run by design (when; what was loaded, generated and read; the
# numerics settings of the engines loaded, none when every embedding and answer is cached)
VOLATILE_METADATA = ("created", "cache_hits", "models_loaded", "model_calls", "outputs", "compute_environment")


def build_corpus(folder: Path, seed: int = 0) -> Path:
    """Write the 6552 espeak-ng clips and ``manifest.csv`` into ``folder``; return the manifest (kept if present)."""
    manifest = folder / "manifest.csv"
    if manifest.is_file():
        return manifest
    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    (folder / "audio").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    genders = np.array([gender for gender, count in SPEAKERS.items() for _ in range(count)], dtype=object)
    genders = genders[rng.permutation(len(genders))]
    rows = []
    for position, gender in enumerate(genders):
        speaker = str(1001 + position)
        voice = VOICES[gender][int(rng.integers(len(VOICES[gender])))]
        pitch = int(rng.integers(*PITCH[gender]))
        speed = int(rng.integers(150, 185))
        for code, text in SENTENCES:
            for emotion in EMOTIONS:
                pitch_offset, speed_offset = EMOTION_PROSODY[emotion]
                relative = f"audio/{speaker}_{code}_{emotion}_XX.wav"
                subprocess.run(
                    ["espeak-ng", "-v", f"en-us+{voice}", "-p", str(pitch + pitch_offset),
                     "-s", str(speed + speed_offset), "-w", str(folder / relative), text],
                    check=True,
                )  # fmt: skip
                rows.append((f"{speaker}_{code}_{emotion}", relative, speaker, f"{code}_{emotion}", text, gender))
    columns = ["utterance_id", "audio", "speaker_id", "content_id", "transcript", "gender"]
    pd.DataFrame(rows, columns=columns).to_csv(manifest, index=False)
    return manifest


# pytest under cProfile, keeping pytest's exit status (``python -m cProfile`` exits 0 whatever the script's)
PROFILED_PYTEST = (
    "import cProfile, sys, pytest; profile = cProfile.Profile(); status = profile.runcall(pytest.main, sys.argv[2:]); "
    "profile.dump_stats(sys.argv[1]); sys.exit(int(status))"
)


# Two passages of about 30 seconds each as espeak-ng reads them at 130 words a minute: the Speech Accent Archive's
# elicitation paragraph, and the opening of Fairbanks's Rainbow Passage.
LONG_PASSAGES = (
    ("stella", "Please call Stella. Ask her to bring these things with her from the store: six spoons of fresh snow "
     "peas, five thick slabs of blue cheese, and maybe a snack for her brother Bob. We also need a small plastic "
     "snake and a big toy frog for the kids. She can scoop these things into three red bags, and we will go meet her "
     "Wednesday at the train station."),
    ("rainbow", "When the sunlight strikes raindrops in the air, they act as a prism and form a rainbow. The rainbow "
     "is a division of white light into many beautiful colors. These take the shape of a long round arch, with its "
     "path high above, and its two ends apparently beyond the horizon. There is, according to legend, a boiling pot "
     "of gold at one end. People look, but no one ever finds it."),
)  # fmt: skip


def build_long_corpus(folder: Path, speakers: int, seed: int = 0) -> Path:
    """``speakers`` espeak-ng speakers (half of each gender) each reading both :data:`LONG_PASSAGES` (about 30 s a
    recording): the corpus on which the arms' memory must not grow with the corpus's size."""
    manifest = folder / "manifest.csv"
    if manifest.is_file():
        return manifest
    (folder / "audio").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    for position in range(speakers):
        gender = ("female", "male")[position % 2]
        speaker = f"L{position + 1:03d}"
        voice = VOICES[gender][int(rng.integers(len(VOICES[gender])))]
        pitch = int(rng.integers(*PITCH[gender]))
        for code, text in LONG_PASSAGES:
            relative = f"audio/{speaker}_{code}.wav"
            subprocess.run(["espeak-ng", "-v", f"en-us+{voice}", "-p", str(pitch), "-s", "130", "-w", str(folder / relative), text],
                           check=True)  # fmt: skip
            rows.append((f"{speaker}_{code}", relative, speaker, code, text, gender))
    columns = ["utterance_id", "audio", "speaker_id", "content_id", "transcript", "gender"]
    pd.DataFrame(rows, columns=columns).to_csv(manifest, index=False)
    return manifest


def long_recordings(sizes: list[int], permutations: int) -> None:
    """A cold gate run on long-recording corpora of each size: its wall time and peak memory, which must not grow
    with the number of recordings (the arms are streamed)."""
    for speakers in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            manifest = build_long_corpus(Path(tmp) / "long", speakers)
            work = Path(tmp) / "run"
            work.mkdir()
            wall_s, cpu_s, rc, line, peak_gb = run_gate(gate_command(manifest, work, permutations, None))
            seconds = sum(soundfile.info(str(path)).duration for path in (Path(tmp) / "long" / "audio").glob("*.wav"))
            print(f"long recordings, {speakers} speakers x {len(LONG_PASSAGES)} ({seconds / 60:.0f} min of audio, "
                  f"{seconds / (2 * speakers):.0f} s a recording): cold {wall_s:.1f}s (CPU {cpu_s:.1f}s), "
                  f"peak {peak_gb:.2f} GB, exit {rc}  {line}")  # fmt: skip


def gate_command(manifest: Path, work: Path, permutations: int, profile: Path | None) -> list[str]:
    runner = ["-c", PROFILED_PYTEST, str(profile)] if profile else ["-m", "pytest"]
    models = [argument for model in MODELS for argument in ("--model", model)]
    return [
        sys.executable, *runner, str(REPO / "fairness_tests"), "-q", "-p", "no:cacheprovider", "-n", "0",
        "--rootdir", str(work), "--corpus", f"cremad={manifest}", *models, "--permutations", str(permutations),
        "--cache-dir", str(work / "cache"), "--results-json", str(work / "results.json"), "--report", "",
    ]  # fmt: skip


# Runs a command and prints, on its last stderr line, the peak resident memory (kB) of its process tree: the
# largest of the gate process and every worker it waited for (Linux's ru_maxrss of RUSAGE_CHILDREN).
PEAK_WRAPPER = (
    "import resource, subprocess, sys; status = subprocess.call(sys.argv[1:]); "
    "print('peak-rss-kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(status)"
)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_gate(command: list[str]) -> tuple[float, float, int, str, float]:
    """The gate subprocess's wall time, its CPU time (user + system, its workers' included: what a busy machine
    stretches the wall time by does not count), exit status, last line and peak resident memory (GB)."""
    started, cpu_before = time.perf_counter(), children_cpu_s()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_WRAPPER, *command],
        capture_output=True,
        text=True,
        cwd=REPO,
        # the arms in the run's own cache: a shared store ($LALM_ARM_STORE) would make the cold run warm
        env={**{k: v for k, v in os.environ.items() if k != ARM_STORE_ENV}, "PYTHONPATH": str(REPO)},
    )
    last_line = done.stdout.strip().splitlines()[-1] if done.stdout else ""
    peak_kb = next(
        int(line.split()[1]) for line in reversed(done.stderr.splitlines()) if line.startswith("peak-rss-kb")
    )
    return time.perf_counter() - started, children_cpu_s() - cpu_before, done.returncode, last_line, peak_kb / 2**20


def read_floor_s(cache_dir: Path) -> tuple[float, int]:
    """The time to read every answer of the cache once, and how many there are: the floor of any re-score."""
    from harness.cache import OutputCache

    started = time.perf_counter()
    cache = OutputCache(cache_dir)
    entries = cache._connection.execute("SELECT key, text FROM outputs").fetchall()
    cache.close()
    return time.perf_counter() - started, len(entries)


def stable_records(path: Path) -> dict:
    """The run's results.json without its volatile run metadata."""
    results = json.loads(path.read_text(encoding="utf-8"))
    results["metadata"] = {k: v for k, v in results.get("metadata", {}).items() if k not in VOLATILE_METADATA}
    return results


def differences(first: dict, second: dict, where: str = "") -> list[str]:
    """The JSON paths at which ``first`` and ``second`` differ."""
    if isinstance(first, dict) and isinstance(second, dict):
        return [path for key in sorted(set(first) | set(second), key=str)
                for path in differences(first.get(key), second.get(key), f"{where}.{key}")]  # fmt: skip
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [path for i, (a, b) in enumerate(zip(first, second)) for path in differences(a, b, f"{where}[{i}]")]
    return [] if first == second else [where or "."]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-dir", type=Path, default=None, help="build (or reuse) the corpus here")
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--profile", type=Path, default=None, help="profile the cached run into this file")
    parser.add_argument("--keep-results", type=Path, default=None, help="copy both runs' results.json here")
    parser.add_argument("--long-speakers", type=int, nargs="+", default=None,
                        help="instead: cold runs on corpora of ~30 s recordings with these numbers of speakers")  # fmt: skip
    args = parser.parse_args()
    if args.long_speakers:
        long_recordings(args.long_speakers, args.permutations)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus_dir = args.corpus_dir or Path(tmp) / "cremad"
        started = time.perf_counter()
        manifest = build_corpus(corpus_dir)
        print(f"corpus: {manifest} ({len(pd.read_csv(manifest))} clips, ready in {time.perf_counter() - started:.1f}s)")
        work = Path(tmp) / "run"
        work.mkdir()
        cold_s, cold_cpu, cold_rc, cold_line, cold_gb = run_gate(gate_command(manifest, work, args.permutations, None))
        cold_records = stable_records(work / "results.json")
        if args.keep_results:
            args.keep_results.mkdir(parents=True, exist_ok=True)
            shutil.copy(work / "results.json", args.keep_results / "cold.json")
        cached_s, cached_cpu, cached_rc, cached_line, cached_gb = run_gate(
            gate_command(manifest, work, args.permutations, args.profile)
        )
        floor_s, entries = read_floor_s(work / "cache")
        arms_gb = sum(path.stat().st_size for path in (work / "cache" / "arms").rglob("*.npy")) / 2**30
        changed = differences(cold_records, stable_records(work / "results.json"))
        if args.keep_results:
            shutil.copy(work / "results.json", args.keep_results / "cached.json")
    print(f"bytecode caching: {'off (PYTHONDONTWRITEBYTECODE)' if sys.flags.dont_write_bytecode else 'on'}")
    print(f"cold run:   {cold_s:6.1f}s (CPU {cold_cpu:6.1f}s, peak {cold_gb:.2f} GB)  exit {cold_rc}  {cold_line}")
    print(
        f"cached run: {cached_s:6.1f}s (CPU {cached_cpu:6.1f}s, peak {cached_gb:.2f} GB)  exit {cached_rc}  {cached_line}"
    )
    print(f"floor (read all {entries} cached answers once): {floor_s:.2f}s; cached / floor: {cached_s / floor_s:.0f}x")
    print(
        f"cold / cached: {cold_s / cached_s:.1f}x; same records: {not changed}; the cache's arms/ folder: {arms_gb:.2f} GB"
    )
    if changed:
        print(f"  records differ at {len(changed)} place(s): {', '.join(changed[:10])}")
    for name, value, target, unit in (("cached run", cached_s, TARGET_CACHED_S, "s"), ("cold run", cold_s, TARGET_COLD_S, "s"),
                                      ("peak memory", max(cold_gb, cached_gb), TARGET_PEAK_GB, " GB")):  # fmt: skip
        print(f"target ({name} <= {target:g}{unit}): {'met' if value <= target else 'NOT met'} ({value:.2f}{unit})")
    if args.profile:
        stats = pstats.Stats(str(args.profile))
        stats.sort_stats("tottime").print_stats(15)
        stats.sort_stats("cumulative").print_stats("harness", 25)
    return 0 if not changed and cold_rc == cached_rc else 1


if __name__ == "__main__":
    raise SystemExit(main())
