"""``rhvoice``: RHVoice's statistical-parametric English voices (Debian non-free ``rhvoice`` + ``rhvoice-english``).

Voices, as ``/usr/share/RHVoice/voices/`` holds them: ``alan`` (male, Scottish English), ``bdl`` (male, US), ``clb``
(female, US), ``slt`` (female, US), and ``evgeniy-eng`` (male) and ``lyubov`` (female), English read by Russian-L1
speakers. Settings: ``rate`` and ``pitch`` (``-r``, ``-t``: percent of the voice's own, 50-200, default 100). The
command is ``RHVoice-test -p VOICE [-r RATE] [-t PITCH] -o OUT.wav`` with the text on its input; RHVoice is
deterministic (one version gives one clip per recipe). ``RHVoice-test`` names no version of its own, so the version
is the Debian package's.

Licences (``/usr/share/doc/rhvoice-english/copyright``): alan, bdl, clb and slt under the package's data licence,
LGPL-2.1+; evgeniy-eng and lyubov CC-BY-NC-ND-4.0, non-commercial. The package is in Debian's non-free archive
(``scripts/install_voice_banks.sh`` enables it).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.suite.banks import CommandLineBank, Setting, VoicePackage, debian_version, integer_between
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

PACKAGE = "rhvoice-english"
INSTALL = (
    "RHVoice is in Debian's non-free archive: scripts/install_voice_banks.sh (apt-get install rhvoice rhvoice-english)"
)
VOICES_FOLDER = Path("/usr/share/RHVoice/voices")
NON_COMMERCIAL = {"evgeniy-eng", "lyubov"}
OPTIONS = {"rate": "-r", "pitch": "-t"}


def rhvoice_voices() -> list[str]:
    """The installed voices: the folders of :data:`VOICES_FOLDER` with a ``voice.info``."""
    if not VOICES_FOLDER.is_dir():
        return []
    return sorted(path.parent.name for path in VOICES_FOLDER.glob("*/voice.info"))


class RHVoiceBank(CommandLineBank):
    program = "RHVoice-test"
    install = INSTALL
    version_pattern = r"$^"
    name = "rhvoice"
    settings = {
        "rate": Setting("-r, percent of the voice's rate, 50-200 (default 100)", integer_between(50, 200)),
        "pitch": Setting("-t, percent of the voice's pitch, 50-200 (default 100)", integer_between(50, 200)),
    }

    def version(self) -> str:
        return f"RHVoice {debian_version(PACKAGE) or 'unknown'}"

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if voice.voice not in rhvoice_voices():
            raise SuiteError(
                f"voice spec {voice.text!r}: RHVoice has no voice {voice.voice!r} under {VOICES_FOLDER}; it has "
                f"{rhvoice_voices()}"
            )

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        setting = voice.setting
        options = [part for key, flag in OPTIONS.items() if key in setting for part in (flag, setting[key])]
        with tempfile.TemporaryDirectory(prefix="rhvoice-") as folder:
            wav = Path(folder) / "clip.wav"
            subprocess.run(
                [self.program, "-p", voice.voice, *options, "-o", str(wav)],
                input=text.encode(),
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            samples, rate = sf.read(wav, dtype="float64", always_2d=True)
        return samples.mean(axis=1), rate

    def package(self, voice: VoiceSpec) -> VoicePackage:
        licence = (
            "CC-BY-NC-ND-4.0 (non-commercial; Debian non-free)"
            if voice.voice in NON_COMMERCIAL
            else "LGPL-2.1+ (RHVoice data; Debian non-free)"
        )
        return VoicePackage(PACKAGE, debian_version(PACKAGE), licence)


BANK = RHVoiceBank()
