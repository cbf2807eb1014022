"""The suite builder's tests wait for a voice-bank install that ``.ci/run`` started in the background
(``scripts/install_voice_banks.sh --start``), so that no clip is read while apt is unpacking its voices."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BACKGROUND = REPO / ".voice-banks"


@pytest.fixture(scope="session", autouse=True)
def voice_banks_installed() -> None:
    """Waits for the background install where one was started and has not ended; its failure is not an error here
    (the bank tests skip, saying which package is absent)."""
    if Path(f"{BACKGROUND}.pid").is_file() and not Path(f"{BACKGROUND}.status").is_file():
        subprocess.run(["bash", str(REPO / "scripts" / "install_voice_banks.sh"), "--wait"], check=False, timeout=1800)
