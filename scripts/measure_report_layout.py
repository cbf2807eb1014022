#!/usr/bin/env python3
"""Count the report's layout faults in headless Chromium: the figures behind issue 38's before and after.

Runs the default gate of ``--repo`` (default: this checkout) into a temporary folder, makes the three-model
report of long specs from its results.json (``tests/support/browser.py``: ``three_model_results``), renders both
with that checkout's harness, and measures each at 1280 and 1920 px with every ``<details>`` open
(``measure_layout``): SVG labels meeting a plotted mark, labels meeting another label, the pixels the page is
wider than the window, and the tables reaching past it; then, as a reader first sees it (folded parts closed),
the heights of the page and of its table of all cases. The measurement is always this checkout's.

How to run
----------
    apt-get install -y chromium
    .venv/bin/python scripts/measure_report_layout.py                   # this checkout
    git archive b9b8d03 | tar -x -C /tmp/before && .venv/bin/python scripts/measure_report_layout.py --repo /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.browser import CHROMIUM, measure_layout, three_model_results  # noqa: E402

WIDTHS = (1280, 1920)


def main() -> int:
    parser = argparse.ArgumentParser(description="Count the report's layout faults in headless Chromium.")
    parser.add_argument("--repo", default=str(REPO), help="the checkout whose gate runs and whose harness renders")
    args = parser.parse_args()
    if CHROMIUM is None:
        print(
            "measure_report_layout: headless Chromium is not installed (Debian: apt-get install chromium)",
            file=sys.stderr,
        )
        return 2
    repo = Path(args.repo).resolve()
    environment = {**os.environ, "PYTHONPATH": str(repo)}
    with tempfile.TemporaryDirectory(prefix="report-layout-") as scratch:
        folder = Path(scratch)
        subprocess.run(
            [sys.executable, "-m", "pytest", "fairness_tests", "-q", "-p", "no:cacheprovider",
             "--cache-dir", str(folder / "cache"), "--results-json", str(folder / "results.json"),
             "--report", str(folder / "gate-report.html")],
            cwd=repo, env=environment, capture_output=True, text=True,
        )  # fmt: skip
        if not (folder / "results.json").is_file():
            print(f"measure_report_layout: the gate in {repo} wrote no results.json", file=sys.stderr)
            return 2
        one = json.loads((folder / "results.json").read_text())
        print(
            "report        width  label-mark  label-label  overflow(px)  tables-past-window  page(px)  all-cases(px)"
            f"   ({repo})"
        )
        for name, results in (("default", one), ("three-model", three_model_results(one))):
            report_folder = folder / name
            report_folder.mkdir()
            (report_folder / "results.json").write_text(json.dumps(results))
            subprocess.run(
                [sys.executable, "-m", "harness.report.cli", str(report_folder / "results.json"),
                 "-o", str(report_folder / "report.html")],
                cwd=repo, env=environment, capture_output=True, text=True, check=True,
            )  # fmt: skip
            for width in WIDTHS:
                layout = measure_layout(report_folder / "report.html", width, report_folder)
                marks = sum(overlap["kind"] == "mark" for overlap in layout["overlaps"])
                labels = len(layout["overlaps"]) - marks
                folded = measure_layout(report_folder / "report.html", width, report_folder, open_details=False)
                print(
                    f"{name:<13} {width:>5}  {marks:>10}  {labels:>11}  {layout['overflow']:>12}  "
                    f"{len(layout['tables']):>18}  {folded['height']:>8}  {folded['all_cases_height']:>13}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
