"""``pico``: SVOX Pico (Debian non-free ``libttspico-utils``, lingware in ``libttspico-data``).

Voices are Pico's languages, one female voice each: ``en-US`` and ``en-GB``; ``de-DE``, ``es-ES``, ``fr-FR`` and
``it-IT`` read English text with their own language's phonology (foreign-accented English, crude). Settings:
``speed`` and ``pitch`` (Pico's markup levels, percent of the voice's own: speed 20-500, pitch 50-200, default 100).
The command is ``pico2wave -l VOICE -w OUT.wav TEXT`` (the text wrapped in ``<speed level=..>`` / ``<pitch
level=..>`` where given); Pico is deterministic.

Licence: Apache-2.0 (SVOX); Debian files the lingware under non-free, as it is shipped without its sources.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import soundfile as sf

from harness.suite.banks import CommandLineBank, Setting, VoicePackage, debian_version, integer_between
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

PACKAGE = "libttspico-data"
INSTALL = "SVOX Pico is in Debian's non-free archive: scripts/install_voice_banks.sh (apt-get install libttspico-utils)"
LANGUAGE_FOLDER = Path("/usr/share/pico/lang")


def pico_voices() -> list[str]:
    """The installed languages: ``<language>_ta.bin`` text-analysis files of :data:`LANGUAGE_FOLDER`."""
    if not LANGUAGE_FOLDER.is_dir():
        return []
    return sorted(path.name.removesuffix("_ta.bin") for path in LANGUAGE_FOLDER.glob("*_ta.bin"))


class PicoBank(CommandLineBank):
    program = "pico2wave"
    install = INSTALL
    version_pattern = r"$^"
    name = "pico"
    settings = {
        "speed": Setting("<speed level>, percent of the voice's rate, 20-500 (default 100)", integer_between(20, 500)),
        "pitch": Setting("<pitch level>, percent of the voice's pitch, 50-200 (default 100)", integer_between(50, 200)),
    }

    def version(self) -> str:
        return f"pico {debian_version('libttspico-utils') or 'unknown'}"

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if voice.voice not in pico_voices():
            raise SuiteError(
                f"voice spec {voice.text!r}: Pico has no voice {voice.voice!r} under {LANGUAGE_FOLDER}; it has "
                f"{pico_voices()}"
            )

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        marked = escape(text)
        for key in ("pitch", "speed"):
            if key in voice.setting:
                marked = f"<{key} level='{int(voice.setting[key])}'>{marked}</{key}>"
        with tempfile.TemporaryDirectory(prefix="pico-") as folder:
            wav = Path(folder) / "clip.wav"
            subprocess.run(
                [self.program, "-l", voice.voice, "-w", str(wav), marked],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            samples, rate = sf.read(wav, dtype="float64", always_2d=True)
        return samples.mean(axis=1), rate

    def package(self, voice: VoiceSpec) -> VoicePackage:
        return VoicePackage(PACKAGE, debian_version(PACKAGE), "Apache-2.0 (SVOX; Debian non-free: no lingware sources)")


BANK = PicoBank()
