#!/usr/bin/env python3
"""Build the shipped demo corpus: synthetic speech from espeak-ng and flite, offline.

What it makes (under ``--out``, default ``harness/data/demo``)
---------------------------------------------------------------
* ``audio/<utterance_id>.flac`` -- 16 kHz, mono, 16-bit PCM FLAC (lossless: the decoded samples are the
  same on every machine that reads the file).
* ``manifest.csv`` -- one row per utterance, columns
  ``utterance_id,audio,speaker_id,content_id,transcript,gender,accent,voice``.
* ``corpus.yaml`` -- name, manifest, dimensions ``[gender, accent]`` and a description.

Every synthetic speaker reads the same 12 neutral English sentences (``s01``..``s12``, see
:data:`SENTENCES`). The default build has 27 speakers: 6 espeak-ng accent groups with 2 female + 2 male
speakers each (24), plus the three flite voices (``slt`` female US and ``rms`` male US join ``us``;
``awb`` male Scottish joins ``scottish``). That is 324 utterances, about 13.5 MB (budget: 15 MB).

espeak-ng speakers differ by voice variant (``+f1``..``+f5`` female, ``+m1``..``+m8`` male), pitch
(``-p``) and rate (``-s``), all picked by a fixed rule (:func:`espeak_speakers`), so the build is
deterministic: the same espeak-ng / flite versions give the same samples (the build prints a fingerprint
of all decoded samples to compare).

Processing of every utterance: synthesise to WAV -> mono float -> resample to 16 kHz (polyphase,
``scipy.signal.resample_poly``) -> trim leading/trailing silence, keeping 0.1 s -> peak-normalise to
-6 dBFS (so the level does not differ by voice) -> FLAC PCM_16, compression level 8, via soundfile.

At the end the build checks that every file reads back at 16 kHz mono, measures each speaker's median F0
with a plain autocorrelation pitch tracker, fails if any female speaker's F0 is not above every male
speaker's, and prints a per-speaker table (F0, mean duration) and the total size.

How to run
----------
    apt-get install -y espeak-ng flite        # Debian/Ubuntu; mbrola voices are NOT used
    .venv/bin/python scripts/build_demo_corpus.py                   # rebuild harness/data/demo
    .venv/bin/python scripts/build_demo_corpus.py --out /tmp/demo   # somewhere else
    .venv/bin/python scripts/build_demo_corpus.py --accents us british nyc --no-flite

Python dependencies: numpy, scipy, soundfile (all in the project's dependencies).
Built and checked with espeak-ng 1.51 and flite 2.2 (Debian 12).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

SAMPLE_RATE = 16_000
PEAK_DBFS = -6.0
KEEP_SILENCE_S = 0.1
SILENCE_DB = -50.0  # frames quieter than this, relative to the loudest frame, count as silence
MANIFEST_COLUMNS = ("utterance_id", "audio", "speaker_id", "content_id", "transcript", "gender", "accent", "voice")
MAX_TOTAL_MB = 15.0  # budget for the shipped corpus (decimal MB, files' sizes added up)

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


@dataclasses.dataclass(frozen=True)
class Speaker:
    speaker_id: str
    gender: str
    accent: str
    engine: str  # "espeak-ng" or "flite"
    voice: str  # e.g. "en-us+f1 -p 40 -s 150" or "flite:slt"
    args: tuple[str, ...]  # synthesiser arguments other than text and output file


def espeak_speakers(accents: list[str], start: int = 1) -> list[Speaker]:
    """2 female + 2 male espeak-ng speakers per accent group, parameters by a fixed rule.

    Accent group ``a`` (0-based, in ``accents`` order) gets female variants ``f[2a], f[2a+1]`` and
    male variants ``m[2a], m[2a+1]`` (cyclic), so consecutive groups use different variants. Speaker
    ``j`` (0, 1) of gender ``g`` (0 female, 1 male) gets pitch ``PITCH_PAIRS[a][j]`` and rate
    ``RATE_PAIRS[a][j XOR g XOR a%2]``: within every accent x gender cell the mean pitch setting is 50
    and the mean rate 175 wpm, so neither is confounded with gender or accent.
    """
    speakers = []
    for a, accent in enumerate(accents):
        language = ESPEAK_ACCENTS[accent]
        pitches, rates = PITCH_PAIRS[a % len(PITCH_PAIRS)], RATE_PAIRS[a % len(RATE_PAIRS)]
        for g, (gender, variants) in enumerate((("female", FEMALE_VARIANTS), ("male", MALE_VARIANTS))):
            for j in range(2):
                variant = variants[(2 * a + j) % len(variants)]
                pitch, rate = pitches[j], rates[j ^ g ^ (a % 2)]
                voice = f"{language}+{variant}"
                speakers.append(
                    Speaker(
                        speaker_id=f"spk{start + len(speakers):02d}",
                        gender=gender,
                        accent=accent,
                        engine="espeak-ng",
                        voice=f"{voice} -p {pitch} -s {rate}",
                        args=("-v", voice, "-p", str(pitch), "-s", str(rate)),
                    )
                )
    return speakers


def flite_speakers(accents: list[str], start: int) -> list[Speaker]:
    speakers = []
    for voice, gender, accent in FLITE_VOICES:
        if accent not in accents:
            continue
        speakers.append(
            Speaker(
                speaker_id=f"spk{start + len(speakers):02d}",
                gender=gender,
                accent=accent,
                engine="flite",
                voice=f"flite:{voice}",
                args=("-voice", voice),
            )
        )
    return speakers


def synthesise(speaker: Speaker, text: str, workdir: Path) -> tuple[np.ndarray, int]:
    """Run the synthesiser; return mono float64 samples and their sample rate."""
    wav = workdir / f"{speaker.speaker_id}_{hashlib.sha1(text.encode()).hexdigest()[:8]}.wav"
    if speaker.engine == "espeak-ng":
        cmd = ["espeak-ng", *speaker.args, "-w", str(wav), text]
    else:
        cmd = ["flite", *speaker.args, "-t", text, "-o", str(wav)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    samples, rate = sf.read(wav, dtype="float64", always_2d=True)
    wav.unlink()
    return samples.mean(axis=1), rate


def to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE:
        return samples
    g = gcd(SAMPLE_RATE, rate)
    return resample_poly(samples, SAMPLE_RATE // g, rate // g)


def trim_silence(samples: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """Cut leading/trailing silence (10 ms frames below SILENCE_DB of the loudest), keep KEEP_SILENCE_S."""
    frame = rate // 100
    n = len(samples) // frame
    if n == 0:
        return samples
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms > rms.max() * 10 ** (SILENCE_DB / 20))
    keep = int(KEEP_SILENCE_S * rate)
    first = max(0, loud[0] * frame - keep)
    last = min(len(samples), (loud[-1] + 1) * frame + keep)
    return samples[first:last]


def normalise(samples: np.ndarray) -> np.ndarray:
    peak = np.abs(samples).max()
    return samples * (10 ** (PEAK_DBFS / 20) / peak) if peak > 0 else samples


def median_f0(samples: np.ndarray, rate: int = SAMPLE_RATE, fmin: float = 60.0, fmax: float = 400.0) -> np.ndarray:
    """F0 (Hz) of the voiced frames: normalised autocorrelation on 40 ms frames, 10 ms hop.

    A frame is voiced when it is within 30 dB of the loudest frame and its autocorrelation peak in the
    fmin..fmax lag range is above 0.5. Lags whose value is within 10% of the best and shorter are
    preferred, which avoids the usual octave-down error.
    """
    frame, hop = int(0.04 * rate), int(0.01 * rate)
    lag_min, lag_max = int(rate / fmax), int(rate / fmin)
    starts = range(0, len(samples) - frame, hop)
    energies = np.array([np.sum(samples[s : s + frame] ** 2) for s in starts])
    if energies.size == 0:
        return np.array([])
    floor = energies.max() * 1e-3
    f0s = []
    for s, energy in zip(starts, energies):
        if energy < floor:
            continue
        x = samples[s : s + frame] - samples[s : s + frame].mean()
        spectrum = np.fft.rfft(x, 2 * frame)
        ac = np.fft.irfft(spectrum * np.conj(spectrum))[: lag_max + 1]
        if ac[0] <= 0:
            continue
        # unbiased normalisation so long lags are not penalised
        ac = ac / ac[0] * frame / (frame - np.arange(lag_max + 1))
        segment = ac[lag_min : lag_max + 1]
        best = segment.max()
        if best < 0.5:
            continue
        lag = lag_min + int(np.flatnonzero(segment >= 0.9 * best)[0])
        # refine to the local maximum at or after the first qualifying lag
        while lag < lag_max and ac[lag + 1] > ac[lag]:
            lag += 1
        f0s.append(rate / lag)
    return np.array(f0s)


def check_tools(engines: set[str]) -> None:
    missing = [tool for tool in sorted(engines) if shutil.which(tool) is None]
    if missing:
        sys.exit(
            f"missing synthesiser(s) {missing}: install them with `apt-get install -y espeak-ng flite` (Debian/Ubuntu)"
        )


def write_corpus_yaml(out: Path) -> None:
    (out / "corpus.yaml").write_text(
        "name: demo\n"
        "manifest: manifest.csv\n"
        "dimensions: [gender, accent]\n"
        "description: >-\n"
        "  Synthetic speech made offline with the espeak-ng and flite synthesisers by\n"
        "  scripts/build_demo_corpus.py: every synthetic speaker (labelled female or male by the\n"
        "  synthesiser voice used, and by espeak-ng accent or flite voice) reads the same 12 neutral\n"
        "  English sentences, as 16 kHz mono FLAC. It exists to exercise the harness end to end\n"
        "  (loading, model calls, metrics, reports) without downloading any data. It is NOT real human\n"
        "  speech: its gender and accent labels name synthesiser settings, not people, and results on\n"
        "  it say nothing about a model's fairness towards real speakers.\n"
    )


def build(out: Path, accents: list[str], use_flite: bool, jobs: int, max_mb: float = MAX_TOTAL_MB) -> int:
    t0 = time.perf_counter()
    speakers = espeak_speakers(accents)
    if use_flite:
        speakers += flite_speakers(accents, start=len(speakers) + 1)
    check_tools({s.engine for s in speakers})

    audio_dir = out / "audio"
    audio_dir.mkdir(parents=True, exist_ok=True)
    for stale in audio_dir.glob("*.flac"):
        stale.unlink()

    jobs_list = [(spk, cid, text) for spk in speakers for cid, text in SENTENCES.items()]
    with tempfile.TemporaryDirectory(prefix="demo_corpus_") as tmp:

        def make(job: tuple[Speaker, str, str]) -> tuple[str, np.ndarray]:
            spk, cid, text = job
            samples, rate = synthesise(spk, text, Path(tmp))
            samples = normalise(trim_silence(to_16k(samples, rate)))
            utterance_id = f"{spk.speaker_id}_{cid}"
            sf.write(
                audio_dir / f"{utterance_id}.flac",
                samples,
                SAMPLE_RATE,
                format="FLAC",
                subtype="PCM_16",
                compression_level=1.0,  # strongest FLAC setting; lossless either way
            )
            return utterance_id, samples

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = dict(pool.map(make, jobs_list))

    with open(out / "manifest.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(MANIFEST_COLUMNS)
        for spk, cid, text in jobs_list:
            uid = f"{spk.speaker_id}_{cid}"
            writer.writerow([uid, f"audio/{uid}.flac", spk.speaker_id, cid, text, spk.gender, spk.accent, spk.voice])
    write_corpus_yaml(out)
    build_s = time.perf_counter() - t0

    # --- checks and summary -------------------------------------------------------------------------
    problems = []
    fingerprint = hashlib.sha256()
    rows = []
    for spk in speakers:
        f0s, durations = [], []
        for cid in SENTENCES:
            uid = f"{spk.speaker_id}_{cid}"
            info = sf.info(audio_dir / f"{uid}.flac")
            if info.samplerate != SAMPLE_RATE or info.channels != 1 or info.subtype != "PCM_16":
                problems.append(f"{uid}: {info.samplerate} Hz, {info.channels} ch, {info.subtype}")
            decoded, _ = sf.read(audio_dir / f"{uid}.flac", dtype="int16")
            fingerprint.update(uid.encode() + decoded.tobytes())
            durations.append(len(decoded) / SAMPLE_RATE)
            f0s.append(median_f0(results[uid]))
        voiced = np.concatenate(f0s)
        rows.append((spk, float(np.median(voiced)) if voiced.size else float("nan"), float(np.mean(durations))))

    female_f0 = [f0 for spk, f0, _ in rows if spk.gender == "female"]
    male_f0 = [f0 for spk, f0, _ in rows if spk.gender == "male"]
    if female_f0 and male_f0 and not min(female_f0) > max(male_f0):
        problems.append(
            f"F0 overlap: lowest female median {min(female_f0):.0f} Hz <= highest male {max(male_f0):.0f} Hz"
        )

    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if max_mb and total > max_mb * 1e6:
        problems.append(f"{out} is {total / 1e6:.1f} MB, over the {max_mb:g} MB budget (--max-mb)")

    print(f"{'speaker':8} {'gender':7} {'accent':13} {'voice':30} {'F0 Hz':>6} {'dur s':>6}")
    for spk, f0, duration in rows:
        print(f"{spk.speaker_id:8} {spk.gender:7} {spk.accent:13} {spk.voice:30} {f0:6.0f} {duration:6.2f}")
    if female_f0 and male_f0:
        print(
            f"median F0: female {min(female_f0):.0f}-{max(female_f0):.0f} Hz, "
            f"male {min(male_f0):.0f}-{max(male_f0):.0f} Hz"
        )
    print(
        f"{len(speakers)} speakers x {len(SENTENCES)} sentences = {len(jobs_list)} utterances, "
        f"{total / 1e6:.2f} MB ({total / 2**20:.2f} MiB) in {out}, built in {build_s:.1f} s"
    )
    print(f"sample fingerprint (sha256 of all decoded samples): {fingerprint.hexdigest()}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


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
        "--max-mb",
        type=float,
        default=MAX_TOTAL_MB,
        help="fail above this total size in MB; 0: no limit (default: %(default)s)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel synthesis jobs (default: CPUs)")
    args = parser.parse_args(argv)
    for word_count in (len(text.split()) for text in SENTENCES.values()):
        assert 6 <= word_count <= 12, word_count
    return build(args.out, list(dict.fromkeys(args.accents)), not args.no_flite, max(1, args.jobs), args.max_mb)


if __name__ == "__main__":
    sys.exit(main())
