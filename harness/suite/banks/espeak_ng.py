"""``espeak-ng``: eSpeak NG's formant voices (Debian ``espeak-ng``), the demo corpus's synthesiser.

``VOICE`` is a language voice with an optional variant (``en-us``, ``en-gb-x-rp+f2``, ``en-029+m3``): ``espeak-ng
--voices`` lists the languages, ``espeak-ng --voices=variant`` the variants. Settings: ``pitch`` (``-p``, 0-99,
default 50), ``rate`` (``-s``, words per minute, 80-450, default 175), ``amplitude`` (``-a``, 0-200). The command is
``espeak-ng -v VOICE [-p PITCH] [-s RATE] [-a AMPLITUDE] -w OUT.wav TEXT``; eSpeak NG is deterministic, so one version
gives one clip per recipe.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.suite.banks import CommandLineBank, Setting, VoicePackage, debian_version, integer_between
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = "apt-get install -y espeak-ng (Debian/Ubuntu)"
OPTIONS = {"pitch": "-p", "rate": "-s", "amplitude": "-a"}


@functools.cache
def espeak_voices(kind: str = "") -> frozenset[str]:
    """The language names (``kind`` empty) or variant names (``kind`` ``variant``) this espeak-ng knows."""
    listing = subprocess.run(
        ["espeak-ng", f"--voices={kind}" if kind else "--voices"], capture_output=True, text=True, check=True
    ).stdout
    names = set()
    for line in listing.splitlines()[1:]:
        columns = line.split()
        if len(columns) >= 5:
            names.add(columns[4].rpartition("/")[2] if kind == "variant" else columns[1])
    return frozenset(names)


def run_espeak(voice: str, options: list[str], text: str) -> tuple[np.ndarray, int]:
    """``espeak-ng -v voice *options -w out.wav text``: mono float64 samples and their rate."""
    with tempfile.TemporaryDirectory(prefix="espeak-") as folder:
        wav = Path(folder) / "clip.wav"
        subprocess.run(
            ["espeak-ng", "-v", voice, *options, "-w", str(wav), text],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        samples, rate = sf.read(wav, dtype="float64", always_2d=True)
    return samples.mean(axis=1), rate


class EspeakBank(CommandLineBank):
    program = "espeak-ng"
    install = INSTALL
    version_pattern = r"text-to-speech: (\S+)"
    name = "espeak-ng"
    settings = {
        "pitch": Setting("-p, 0-99 (default 50)", integer_between(0, 99)),
        "rate": Setting("-s, words per minute (default 175)", integer_between(80, 450)),
        "amplitude": Setting("-a, 0-200 (default 100)", integer_between(0, 200)),
    }

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        language, plus, variant = voice.voice.partition("+")
        if language not in espeak_voices():
            raise SuiteError(
                f"voice spec {voice.text!r}: espeak-ng has no voice {language!r} (espeak-ng --voices lists them)"
            )
        if plus and variant not in espeak_voices("variant"):
            raise SuiteError(
                f"voice spec {voice.text!r}: espeak-ng has no variant {variant!r} (espeak-ng --voices=variant lists them)"
            )

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        return run_espeak(voice.voice, espeak_options(voice), text)

    def package(self, voice: VoiceSpec) -> VoicePackage:
        return VoicePackage("espeak-ng-data", debian_version("espeak-ng-data"), "GPL-3.0-or-later (eSpeak NG)")


def espeak_options(voice: VoiceSpec) -> list[str]:
    """``-p``, ``-s``, ``-a`` in that order, for the settings the spec gives."""
    setting = voice.setting
    return [part for key, flag in OPTIONS.items() if key in setting for part in (flag, setting[key])]


BANK = EspeakBank()
