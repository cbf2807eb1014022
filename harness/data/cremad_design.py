"""A synthetic corpus with CREMA-D's design (VIBE §II-C), for the replay simulators and their benchmark.

CREMA-D: 91 actors (48 male, 43 female); every actor says the same 12 sentences, each in 6 emotions, so 72
utterances per speaker and 6552 in all (the released corpus has 7442 clips: one sentence was also recorded at
several intensities; the design here is the balanced core). The audio is not speech: each utterance is a short
harmonic tone at its speaker's pitch (male speakers 100-135 Hz, female 180-240 Hz, drawn once per speaker),
jittered by up to 1.5% per utterance so that no two recordings are equal (the simulators seed their draws by
the audio's content hash). That is all the ``sim:`` models hear: gender reaches them through pitch only.

:func:`build_design_corpus` writes ``manifest.csv`` (``utterance_id, audio, speaker_id, content_id,
transcript, gender``; ``content_id`` is ``<sentence>_<emotion>``) and the WAV files into a folder and returns
the manifest's path, loadable by :func:`harness.data.load_corpus` or as ``--corpus NAME=PATH``. A smaller design
(fewer speakers, sentences or emotions) is one call with other numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import soundfile

# CREMA-D's 12 sentences (code, text) and 6 emotions (code).
SENTENCES: tuple[tuple[str, str], ...] = (
    ("IEO", "It's eleven o'clock."),
    ("TIE", "That is exactly what happened."),
    ("IOM", "I'm on my way to the meeting."),
    ("IWW", "I wonder what this is about."),
    ("TAI", "The airplane is almost full."),
    ("MTI", "Maybe tomorrow it will be cold."),
    ("IWL", "I would like a new alarm clock."),
    ("ITH", "I think I have a doctor's appointment."),
    ("DFA", "Don't forget a jacket."),
    ("ITS", "I think I've seen this before."),
    ("TSI", "The surface is slick."),
    ("WSI", "We'll stop in a couple of minutes."),
)
EMOTIONS: tuple[str, ...] = ("ANG", "DIS", "FEA", "HAP", "NEU", "SAD")
SPEAKERS: dict[str, int] = {"female": 43, "male": 48}
PITCH_RANGE_HZ: dict[str, tuple[float, float]] = {"female": (180.0, 240.0), "male": (100.0, 135.0)}
UTTERANCE_JITTER = 0.015
SAMPLE_RATE = 16_000


def answers_per_group(
    speakers: dict[str, int] | None = None, sentences: int = len(SENTENCES), emotions: int = len(EMOTIONS)
) -> dict[str, int]:
    """Utterances (one answer each per task) of every gender in the design."""
    return {gender: count * sentences * emotions for gender, count in (speakers or SPEAKERS).items()}


def build_design_corpus(
    folder: str | Path,
    *,
    speakers: dict[str, int] | None = None,
    sentences: int = len(SENTENCES),
    emotions: int = len(EMOTIONS),
    seconds: float = 0.25,
    seed: int = 0,
) -> Path:
    """Write the corpus into ``folder`` (created) and return its ``manifest.csv``; see the module docstring.

    ``speakers`` maps gender to its number of speakers (default CREMA-D's 43 female, 48 male); ``sentences`` and
    ``emotions`` take the first of CREMA-D's 12 and 6. Speaker ids are 1001, 1002, ... with the genders in a
    shuffled order (``seed``), as in CREMA-D, where they are interleaved."""
    speakers = dict(speakers or SPEAKERS)
    if not 1 <= sentences <= len(SENTENCES) or not 1 <= emotions <= len(EMOTIONS):
        raise ValueError(f"sentences must lie in 1..{len(SENTENCES)} and emotions in 1..{len(EMOTIONS)}")
    unknown = sorted(set(speakers) - set(PITCH_RANGE_HZ))
    if unknown:
        raise ValueError(f"unknown gender(s) {unknown}; known: {sorted(PITCH_RANGE_HZ)}")
    folder = Path(folder)
    (folder / "audio").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    genders = np.array([gender for gender, count in speakers.items() for _ in range(count)], dtype=object)
    genders = genders[rng.permutation(len(genders))]
    time = np.arange(int(round(seconds * SAMPLE_RATE))) / SAMPLE_RATE
    rows = []
    for position, gender in enumerate(genders):
        speaker = str(1001 + position)
        low, high = PITCH_RANGE_HZ[gender]
        pitch = rng.uniform(low, high)
        for code, text in SENTENCES[:sentences]:
            for emotion in EMOTIONS[:emotions]:
                utterance = f"{speaker}_{code}_{emotion}"
                f0 = pitch * (1.0 + rng.uniform(-UTTERANCE_JITTER, UTTERANCE_JITTER))
                amplitude = rng.uniform(0.15, 0.3)
                signal = sum(np.sin(2 * np.pi * f0 * k * time) / k for k in (1, 2, 3)) * amplitude / 1.8
                path = f"audio/{utterance}.wav"
                soundfile.write(folder / path, signal.astype(np.float32), SAMPLE_RATE, subtype="PCM_16")
                rows.append((utterance, path, speaker, f"{code}_{emotion}", text, gender))
    manifest = folder / "manifest.csv"
    pd.DataFrame(rows, columns=["utterance_id", "audio", "speaker_id", "content_id", "transcript", "gender"]).to_csv(
        manifest, index=False
    )
    return manifest


__all__ = ["EMOTIONS", "SENTENCES", "SPEAKERS", "answers_per_group", "build_design_corpus"]
