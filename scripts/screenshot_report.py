#!/usr/bin/env python3
"""The screenshot of the report's first screen that the README shows (``docs/report-first-screen.png``).

Runs the default gate (the embedded default model on its shipped outputs, as the README's first command does)
into a temporary folder, then photographs the first 1280 x 900 px of its report in headless Chromium (Debian's
``chromium`` package).

How to run
----------
    apt-get install -y chromium
    .venv/bin/python scripts/screenshot_report.py                      # rewrite docs/report-first-screen.png
    .venv/bin/python scripts/screenshot_report.py --out /tmp/first.png
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1280, 900


def main() -> int:
    parser = argparse.ArgumentParser(description="Photograph the first screen of the default gate's report.")
    parser.add_argument("--out", default=str(REPO / "docs" / "report-first-screen.png"), help="the PNG to write")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print(
            "screenshot_report: headless Chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="report-screenshot-") as scratch:
        folder = Path(scratch)
        gate = subprocess.run(
            [sys.executable, "-m", "pytest", "fairness_tests", "-q", "-p", "no:cacheprovider",
             "--cache-dir", str(folder / "cache"), "--report", str(folder / "report.html"),
             "--results-json", str(folder / "results.json")],
            cwd=REPO, capture_output=True, text=True,
        )  # fmt: skip
        if not (folder / "report.html").is_file():
            print(
                f"screenshot_report: the gate wrote no report (exit {gate.returncode}):\n{gate.stdout[-3000:]}",
                file=sys.stderr,
            )
            return 2
        shot = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={folder / 'profile'}", "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}",
             f"--screenshot={Path(args.out).resolve()}", (folder / "report.html").as_uri()],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if shot.returncode != 0 or not Path(args.out).is_file():
            print(
                f"screenshot_report: Chromium failed (exit {shot.returncode}):\n{shot.stderr[-3000:]}", file=sys.stderr
            )
            return 2
    print(f"screenshot_report: {args.out} ({WIDTH} x {HEIGHT} px)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
