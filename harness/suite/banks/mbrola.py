"""``mbrola``: an MBROLA diphone voice (``us1``, ``en1``...) driven by espeak-ng (``espeak-ng -v mb-us1``), or one
of espeak-ng's foreign-accented English voices on an MBROLA database (``de1-en``: ``espeak-ng -v mb-de1-en``, English
read with German phonology on the German database de1).

MBROLA and its voices are not in Debian's main archive (bookworm has ``mbrola`` in ``contrib`` and its voices in
``non-free``: ``scripts/install_voice_banks.sh`` enables both and installs them); a voice is usable where its database
is installed, at ``/usr/share/mbrola/<database>/<database>`` (or :data:`MBROLA_FOLDERS`), and, for ``<database>-en``,
where espeak-ng has the voice ``mb-<database>-en`` (``espeak-ng --voices=mb`` lists them: af1, de1-de6, fr1, fr4, gr2,
hu1, nl2, pl1, ro1, sw1, sw2). Settings as espeak-ng's: ``pitch``, ``rate``.

Licence: each database's own (Debian ``mbrola-<database>``, non-free): use with the MBROLA program only, for
non-commercial, non-military purposes; it may not be sold or be part of a product that is sold.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from harness.suite.banks import Setting, VoiceBank, VoicePackage, command_version, debian_version, integer_between
from harness.suite.banks.espeak_ng import INSTALL as ESPEAK_INSTALL
from harness.suite.banks.espeak_ng import espeak_options, run_espeak
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

MBROLA_FOLDERS = (Path("/usr/share/mbrola"), Path("/usr/local/share/mbrola"))
INSTALL = (
    "MBROLA is in Debian's contrib and non-free archives: scripts/install_voice_banks.sh (apt-get install -y mbrola "
    "mbrola-us1 ...)"
)
ACCENTED = "-en"
"""The suffix of espeak-ng's foreign-accented English MBROLA voices (``mb-de1-en``)."""
LICENCE = "MBROLA database licence: with the MBROLA program only, non-commercial, non-military (Debian non-free)"


def database_of(voice: str) -> str:
    """The MBROLA database a voice reads with: ``de1`` for ``de1-en``, the voice itself otherwise."""
    return voice.removesuffix(ACCENTED)


@functools.cache
def espeak_mbrola_voices() -> frozenset[str]:
    """The ``mb-*`` voice names espeak-ng knows (``espeak-ng --voices=mb``: ``mb-de1-en``, ``mb-us1``...)."""
    listing = subprocess.run(["espeak-ng", "--voices=mb"], capture_output=True, text=True, check=False).stdout
    files = [line.split()[4] for line in listing.splitlines()[1:] if len(line.split()) >= 5]
    return frozenset(file.rpartition("/")[2] for file in files if file.startswith("mb/"))


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
        version = found.group(1) if found else debian_version("mbrola") or "unknown"
        return f"mbrola {version} via espeak-ng {match.group(1) if match else espeak}"

    def unavailable(self) -> str | None:
        if shutil.which("espeak-ng") is None:
            return f"espeak-ng is not installed: {ESPEAK_INSTALL}"
        if shutil.which("mbrola") is None:
            return f"mbrola is not installed: {INSTALL}"
        return None

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        database = database_of(voice.voice)
        if voice_database(database) is None:
            raise SuiteError(
                f"voice spec {voice.text!r}: MBROLA voice {database!r} is not installed under "
                f"{' or '.join(map(str, MBROLA_FOLDERS))} (apt-get install -y mbrola-{database}, from non-free)"
            )
        if voice.voice.endswith(ACCENTED) and f"mb-{voice.voice}" not in espeak_mbrola_voices():
            accented = sorted(name.removeprefix("mb-") for name in espeak_mbrola_voices() if name.endswith(ACCENTED))
            raise SuiteError(
                f"voice spec {voice.text!r}: espeak-ng has no foreign-accented English voice mb-{voice.voice}; it has "
                f"{accented}"
            )

    def package(self, voice: VoiceSpec) -> VoicePackage:
        package = f"mbrola-{database_of(voice.voice)}"
        return VoicePackage(package, debian_version(package), LICENCE)

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        return run_espeak(f"mb-{voice.voice}", espeak_options(voice), text)


BANK = MbrolaBank()
