"""``festival``: the Festival speech synthesis system's English voices (Debian ``festival`` and ``festvox-*``).

Voices, each its own Debian package: ``rab_diphone`` (British English male, ``festvox-rablpc16k``, contrib),
``don_diphone`` (British English male, ``festvox-don``, contrib), ``cmu_us_slt_arctic_hts`` (US English female, HTS,
``festvox-us-slt-hts``, main); any other voice folder under ``/usr/share/festival/voices/<language>/`` is read too.
Setting: ``stretch`` (Festival's ``Duration_Stretch``, above 1 slower). The command is ``text2wave -eval
(voice_VOICE) [-eval (Parameter.set 'Duration_Stretch S)] TEXT.txt -o OUT.wav``; Festival is deterministic.

Licences: the voices' own, from their Debian copyright files: rab_diphone and don_diphone, the University of
Edinburgh's free licence (use and redistribution with the notice kept); cmu_us_slt_arctic_hts, the CMU ARCTIC and
HTS BSD-style licences (EST-2003, BSD-3-clause).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.suite.banks import CommandLineBank, Setting, VoicePackage, debian_version, positive_number
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = (
    "apt-get install -y festival festvox-us-slt-hts, and festvox-rablpc16k festvox-don from Debian's contrib "
    "archive (scripts/install_voice_banks.sh)"
)
VOICES_FOLDER = Path("/usr/share/festival/voices")
PACKAGES = {
    "rab_diphone": ("festvox-rablpc16k", "University of Edinburgh free licence (notice kept; Debian contrib)"),
    "don_diphone": ("festvox-don", "University of Edinburgh free licence (notice kept; Debian contrib)"),
    "cmu_us_slt_arctic_hts": ("festvox-us-slt-hts", "EST-2003 and BSD-3-clause (CMU ARCTIC, HTS; Debian main)"),
}
NAME = re.compile(r"^[a-z0-9_]+$")


def festival_voices() -> list[str]:
    """The installed voices: the folders under :data:`VOICES_FOLDER`'s language folders."""
    if not VOICES_FOLDER.is_dir():
        return []
    return sorted(path.name for path in VOICES_FOLDER.glob("*/*") if path.is_dir())


class FestivalBank(CommandLineBank):
    program = "text2wave"
    install = INSTALL
    version_pattern = r"$^"
    name = "festival"
    settings = {"stretch": Setting("Duration_Stretch, above 1 slower (default 1)", positive_number)}

    def version(self) -> str:
        done = subprocess.run(["festival", "--version"], capture_output=True, text=True, check=False)
        found = re.search(r"System: (\S+?):", done.stdout + done.stderr)
        return f"festival {found.group(1) if found else debian_version('festival') or 'unknown'}"

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if not NAME.match(voice.voice) or voice.voice not in festival_voices():
            raise SuiteError(
                f"voice spec {voice.text!r}: Festival has no voice {voice.voice!r} under {VOICES_FOLDER}; it has "
                f"{festival_voices()}"
            )

    def recipe_parts(self, voice: VoiceSpec) -> dict:
        package = self.package(voice)
        return super().recipe_parts(voice) | {"voice_package": f"{package.package} {package.version}"}

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        evals = ["-eval", f"(voice_{voice.voice})"]
        if "stretch" in voice.setting:
            evals += ["-eval", f"(Parameter.set 'Duration_Stretch {float(voice.setting['stretch'])})"]
        with tempfile.TemporaryDirectory(prefix="festival-") as folder:
            source, wav = Path(folder) / "text.txt", Path(folder) / "clip.wav"
            source.write_text(text + "\n", encoding="utf-8")
            subprocess.run(
                [self.program, *evals, str(source), "-o", str(wav)],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            samples, rate = sf.read(wav, dtype="float64", always_2d=True)
        return samples.mean(axis=1), rate

    def package(self, voice: VoiceSpec) -> VoicePackage:
        package, licence = PACKAGES.get(voice.voice, (f"festvox ({voice.voice})", "see its Debian copyright file"))
        return VoicePackage(package, debian_version(package), licence)


BANK = FestivalBank()
