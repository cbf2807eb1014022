"""Small inputs for the suite builder's tests: sentence files and espeak-ng voice lists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.models.base import Backend
from harness.suite.banks import VoiceBank

SENTENCES = {
    "c1": "The bus leaves at half past seven.",
    "c2": "Please turn off the lights when you leave.",
    "c3": "We need bread and milk from the shop.",
    "c4": "The library closes early on Sundays.",
    "c5": "Water the plants twice a week in summer.",
    "c6": "My phone battery runs out very quickly.",
    "c7": "Remember to lock the back door tonight.",
    "c8": "The new bridge opens to traffic next month.",
}


def write_items(folder: Path, count: int = 2) -> Path:
    path = folder / "items.csv"
    rows = [f"{key},{text}" for key, text in list(SENTENCES.items())[:count]]
    path.write_text("content_id,text\n" + "\n".join(rows) + "\n")
    return path


def espeak_voices(per_group: int = 2) -> str:
    """``per_group`` female and male en-us voices (variants f1.., m1..), as a --voices argument."""
    female = [f"espeak-ng:en-us+f{n}@gender=female" for n in range(1, per_group + 1)]
    male = [f"espeak-ng:en-us+m{n}@gender=male" for n in range(1, per_group + 1)]
    return ",".join(female + male)


needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed: apt-get install -y espeak-ng"
)
"""The suite builder's tests read items with espeak-ng (Debian); without it they skip, saying so."""


class FixedTranscriber(Backend):
    """A test ASR (register it as ``fixedasr``): every clip is heard as the target's sentence of :data:`SENTENCES`
    (``fixedasr:c1``), whatever was said."""

    def __init__(self, spec, target, options):
        self.spec, self.text = spec, SENTENCES[target]

    def fingerprint(self):
        return f"{self.spec}:1"

    def load(self):
        return self

    def generate(self, requests, params):
        return [self.text.lower().rstrip(".") for _ in requests]


class PitchEars(Backend):
    """A test perceiver (register it as ``pitchears``): answers the perceiver prompt with the group ``voice:praat``'s
    pitch classes name, in a sentence."""

    def __init__(self, spec, target, options):
        self.spec = spec

    def fingerprint(self):
        return "pitchears:1"

    def load(self):
        return self

    def generate(self, requests, params):
        from harness.perception import voice_praat_group

        assert all("female or male" in request.prompt for request in requests)
        return [f"It sounds {voice_praat_group(r.audio.samples, r.audio.sample_rate)}." for r in requests]


class ToneBank(VoiceBank):
    """A test voice bank (register it under any name): each voice a sine of ``VOICE`` Hz, 0.3 s per word of the text;
    it needs no synthesiser, so the builder's voice checks (the engine confound, the voices per group) run anywhere."""

    parallel = False

    def __init__(self, name: str):
        self.name = name

    def version(self) -> str:
        return f"{self.name} 1"

    def unavailable(self) -> None:
        return None

    def check(self, voice) -> None:
        super().check(voice)
        float(voice.voice)

    def synthesise(self, voice, text: str):
        import numpy as np

        rate = 16_000
        seconds = 0.3 * len(text.split())
        return 0.3 * np.sin(2 * np.pi * float(voice.voice) * np.arange(int(rate * seconds)) / rate), rate


TONE_A, TONE_B, TONE_C = ToneBank("tone-a"), ToneBank("tone-b"), ToneBank("tone-c")
