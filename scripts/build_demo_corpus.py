#!/usr/bin/env python3
"""Build the shipped demo corpus with the suite builder (``lalm-fairness-suite build``): espeak-ng and flite, offline.

What it makes (under ``--out``, default ``harness/data/demo``)
---------------------------------------------------------------
* ``audio/<utterance_id>.flac`` -- 16 kHz, mono, 16-bit PCM FLAC (:mod:`harness.suite.audio`).
* ``manifest.csv`` -- one row per utterance, columns
  ``utterance_id,audio,speaker_id,content_id,transcript,gender,accent,voice``.
* ``corpus.yaml`` -- name, manifest, dimensions ``[gender, accent]`` and a description.
* ``provenance.json``, ``build-report.txt`` -- the builder's record (voices, synthesiser versions, filters).

Every synthetic speaker reads the same 12 neutral English sentences (``s01``..``s12``, see
:data:`SENTENCES`). The default build has 27 speakers: 6 espeak-ng accent groups with 2 female + 2 male
speakers each (24), plus the three flite voices (``slt`` female US and ``rms`` male US join ``us``;
``awb`` male Scottish joins ``scottish``). That is 324 utterances, about 13.5 MB (budget: 15 MB).

espeak-ng speakers differ by voice variant (``+f1``..``+f5`` female, ``+m1``..``+m8`` male), pitch
and rate, all picked by a fixed rule (:func:`espeak_voices`), so the build is deterministic: the same espeak-ng /
flite versions give the same samples. This script only writes the items and the voice specs and calls the
builder with both admission filters off, as the shipped demo was made: the demo exists to exercise the WER checks,
so its clips keep whatever Whisper mishears, and ``voice:praat`` hears two of its female voices (``spk01``,
``spk21``) as male in more than 20% of their clips, which the perceived-group filter would drop (the figures are in
benchmarks/bench_suite_build.py). The outliers are listed in the build report.

Rebuilt with the builder (espeak-ng 1.51, flite 2.2, Debian 12), every audio file and ``corpus.yaml`` are
byte-identical to the shipped ones (``cmp``). ``manifest.csv`` differs in one column only: ``voice`` now holds the
voice spec the builder names clips by (``espeak-ng:en-us+f1[pitch=38,rate=160]``, ``flite:slt``) where the old script
wrote espeak-ng's command line (``en-us+f1 -p 38 -s 160``) -- same voices, same samples. The shipped manifest is
kept as it was, since the corpus's content hash (run metadata, baselines) covers its rows; and the shipped folder
has no provenance.json or build-report.txt.

How to run
----------
    apt-get install -y espeak-ng flite        # Debian/Ubuntu
    .venv/bin/python scripts/build_demo_corpus.py --out /tmp/demo   # rebuild somewhere, then cmp
    .venv/bin/python scripts/build_demo_corpus.py --accents us british nyc --no-flite --out /tmp/small
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import yaml

from harness.suite.cli import main as suite_main

MAX_TOTAL_MB = 15.0

# Twelve everyday, demographically neutral sentences (written for this project), 6 to 8 words each.
SENTENCES: dict[str, str] = {
    "s01": "The bus leaves at half past seven.",
    "s02": "Please turn off the lights when you leave.",
    "s03": "It will be cloudy with light rain tomorrow.",
    "s04": "We need bread and milk from the shop.",
    "s05": "The library closes early on Sundays.",
    "s06": "Can you send me the report by Friday?",
    "s07": "The train was delayed by a signal fault.",
    "s08": "Water the plants twice a week in summer.",
    "s09": "My phone battery runs out very quickly.",
    "s10": "The meeting has moved to the second floor.",
    "s11": "Remember to lock the back door tonight.",
    "s12": "The new bridge opens to traffic next month.",
}

# Accent group label -> espeak-ng voice (language) name. Order matters: it fixes speaker ids.
ESPEAK_ACCENTS: dict[str, str] = {
    "us": "en-us",
    "british": "en-gb-x-rp",
    "scottish": "en-gb-scotland",
    "caribbean": "en-029",
    "lancashire": "en-gb-x-gbclan",
    "westmidlands": "en-gb-x-gbcwmd",
    # Defined but not built by default (size budget): add with --accents.
    "nyc": "en-us-nyc",
    "southern": "en-gb",
}
DEFAULT_ACCENTS = ("us", "british", "scottish", "caribbean", "lancashire", "westmidlands")

FEMALE_VARIANTS = ("f1", "f2", "f3", "f4", "f5")
MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8")
# Per accent group (cyclic): two espeak -p values (0-99, default 50) and two -s rates (words per
# minute, default 175). Each pair averages 50 / 175, and both genders of a group use the same pairs, so
# pitch setting and speaking rate are balanced across gender and across accent.
PITCH_PAIRS = ((38, 62), (44, 56), (34, 66), (41, 59), (47, 53), (36, 64))
RATE_PAIRS = ((160, 190), (165, 185), (170, 180), (155, 195), (162, 188), (168, 182))

# flite voices: (voice, gender, accent). They join espeak accent groups of the same accent.
FLITE_VOICES = (("slt", "female", "us"), ("rms", "male", "us"), ("awb", "male", "scottish"))

DESCRIPTION = """\
Synthetic speech made offline with the espeak-ng and flite synthesisers by
scripts/build_demo_corpus.py: every synthetic speaker (labelled female or male by the
synthesiser voice used, and by espeak-ng accent or flite voice) reads the same 12 neutral
English sentences, as 16 kHz mono FLAC. It exists to exercise the harness end to end
(loading, model calls, metrics, reports) without downloading any data. It is NOT real human
speech: its gender and accent labels name synthesiser settings, not people, and results on
it say nothing about a model's fairness towards real speakers.
"""
"""corpus.yaml's description, line by line as shipped."""


def espeak_voices(accents: list[str]) -> list[dict]:
    """2 female + 2 male espeak-ng voices per accent group, parameters by a fixed rule.

    Accent group ``a`` (0-based, in ``accents`` order) gets female variants ``f[2a], f[2a+1]`` and
    male variants ``m[2a], m[2a+1]`` (cyclic), so consecutive groups use different variants. Speaker
    ``j`` (0, 1) of gender ``g`` (0 female, 1 male) gets pitch ``PITCH_PAIRS[a][j]`` and rate
    ``RATE_PAIRS[a][j XOR g XOR a%2]``: within every accent x gender cell the mean pitch setting is 50
    and the mean rate 175 wpm, so neither is confounded with gender or accent.
    """
    voices = []
    for a, accent in enumerate(accents):
        pitches, rates = PITCH_PAIRS[a % len(PITCH_PAIRS)], RATE_PAIRS[a % len(RATE_PAIRS)]
        for g, (gender, variants) in enumerate((("female", FEMALE_VARIANTS), ("male", MALE_VARIANTS))):
            for j in range(2):
                variant = variants[(2 * a + j) % len(variants)]
                spec = f"espeak-ng:{ESPEAK_ACCENTS[accent]}+{variant}[pitch={pitches[j]},rate={rates[j ^ g ^ (a % 2)]}]"
                voices.append({"spec": spec, "gender": gender, "accent": accent})
    return voices


def flite_voices(accents: list[str]) -> list[dict]:
    return [
        {"spec": f"flite:{voice}", "gender": gender, "accent": accent}
        for voice, gender, accent in FLITE_VOICES
        if accent in accents
    ]


def write_inputs(folder: Path, accents: list[str], use_flite: bool) -> tuple[Path, Path]:
    """The items CSV and the voices YAML of the demo (speaker ids ``spk01``... in order)."""
    items, voices_file = folder / "sentences.csv", folder / "voices.yaml"
    with open(items, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["content_id", "text"])
        writer.writerows(SENTENCES.items())
    voices = espeak_voices(accents) + (flite_voices(accents) if use_flite else [])
    voices_file.write_text(yaml.safe_dump(voices, sort_keys=False))
    return items, voices_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", type=Path, default=Path("harness/data/demo"), help="output folder (default: %(default)s)"
    )
    parser.add_argument(
        "--accents",
        nargs="+",
        default=list(DEFAULT_ACCENTS),
        choices=list(ESPEAK_ACCENTS),
        help="espeak-ng accent groups to build, 2 F + 2 M speakers each (default: %(default)s)",
    )
    parser.add_argument("--no-flite", action="store_true", help="leave out the three flite voices")
    parser.add_argument(
        "--max-mb", type=float, default=MAX_TOTAL_MB, help="fail above this many MB of audio; 0: no limit"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="synthesis processes (default: LALM_WORKERS, else every core)"
    )
    args = parser.parse_args(argv)
    if args.jobs:
        os.environ["LALM_WORKERS"] = str(max(1, args.jobs))
    with tempfile.TemporaryDirectory(prefix="demo_corpus_") as scratch:
        items, voices = write_inputs(Path(scratch), list(dict.fromkeys(args.accents)), not args.no_flite)
        status = suite_main(
            [
                "build",
                "--items",
                str(items),
                "--voices",
                str(voices),
                "--out",
                str(args.out),
                "--layout",
                "corpus",
                "--no-wer-filter",
                "--no-perceived-filter",
                "--name",
                "demo",
                "--description",
                DESCRIPTION,
                "--clip-store",
                str(Path(scratch) / "clips"),
            ]
        )
    total = sum(path.stat().st_size for path in (args.out / "audio").glob("*.flac")) if status == 0 else 0
    if args.max_mb and total > args.max_mb * 1e6:
        print(
            f"PROBLEM: {args.out} has {total / 1e6:.1f} MB of audio, over the {args.max_mb:g} MB budget",
            file=sys.stderr,
        )
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
