"""``flite``: CMU Flite's voices (Debian ``flite``): ``slt`` (US female), ``rms`` (US male), ``awb`` (Scottish male),
``kal`` and ``kal16`` (US male), as ``flite -lv`` lists them.

Settings: ``stretch`` (``--setf duration_stretch``, above 1 is slower) and ``pitch_hz`` (``--setf
int_f0_target_mean``, the voice's mean F0). The command is ``flite -voice VOICE [--setf ...] -t TEXT -o OUT.wav``;
Flite is deterministic.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.suite.banks import CommandLineBank, Setting, VoicePackage, debian_version, positive_number
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = "apt-get install -y flite (Debian/Ubuntu)"
FEATURES = {"stretch": "duration_stretch", "pitch_hz": "int_f0_target_mean"}


@functools.cache
def flite_voices() -> frozenset[str]:
    listing = subprocess.run(["flite", "-lv"], capture_output=True, text=True, check=True).stdout
    return frozenset(listing.partition(":")[2].split())


class FliteBank(CommandLineBank):
    program = "flite"
    install = INSTALL
    version_pattern = r"version: flite-(\S+)"
    name = "flite"
    settings = {
        "stretch": Setting("duration stretch, above 1 slower (default 1)", positive_number),
        "pitch_hz": Setting("mean F0 in Hz (the voice's own by default)", positive_number),
    }

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if voice.voice not in flite_voices():
            raise SuiteError(
                f"voice spec {voice.text!r}: flite has no voice {voice.voice!r}; it has {sorted(flite_voices())}"
            )

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        features = [part for key, value in voice.settings for part in ("--setf", f"{FEATURES[key]}={value}")]
        with tempfile.TemporaryDirectory(prefix="flite-") as folder:
            wav = Path(folder) / "clip.wav"
            subprocess.run(
                ["flite", "-voice", voice.voice, *features, "-t", text, "-o", str(wav)],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            samples, rate = sf.read(wav, dtype="float64", always_2d=True)
        return samples.mean(axis=1), rate

    def package(self, voice: VoiceSpec) -> VoicePackage:
        return VoicePackage("libflite1", debian_version("libflite1"), "BSD-style (CMU Flite licence)")


BANK = FliteBank()
