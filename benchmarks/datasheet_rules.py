"""The datasheet's sections on the counterfactual sham rule and the deciding-row ratio releases (issues 57 item 5,
58 item 1), from the logs of ``bench_sham_rule.py`` and ``bench_wer_release.py --gate-rule``
(:mod:`bench_datasheet` runs them and reads these logs, or reads them with ``--from-logs``):

- ``sham_rule.log``: ``bench_sham_rule.py --parts absolute``: per design (asr, vibe) and model, the failed,
  unmeasured, passed and significant shares, the stated detectable effect, and the pathological inputs' verdicts;
- ``sham_release.log``: ``bench_sham_rule.py --parts release``: per pair of checkpoints and controls, the judged-
  worse, underpowered and not-estimable shares;
- ``ratio_release_demo.log``, ``ratio_release_cremad.log``: ``bench_wer_release.py --gate-rule``: per measure
  (wer, score) and pair, the judged-worse, underpowered and not-estimable shares and the share with p <= 0.05.

A log that is absent leaves its section out (a datasheet of the earlier benches alone).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SHAM_TITLE = re.compile(r"^(asr|vibe): (.+?); bar ([0-9.]+); .*?corrected alpha ([0-9.e-]+).*?; (\d+) seeds$")
SHAM_ROW = re.compile(r"^(.+?)\s+(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]\s+(\d\.\d{3})\s+(\d\.\d{3})\s+(\d\.\d{3})$")
STATED = re.compile(r"^\s+stated detectable effect \(median over the fair seeds\): (\S+)")
PATHOLOGICAL = re.compile(r"^\s+(asr|vibe), (.+): (PASS|FAIL|unmeasured)$")
RELEASE_TITLE = re.compile(r"^release \((.+?)\): (\d+) simulated pairs; margin ([0-9.]+); one-sided alpha ([0-9.e-]+)")
RELEASE_ROW = re.compile(
    r"^(.+?)\s{2,}(identity \(before\)|identity and sham)\s+(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]"
    r"\s+(\d\.\d{3})\s+(\d\.\d{3})$"
)
RATIO_TITLE = re.compile(
    r"^(wer|score) ratio, deciding row, (\w+) design \((.+?)\): (\d+) simulated pairs; one-sided alpha ([0-9.e-]+)"
    r".*?; margin ([0-9.]+)$"
)
RATIO_ROW = SHAM_ROW
LOGS = ("sham_rule.log", "sham_release.log", "ratio_release_demo.log", "ratio_release_cremad.log")


def sham_rule(log: str) -> dict:
    """``bench_sham_rule.py --parts absolute``'s rows."""
    kinds: dict[str, dict] = {}
    current = None
    pathological = []
    for line in log.splitlines():
        if match := SHAM_TITLE.match(line):
            kind, design, bar, alpha, seeds = match.groups()
            current = kinds.setdefault(kind, {"design": design, "bar": float(bar), "alpha": float(alpha),
                                              "seeds": int(seeds), "stated_detectable": None, "rows": []})  # fmt: skip
        elif current is not None and (match := STATED.match(line)):
            current["stated_detectable"] = None if match.group(1) == "none" else float(match.group(1))
        elif match := PATHOLOGICAL.match(line):
            pathological.append({"kind": match.group(1), "input": match.group(2), "verdict": match.group(3)})
        elif current is not None and (match := SHAM_ROW.match(line.rstrip())):
            name, failed, low, high, unmeasured, passed, significant = match.groups()
            current["rows"].append({"model": name.strip(), "failed": float(failed), "ci": [float(low), float(high)],
                                    "unmeasured": float(unmeasured), "passed": float(passed),
                                    "significant": float(significant)})  # fmt: skip
    if not kinds:
        raise ValueError("no rows in the bench_sham_rule.py --parts absolute log")
    return {"kinds": kinds, "pathological": pathological}


def sham_release(log: str) -> dict:
    """``bench_sham_rule.py --parts release``'s rows."""
    title = None
    rows = []
    for line in log.splitlines():
        if match := RELEASE_TITLE.match(line):
            title = match
        elif match := RELEASE_ROW.match(line.rstrip()):
            pair, controls, share, low, high, underpowered, not_estimable = match.groups()
            rows.append({"pair": pair.strip(), "controls": controls, "judged_worse": float(share),
                         "ci": [float(low), float(high)], "underpowered": float(underpowered),
                         "not_estimable": float(not_estimable)})  # fmt: skip
    if title is None or not rows:
        raise ValueError("no rows in the bench_sham_rule.py --parts release log")
    design, pairs, margin, alpha = title.groups()
    return {"design": design, "pairs": int(pairs), "margin": float(margin), "alpha": float(alpha), "rows": rows}


def ratio_release(log: str) -> dict:
    """``bench_wer_release.py --gate-rule``'s rows, per measure."""
    measures: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        if match := RATIO_TITLE.match(line):
            measure, design, size, pairs, alpha, margin = match.groups()
            current = measures.setdefault(measure, {"design": design, "size": size, "pairs": int(pairs),
                                                    "alpha": float(alpha), "margin": float(margin), "rows": []})  # fmt: skip
        elif current is not None and (match := RATIO_ROW.match(line.rstrip())):
            pair, share, low, high, underpowered, not_estimable, p05 = match.groups()
            current["rows"].append({"pair": pair.strip(), "judged_worse": float(share), "ci": [float(low), float(high)],
                                    "underpowered": float(underpowered), "not_estimable": float(not_estimable),
                                    "p_at_most_05": float(p05)})  # fmt: skip
    if not measures:
        raise ValueError("no rows in the bench_wer_release.py --gate-rule log")
    return measures


def sections(folder: Path) -> dict:
    """The datasheet's entries of the logs in ``folder`` that exist (module docstring)."""
    found = {}
    for name, parse in (("sham_rule", sham_rule), ("sham_release", sham_release)):
        if (folder / f"{name}.log").exists():
            found[name] = parse((folder / f"{name}.log").read_text())
    ratio = {
        design: ratio_release((folder / f"ratio_release_{design}.log").read_text())
        for design in ("demo", "cremad")
        if (folder / f"ratio_release_{design}.log").exists()
    }
    if ratio:
        found["ratio_release"] = ratio
    return found


def run(folder: Path, seeds: int = 200, pairs: int = 100, ratio_pairs: int = 200, cremad_pairs: int = 60) -> None:
    """Run the benches whose logs :func:`sections` reads (at CREMA-D's size, the WER ratio's slow joint fit on a tenth
    of ``cremad_pairs``)."""
    bench = Path(__file__).resolve().parent
    python = sys.executable
    commands = {
        "sham_rule.log": [bench / "bench_sham_rule.py", "--parts", "absolute", "--seeds", str(seeds)],
        "sham_release.log": [bench / "bench_sham_rule.py", "--parts", "release", "--pairs", str(pairs)],
        "ratio_release_demo.log": [bench / "bench_wer_release.py", "--gate-rule", str(ratio_pairs)],
        "ratio_release_cremad.log": [bench / "bench_wer_release.py", "--gate-rule", str(cremad_pairs), "--design",
                                     "cremad", "--measures", "score", "wer", "--wer-pairs", str(max(1, cremad_pairs // 10))],
    }  # fmt: skip
    for log, command in commands.items():
        output = subprocess.run([python, *map(str, command)], capture_output=True, text=True, check=True).stdout
        (folder / log).write_text(output)


def markdown_lines(sheet: dict) -> list[str]:
    """The sections' markdown (every row the benches print)."""
    lines: list[str] = []
    if "sham_rule" in sheet:
        lines += _sham_rule_lines(sheet["sham_rule"])
    if "sham_release" in sheet:
        lines += _sham_release_lines(sheet["sham_release"])
    if "ratio_release" in sheet:
        lines += _ratio_lines(sheet["ratio_release"])
    return lines


def _sham_rule_lines(block: dict) -> list[str]:
    lines = [
        "",
        "## The counterfactual sham rule (intersection-union), absolute decision",
        "",
        "`python benchmarks/bench_sham_rule.py --parts absolute`: per-speaker answers on the original, identity, sham",
        "and swap arms through the check's own measure and the one decide step, at the built-in bar, 10,000 sign",
        "flips (exact where 2^S <= B) and Bonferroni over 43 cases. The case is decided against both controls (the",
        "smaller effect, the larger p). `fair` and `artefact only` (degrades under any large transform; the sham",
        "controls it) must fail in at most 5% of seeds; `significant`: some contrast reaches the corrected alpha,",
        "whatever its size (what the stated detectable effect claims).",
        "",
        "| design | model | failed | 95% CI | unmeasured | passed | significant |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for kind, entry in block["kinds"].items():
        for row in entry["rows"]:
            low, high = row["ci"]
            lines.append(f"| {kind} | {row['model']} | {row['failed']:.1%} | {low:.1%}-{high:.1%} | "
                         f"{row['unmeasured']:.1%} | {row['passed']:.1%} | {row['significant']:.1%} |")  # fmt: skip
    lines += [
        "",
        "| design | speakers | bar | corrected alpha | seeds | stated detectable effect |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for kind, entry in block["kinds"].items():
        stated = "unreachable" if entry["stated_detectable"] is None else f"{entry['stated_detectable']:.2f}"
        lines.append(f"| {kind} | {entry['design']} | {entry['bar']:g} | {entry['alpha']:.3g} | {entry['seeds']} | "
                     f"{stated} |")  # fmt: skip
    lines += ["", "Pathological inputs through the same steps (never PASS where the input cannot support one):", "",
              "| design | input | verdict |", "|---|---|---|"]  # fmt: skip
    lines += [f"| {row['kind']} | {row['input']} | {row['verdict']} |" for row in block["pathological"]]
    return lines


def _sham_release_lines(block: dict) -> list[str]:
    lines = [
        "",
        "## The counterfactual release against both controls",
        "",
        f"`python benchmarks/bench_sham_rule.py --parts release`: {block['pairs']} simulated pairs ({block['design']}),",
        f"margin {block['margin']:g}, one-sided alpha {block['alpha']:.3g} (0.05 over a release run's 2 x 43 tests), a",
        "comparison that cannot detect twice its margin underpowered. `steady` greedy, `noisy` sampling, `+effect` the",
        "bar's systematic effect on both checkpoints; `grown` on the candidate only; `artefact` the candidate degrades",
        "under any large transform. Judged against identity alone (before) and against both controls (now).",
        "",
        "| candidate vs baseline | controls | judged worse | 95% CI | underpowered | not estimable |",
        "|---|---|---:|---|---:|---:|",
    ]
    for row in block["rows"]:
        low, high = row["ci"]
        lines.append(f"| {row['pair']} | {row['controls']} | {row['judged_worse']:.1%} | {low:.1%}-{high:.1%} | "
                     f"{row['underpowered']:.1%} | {row['not_estimable']:.1%} |")  # fmt: skip
    return lines


def _ratio_lines(designs: dict) -> list[str]:
    lines = [
        "",
        "## Deciding-row ratio releases at the gate's rule",
        "",
        "`python benchmarks/bench_wer_release.py --gate-rule N [--design cremad]`: the joint fit of both checkpoints",
        "(checkpoint x group interaction, speaker intercept, each checkpoint's own covariates; content confounded with",
        "group, the candidate's errors growing on hard content), the one-sided test at alpha 0.05 over a release run's",
        "2 x 43 tests, the margin 0.05 (log ratio) and the detectable-worsening rule (underpowered: cannot detect twice",
        "the margin). `p<=0.05`: the share with one-sided p <= 0.05 alone (no margin, one test).",
        "",
        "| measure | design | pairs | candidate vs baseline | judged worse | 95% CI | underpowered | not estimable | p <= 0.05 |",
        "|---|---|---:|---|---:|---|---:|---:|---:|",
    ]
    for design, measures in designs.items():
        for measure, entry in measures.items():
            for row in entry["rows"]:
                low, high = row["ci"]
                lines.append(f"| {measure} | {design} ({entry['size']}) | {entry['pairs']} | {row['pair']} | "
                             f"{row['judged_worse']:.1%} | {low:.1%}-{high:.1%} | {row['underpowered']:.1%} | "
                             f"{row['not_estimable']:.1%} | {row['p_at_most_05']:.1%} |")  # fmt: skip
    return lines
