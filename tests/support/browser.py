"""Headless Chromium, where Debian's package is installed."""

import shutil
import subprocess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
