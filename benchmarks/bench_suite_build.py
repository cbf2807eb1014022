"""``lalm-fairness-suite build``: the build time per clip on 2 cores against the synthesiser called alone, and the
admission filters' drop rates on the demo voices (issue 49).

``--part time``: the demo corpus's 24 espeak-ng voices x 12 sentences (288 clips), measured in this run as
(a) espeak-ng alone: one ``espeak-ng -w`` per clip, one at a time and two at a time; (b) the builder with
``LALM_WORKERS=2`` and a cold clip store (synthesis, processing, FLAC, duration/F0 measures, layout, provenance), with
the filters off and with the perceived-group filter and outlier listing on; (c) the same build again, every clip
found by its recipe.

``--part filters``: the demo corpus's 27 voices (24 espeak-ng, 3 flite) x 12 sentences through the WER = 0 filter
(``--asr``, default whisper:tiny.en) and the perceived-group filter (voice:praat, gender, min share 0.8): what each
drops, per group.

    .venv/bin/python benchmarks/bench_suite_build.py --part time
    .venv/bin/python benchmarks/bench_suite_build.py --part filters
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from build_demo_corpus import DEFAULT_ACCENTS, espeak_voices, write_inputs

from harness.suite.banks.espeak_ng import espeak_options, run_espeak
from harness.suite.cli import main as suite_main
from harness.suite.items import read_sentences
from harness.suite.voices import parse_voice_spec


def espeak_alone(jobs: list[tuple], threads: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda job: run_espeak(job[0].voice, espeak_options(job[0]), job[1]), jobs))
    return time.perf_counter() - started


def timed_build(argv: list[str]) -> float:
    started = time.perf_counter()
    status = suite_main(argv)
    if status != 0:
        raise SystemExit(f"build failed ({status}): {argv}")
    return time.perf_counter() - started


def part_time(scratch: Path) -> None:
    os.environ["LALM_WORKERS"] = "2"
    os.environ["LALM_PROGRESS"] = "0"
    items, _ = write_inputs(scratch, list(DEFAULT_ACCENTS), use_flite=False)
    specs = [voice for voice in espeak_voices(list(DEFAULT_ACCENTS))]
    voices = ",".join(f"{v['spec']}@gender={v['gender']}@accent={v['accent']}" for v in specs)
    sentences = read_sentences(items)
    jobs = [(parse_voice_spec(v["spec"], need_labels=False), s.text) for v in specs for s in sentences]
    clips = len(jobs)
    rows = [
        ("espeak-ng alone, 1 at a time", espeak_alone(jobs, 1)),
        ("espeak-ng alone, 2 at a time", espeak_alone(jobs, 2)),
    ]
    base = ["build", "--items", str(items), "--voices", voices, "--no-wer-filter", "--no-progress"]
    rows.append(("builder, filters off, cold", timed_build([*base, "--out", str(scratch / "a"), "--no-perceived-filter", "--no-outliers"])))  # fmt: skip
    rows.append(("builder, perceived + outliers, cold", timed_build([*base, "--out", str(scratch / "b")])))
    rows.append(("builder, perceived + outliers, every clip reused", timed_build([*base, "--out", str(scratch / "b")])))
    print(f"\n{clips} clips (24 espeak-ng voices x 12 sentences), LALM_WORKERS=2, {os.cpu_count()} CPUs seen")
    print(f"{'':52} {'total s':>8} {'ms/clip':>8} {'x alone(2)':>10}")
    for label, seconds in rows:
        print(f"{label:52} {seconds:8.2f} {1000 * seconds / clips:8.1f} {seconds / rows[1][1]:10.2f}")


def part_filters(scratch: Path, asr: str) -> None:
    os.environ["LALM_PROGRESS"] = "0"
    items, voices = write_inputs(scratch, list(DEFAULT_ACCENTS), use_flite=True)
    out = scratch / "filtered"
    started = time.perf_counter()
    status = suite_main(["build", "--items", str(items), "--voices", str(voices), "--out", str(out), "--asr", asr, "--no-progress"])  # fmt: skip
    provenance = json.loads((out / "provenance.json").read_text())
    filters = provenance["filters"]
    print(f"\nexit {status}, {time.perf_counter() - started:.0f} s; clips {provenance['clips']}")
    wer = filters["wer"]
    print(
        f"WER = 0 ({asr}): {wer['dropped']} of {wer['checked']} clips dropped ({100 * wer['dropped'] / wer['checked']:.1f}%)"
    )
    by_group: dict[str, list[int]] = {}
    gender_of = {v["speaker"]: v["labels"]["gender"] for v in provenance["voices"]}
    for row in wer["dropped_clips"]:
        by_group.setdefault(gender_of[row["speaker"]], []).append(1)
    for group in ("female", "male"):
        total = 12 * sum(g == group for g in gender_of.values())
        print(f"  {group}: {len(by_group.get(group, []))} of {total} dropped")
    perceived = filters["perceived_group"]
    print(f"perceived group (voice:praat, min share {perceived['min_share']}): voices dropped {perceived['dropped_voices']}, "
          f"{perceived['dropped']} of their clips not already dropped by WER")  # fmt: skip
    for row in perceived["voices"]:
        if not row["kept"]:
            print(
                f"  {row['speaker']} ({row['group']}): {row['perceived_as_group']} of {row['clips']} heard as {row['group']}"
            )
    print(f"outliers listed: {len(filters['outliers']['listed'])}")
    print(f"groups admitted: {provenance['groups']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["time", "filters"], required=True)
    parser.add_argument("--asr", default="whisper:tiny.en")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_suite_") as scratch:
        part_time(Path(scratch)) if args.part == "time" else part_filters(Path(scratch), args.asr)


if __name__ == "__main__":
    main()
