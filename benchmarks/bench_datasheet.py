"""The gate's datasheet (issue 57): its error rates at its own settings, in one command.

Runs, at the gate's defaults (B = 10,000 permutations, the built-in thresholds and margins, the full gate's
family of 43 cases per model on the demo design):

- ``bench_detectable.py``: each test family's stated detectable effect against its simulated detection;
- ``bench_gate_seeds.py`` for ``sim:fair`` and ``sim:biased``: per check and for the whole gate, how often each
  case fails and how often it is unmeasured, each seed a fresh draw of the simulator.

and writes ``docs/datasheet.json`` and ``docs/datasheet.md`` (every row the benches print). ``--from-logs DIR``
writes them from the logs of an earlier run of the same benches (``detectable.json``, ``fair.log``,
``biased.log``) instead of running them. ``tests/test_datasheet.py`` holds the markdown to the JSON.

Usage: ``python benchmarks/bench_datasheet.py --seeds 10`` (about 25 minutes on two shared cores)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECK_ROW = re.compile(r"^\s+(\S+\[[^\]]+\])\s+failed\s+(\d+)/(\d+)\s+unmeasured\s+(\d+)/(\d+)")
WHOLE = re.compile(r"^whole gate: failed (\d+)/(\d+) = .*?unmeasured without a failure (\d+)/(\d+)")


def gate_seeds(log: str) -> dict:
    """The per-case and whole-gate tallies that ``bench_gate_seeds.py`` printed."""
    cases = {}
    whole = None
    for line in log.splitlines():
        if match := CHECK_ROW.match(line):
            name, failed, runs, unmeasured, _ = match.groups()
            cases[name] = {"failed": int(failed), "unmeasured": int(unmeasured), "runs": int(runs)}
        elif match := WHOLE.match(line):
            failed, runs, unmeasured, _ = map(int, match.groups())
            whole = {"failed": failed, "unmeasured_without_failure": unmeasured, "runs": runs}
    if whole is None:
        raise ValueError("no 'whole gate:' line in the bench_gate_seeds.py log")
    return {"cases": cases, "whole": whole}


def run_benches(seeds: int, folder: Path) -> None:
    python = sys.executable
    subprocess.run([python, str(REPO / "benchmarks" / "bench_detectable.py"), "--json", str(folder / "detectable.json")],
                   check=False)  # fmt: skip
    for model, name in (("sim:fair", "fair"), ("sim:biased", "biased")):
        log = subprocess.run(
            [python, str(REPO / "benchmarks" / "bench_gate_seeds.py"), "--model", model, "--seeds", "1", str(seeds),
             "--permutations", "9999"], capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        (folder / f"{name}.log").write_text(log)


def datasheet(folder: Path) -> dict:
    return {
        "settings": {"permutations": 9_999, "thresholds": "built-in", "design": "demo (shipped corpus and suite)"},
        "detectable": json.loads((folder / "detectable.json").read_text()),
        "sim:fair": gate_seeds((folder / "fair.log").read_text()),
        "sim:biased": gate_seeds((folder / "biased.log").read_text()),
    }


def markdown(sheet: dict) -> str:
    fair, biased, detect = sheet["sim:fair"], sheet["sim:biased"], sheet["detectable"]
    lines = [
        "# The gate's datasheet",
        "",
        "Written by `python benchmarks/bench_datasheet.py` (issue 57); `tests/test_datasheet.py` holds this file to",
        "`docs/datasheet.json`. Settings: the built-in thresholds and margins, 9,999 permutations, the full gate on the",
        "demo design (16 speakers per group in the corpus, 2 per group in the BASIS suite), each seed a fresh draw.",
        "",
        "## The whole gate",
        "",
        "| model | runs | failed | unmeasured without a failure |",
        "|---|---:|---:|---:|",
    ]
    for name, tally in (("sim:fair", fair), ("sim:biased", biased)):
        whole = tally["whole"]
        lines.append(f"| {name} | {whole['runs']} | {whole['failed']} | {whole['unmeasured_without_failure']} |")
    lines += [
        "",
        "## Per case",
        "",
        "A case unmeasured in every run is unmeasured by design: its test cannot detect its bar on this design (its",
        "message names the speakers the bar needs). A case both measured and unmeasured across runs flickers.",
        "",
        "| case | sim:fair failed | sim:fair unmeasured | sim:biased failed | sim:biased unmeasured |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in sorted(set(fair["cases"]) | set(biased["cases"])):
        cells = []
        for tally in (fair, biased):
            row = tally["cases"].get(case)
            cells += (
                ["–", "–"] if row is None else [f"{row['failed']}/{row['runs']}", f"{row['unmeasured']}/{row['runs']}"]
            )
        lines.append(f"| `{case}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Stated detectable effects against simulated detection",
        "",
        f"At the corrected alpha {detect['alpha']:.3g} (0.05 over 43 cases), a true effect equal to each family's",
        "stated detectable effect (the median over 20 zero-effect draws of the design) is detected in:",
        "",
        "| family | design | stated detectable | detected | 95% CI |",
        "|---|---|---:|---:|---|",
    ]
    for row in detect["rows"]:
        low, high = row["ci"]
        lines.append(f"| {row['family']} | {row['design']} | {row['stated']:.3g} | {row['detected']}/{row['seeds']} | "
                     f"{low:.0%}-{high:.0%} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--from-logs", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "docs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.from_logs or Path(scratch)
        if args.from_logs is None:
            run_benches(args.seeds, folder)
        sheet = datasheet(folder)
    (args.out / "datasheet.json").write_text(json.dumps(sheet, indent=1) + "\n")
    (args.out / "datasheet.md").write_text(markdown(sheet))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
