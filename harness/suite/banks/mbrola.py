"""``mbrola``: an MBROLA diphone voice (``us1``, ``en1``...) driven by espeak-ng (``espeak-ng -v mb-us1``).

MBROLA and its voices are not in Debian's main archive (bookworm has ``mbrola`` in ``contrib`` and its voices in
``non-free``: ``apt-get install mbrola mbrola-us1`` once both are enabled; tried here with us1 and us2); a voice is usable where its database is installed, at
``/usr/share/mbrola/<voice>/<voice>`` (or :data:`MBROLA_FOLDERS`). Settings as espeak-ng's: ``pitch``, ``rate``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from harness.suite.banks import Setting, VoiceBank, command_version, integer_between
from harness.suite.banks.espeak_ng import INSTALL as ESPEAK_INSTALL
from harness.suite.banks.espeak_ng import espeak_options, run_espeak
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

MBROLA_FOLDERS = (Path("/usr/share/mbrola"), Path("/usr/local/share/mbrola"))
INSTALL = "MBROLA is in Debian's contrib and non-free archives: enable both, then apt-get install -y mbrola mbrola-us1"


def voice_database(name: str) -> Path | None:
    for folder in MBROLA_FOLDERS:
        if (folder / name / name).is_file() or (folder / name).is_file():
            return folder / name
    return None


class MbrolaBank(VoiceBank):
    name = "mbrola"
    settings = {
        "pitch": Setting("-p, 0-99 (default 50)", integer_between(0, 99)),
        "rate": Setting("-s, words per minute (default 175)", integer_between(80, 450)),
    }

    def version(self) -> str:
        espeak = command_version(["espeak-ng", "--version"], ESPEAK_INSTALL)
        match = re.search(r"text-to-speech: (\S+)", espeak)
        mbrola = subprocess.run(["mbrola", "-h"], capture_output=True, text=True, check=False)
        found = re.search(r"[Vv]ersion:?\s*(\S+)", mbrola.stdout + mbrola.stderr)
        return f"mbrola {found.group(1) if found else 'unknown'} via espeak-ng {match.group(1) if match else espeak}"

    def unavailable(self) -> str | None:
        if shutil.which("espeak-ng") is None:
            return f"espeak-ng is not installed: {ESPEAK_INSTALL}"
        if shutil.which("mbrola") is None:
            return f"mbrola is not installed: {INSTALL}"
        return None

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if voice_database(voice.voice) is None:
            raise SuiteError(
                f"voice spec {voice.text!r}: MBROLA voice {voice.voice!r} is not installed under "
                f"{' or '.join(map(str, MBROLA_FOLDERS))} (apt-get install -y mbrola-{voice.voice}, from non-free)"
            )

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        return run_espeak(f"mb-{voice.voice}", espeak_options(voice), text)


BANK = MbrolaBank()
