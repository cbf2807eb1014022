"""The gate's datasheet (issue 57): its error rates at its own settings, in one command.

Runs, at the gate's defaults (B = 10,000 permutations, the built-in thresholds and margins, the full gate's
family of 43 cases per model on the demo design):

- ``bench_detectable.py``: each test family's stated detectable effect against its simulated detection;
- ``bench_gate_seeds.py`` for ``sim:fair`` and ``sim:biased``: per check and for the whole gate, how often each
  case fails and how often it is unmeasured, each seed a fresh draw of the simulator;
- ``bench_release_path.py``: the release path, ``--baseline`` against the previous seed's fair run (fair/fair,
  biased/fair, half-strength/fair), whole gate, 9,999 permutations (``--release-pairs`` pairs);
- ``bench_age_counterfactual.py`` (issue 61): the age counterfactual's operating characteristic (its own design,
  ``AGE_SEEDS`` seeds; ``age_counterfactual.json``, optional in ``--from-logs``);
- ``bench_release_noise.py --gate-rule``: release comparisons at the gate's own alpha (0.05 over a release run's
  2 x 43 tests) and margins, between checkpoints that differ in answer noise both ways (greedy against sampling),
  with no effect and with equal non-zero effects, and a grown effect (``--noise-pairs`` simulated pairs;
  counterfactual and nTVD);
- ``bench_blind_share.py`` (issue 58): a biased model diluted by a blind share ``s`` against the audio floor's blind
  bar alone and with the full-hearing rule (``blind_share.log``; its section is written when the log is there).

- ``bench_sham_rule.py`` and ``bench_wer_release.py --gate-rule`` (:mod:`datasheet_rules`): the counterfactual sham
  rule's absolute and release error rates, and the deciding-row WER and score releases on the demo design and a
  CREMA-D-sized one (``--rule-seeds``, ``--rule-pairs``, ``--ratio-pairs``, ``--cremad-pairs``);

and writes ``docs/datasheet.json`` and ``docs/datasheet.md`` (every row the benches print). ``--from-logs DIR``
writes them from the logs of an earlier run of the same benches (``detectable.json``, ``fair.log``,
``biased.log``, ``release.json``, ``release_noise.log``, and where present ``blind_share.log``, ``sham_rule.log``,
``sham_release.log``, ``ratio_release_demo.log``, ``ratio_release_cremad.log``, and ``cremad_fair.log`` with
``cremad_biased.log`` (the CREMA-D-sized design's section)) instead of running them. ``--cremad-seeds N`` also runs
``bench_gate_seeds.py --design cremad`` for both simulators over N seeds at 10,000 permutations.
``tests/test_datasheet.py`` holds the markdown to the JSON.

Usage: ``python benchmarks/bench_datasheet.py --seeds 10 --release-pairs 10 --noise-pairs 100``
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasheet_rules  # the benches folder is not a package: found on the path set above

REPO = Path(__file__).resolve().parents[1]
CHECK_ROW = re.compile(r"^\s+(\S+\[[^\]]+\])\s+failed\s+(\d+)/(\d+)\s+unmeasured\s+(\d+)/(\d+)")
NOISE_TITLE = re.compile(r"^(counterfactual|ntvd)\b")
NOISE_ROW = re.compile(r"^(\S+(?: vs \S+)?)\s{2,}(.+?)\s+(\d\.\d{3})\s+\[(\d\.\d{3}), (\d\.\d{3})\]$")
NOISE_ALPHA = re.compile(r"one-sided alpha ([0-9.e-]+)")
NOISE_MARGIN = re.compile(r"^margin ([0-9.]+)")
NOISE_PAIRS = re.compile(r"(\d+) simulated pairs")
BLIND_ROW = re.compile(
    r"^row (\w+) ntvd=([0-9.]+) (?:speakers=(\d+) )?(\w+) s=([0-9.]+) share=([0-9.]+) old=(\d+)/(\d+)/(\d+) new=(\d+)/(\d+)/(\d+) "
    r"seeds=(\d+)$"
)
DESIGN = re.compile(r"design: (.+?); (\d+) permutations$")
SEED_ROW = re.compile(r"^seed \d+: \d+ cases, failed (-|\[.*?\]), unmeasured (-|\[.*?\])(?: \(\d+ s\))?$")
WHOLE = re.compile(r"^whole gate: failed (\d+)/(\d+) = .*?unmeasured without a failure (\d+)/(\d+)")


def gate_seeds(log: str) -> dict:
    """The per-case and whole-gate tallies that ``bench_gate_seeds.py`` printed. Each run of a case is failed,
    unmeasured or passed, and a run of the gate failed (some case failed), unmeasured without a failure or passed
    (every case passed), so ``passed`` is the runs less the other two (older logs print no passed column)."""
    cases = {}
    whole = None
    for line in log.splitlines():
        if match := CHECK_ROW.match(line):
            name, failed, runs, unmeasured, _ = match.groups()
            cases[name] = {"failed": int(failed), "unmeasured": int(unmeasured), "runs": int(runs),
                           "passed": int(runs) - int(failed) - int(unmeasured)}  # fmt: skip
        elif match := WHOLE.match(line):
            failed, runs, unmeasured, _ = map(int, match.groups())
            whole = {"failed": failed, "unmeasured_without_failure": unmeasured, "runs": runs,
                     "passed": runs - failed - unmeasured}  # fmt: skip
    if whole is None:
        raise ValueError("no 'whole gate:' line in the bench_gate_seeds.py log")
    return {"cases": cases, "whole": whole}


def by_design(log: str) -> dict:
    """From each ``seed N:`` line of a ``bench_gate_seeds.py`` log: the cases unmeasured in every seed (unmeasured
    by design), those unmeasured in some seeds only (flickering), and the seeds that passed every other case (no
    case failed, none unmeasured outside the by-design set)."""
    seeds = []
    for line in log.splitlines():
        if match := SEED_ROW.match(line):
            failed, missing = (set() if text == "-" else set(ast.literal_eval(text)) for text in match.groups())
            seeds.append((failed, missing))
    if not seeds:
        raise ValueError("no 'seed N:' lines in the bench_gate_seeds.py log")
    always = set.intersection(*(missing for _, missing in seeds))
    sometimes = set.union(*(missing for _, missing in seeds)) - always
    passed = sum(not failed and missing <= always for failed, missing in seeds)
    return {"unmeasured_by_design": sorted(always), "flickering": sorted(sometimes), "runs": len(seeds),
            "passed_every_other_case": passed}  # fmt: skip


def release_noise(log: str) -> dict:
    """The rows ``bench_release_noise.py --gate-rule`` printed: per check its margin, pairs and each comparison's
    judged-worse share with its 95% interval."""
    alpha = NOISE_ALPHA.search(log)
    checks: dict[str, dict] = {}
    current = None
    margin = None
    for line in log.splitlines():
        if match := NOISE_MARGIN.match(line):
            margin = float(match.group(1))
        elif (match := NOISE_TITLE.match(line)) and "simulated pairs" in line:
            pairs = int(NOISE_PAIRS.search(line).group(1))
            current = checks.setdefault(match.group(1), {"margin": margin, "pairs": pairs, "rows": []})
        elif current is not None and (match := NOISE_ROW.match(line.rstrip())):
            pair, statistic, share, low, high = match.groups()
            current["rows"].append({"pair": pair.strip(), "statistic": statistic.strip(), "judged_worse": float(share),
                                    "ci": [float(low), float(high)]})  # fmt: skip
    if alpha is None or not checks:
        raise ValueError("no rows in the bench_release_noise.py log")
    return {"alpha": float(alpha.group(1)), "checks": checks}


BLIND_SHARE_RUNS = (
    (),
    ("--full-ntvd", "80", "--shares", "0.7", "0.8", "0.85", "0.89", "--mechanisms", "fixed", "--no-fair"),
    ("--per-group", "45", "--shares", "0.0", "0.5", "0.7", "0.8", "0.89", "--mechanisms", "fixed", "--seeds", "100"),
)
"""``bench_blind_share.py``'s runs, their rows concatenated in ``blind_share.log``: the demo design, a stronger
effect near the bar, a CREMA-D-sized design."""


def blind_share(log: str) -> dict:
    """The rows ``bench_blind_share.py`` printed: per model, mechanism and blind share ``s``, the probe's mean
    share and the failed / unmeasured / passed tallies under the blind bar alone (``old``) and with the full-hearing
    rule (``new``)."""
    rows = []
    for line in log.splitlines():
        if match := BLIND_ROW.match(line.strip()):
            model, ntvd, speakers, mechanism, blind, share, *counts, seeds = match.groups()
            tallies = [int(count) for count in counts]
            rows.append({"model": model, "full_ntvd": float(ntvd), "speakers_per_group": int(speakers or 16),
                         "mechanism": mechanism, "blind_share": float(blind),
                         "probe_share": float(share), "seeds": int(seeds),
                         "old": dict(zip(("failed", "unmeasured", "passed"), tallies[:3])),
                         "new": dict(zip(("failed", "unmeasured", "passed"), tallies[3:]))})  # fmt: skip
    if not rows:
        raise ValueError("no 'row' lines in the bench_blind_share.py log")
    return {"rows": rows}


def blind_share_lines(sheet: dict) -> list[str]:
    """The datasheet's section on the blind bar (issue 58), when the sheet has ``blind_share`` rows."""
    if "blind_share" not in sheet:
        return []
    rows = sheet["blind_share"]["rows"]
    lines = [
        "",
        "## The audio floor's blind bar",
        "",
        "`bench_blind_share.py` (issue 58): a model whose answers ignore the audio in a share s of requests, on the",
        "nTVD design of the datasheet (12 answers per speaker, bar 20, alpha 0.05/43, 9,999 permutations; 16 speakers",
        "per group as the demo, 45 as CREMA-D) and the floor's task probe (5 x 24 recordings, audio_blind_share 0.9).",
        "`fixed`: a request it does not hear stays unheard whatever its audio; `flaky`: each request's audio dropped at",
        "random. Tallies failed / unmeasured / passed: under the blind bar alone, and with the full-hearing rule (a pass",
        "stands only when nTVD / share and D / share are within the bar). A model with an effect caught at full hearing",
        "must never pass.",
        "",
        "| model | full-hearing nTVD | speakers per group | blind | s | probe share | seeds | blind bar alone | "
        "full-hearing rule |",
        "|---|---:|---:|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        old, new = (
            "/".join(str(row[rule][word]) for word in ("failed", "unmeasured", "passed")) for rule in ("old", "new")
        )
        lines.append(f"| {row['model']} | {row['full_ntvd']:g} | {row['speakers_per_group']} | {row['mechanism']} | "
                     f"{row['blind_share']:.2f} | {row['probe_share']:.3f} | {row['seeds']} | {old} | {new} |")  # fmt: skip
    return lines


CREMAD_LOGS = {"sim:fair": "cremad_fair.log", "sim:biased": "cremad_biased.log"}


def run_cremad(seeds: int, folder: Path, corpus_dir: Path, basis_suite: Path | None, cache_dir: Path) -> None:
    """``bench_gate_seeds.py --design cremad`` for ``sim:fair`` and ``sim:biased`` at the gate's defaults
    (10,000 permutations, the built-in thresholds), one cache (and arm store) for both, into ``cremad_*.log``."""
    for model, log in CREMAD_LOGS.items():
        out = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "bench_gate_seeds.py"), "--design", "cremad", "--model", model,
             "--seeds", "1", str(seeds), "--permutations", "10000", "--corpus-dir", str(corpus_dir),
             "--cache-dir", str(cache_dir), *(["--basis-suite", str(basis_suite)] if basis_suite else [])],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        (folder / log).write_text(out)


def cremad_design(folder: Path) -> dict | None:
    """The CREMA-D-sized design's tallies from ``cremad_fair.log`` and ``cremad_biased.log`` (None without them):
    the design and permutations each log names, and per model :func:`gate_seeds`."""
    if not all((folder / log).is_file() for log in CREMAD_LOGS.values()):
        return None
    logs = {model: (folder / log).read_text() for model, log in CREMAD_LOGS.items()}
    settings = {
        DESIGN.search(line).groups() for log in logs.values() for line in log.splitlines() if DESIGN.search(line)
    }
    if len(settings) != 1:
        raise ValueError(f"the cremad logs name {len(settings)} designs (expected one): {sorted(settings)}")
    ((design, permutations),) = settings
    return {
        "design": design,
        "permutations": int(permutations),
        **{model: {**gate_seeds(log), "by_design": by_design(log)} for model, log in logs.items()},
    }


def run_benches(seeds: int, folder: Path, release_pairs: int = 10, noise_pairs: int = 100) -> None:
    python = sys.executable
    subprocess.run([python, str(REPO / "benchmarks" / "bench_release_path.py"), "--pairs", str(release_pairs),
                    "--permutations", "9999", "--json", str(folder / "release.json")], check=True)  # fmt: skip
    noise = subprocess.run(
        [python, str(REPO / "benchmarks" / "bench_release_noise.py"), "--gate-rule", "--pairs", str(noise_pairs),
         "--checks", "counterfactual", "ntvd", "--no-raw-ntvd"], capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (folder / "release_noise.log").write_text(noise)
    subprocess.run([python, str(REPO / "benchmarks" / "bench_detectable.py"), "--json", str(folder / "detectable.json")],
                   check=False)  # fmt: skip
    blind = "".join(
        subprocess.run(
            [python, str(REPO / "benchmarks" / "bench_blind_share.py"), "--seeds", "200", *extra],
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
        for extra in BLIND_SHARE_RUNS
    )
    (folder / "blind_share.log").write_text(blind)
    run_age_bench(folder)
    for model, name in (("sim:fair", "fair"), ("sim:biased", "biased")):
        log = subprocess.run(
            [python, str(REPO / "benchmarks" / "bench_gate_seeds.py"), "--model", model, "--seeds", "1", str(seeds),
             "--permutations", "9999"], capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        (folder / f"{name}.log").write_text(log)


AGE_JSON = "age_counterfactual.json"
AGE_SEEDS = 100


def run_age_bench(folder: Path) -> None:
    """``bench_age_counterfactual.py`` (issue 61): the age counterfactual's operating characteristic, its rows in
    ``folder/age_counterfactual.json``."""
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_age_counterfactual.py"), "--seeds",
                    str(AGE_SEEDS), "--json", str(folder / AGE_JSON)], check=True)  # fmt: skip


def age_section(folder: Path) -> dict:
    """The age bench's rows where its log is in ``folder`` (logs of a run before issue 61 have none)."""
    path = folder / AGE_JSON
    return {"age_counterfactual": json.loads(path.read_text())} if path.is_file() else {}


def age_lines(sheet: dict) -> list[str]:
    """The age counterfactual's operating characteristic (``bench_age_counterfactual.py``), where the sheet has it."""
    age = sheet.get("age_counterfactual")
    if age is None:
        return []
    design = age["design"]
    speakers = ", ".join(f"{group} {count}" for group, count in design["speakers"].items())
    lines = [
        "",
        "## The age counterfactual",
        "",
        "`bench_age_counterfactual.py` (issue 61): the WORLD age arms with their control and sham on a synthetic",
        f"espeak-ng age corpus ({design['recordings']} recordings; speakers {speakers}; {design['admitted']} admitted",
        "by the manipulation checks; no perceived-group filter: no offline perceiver hears age). Five VIBE cases per",
        f"run, {design['permutations']:,} permutations, rule `{design.get('rule', 'both')}`, alpha {design['alpha']:g}",
        f"Bonferroni over the five, max_ntvd {design['max_ntvd']:g}; `sim:age-effect` is `sim:biased`'s strengths x",
        f"{design['age_effect_scale']:g}.",
        "",
        "| model | runs | failed | 95% CI |",
        "|---|---:|---:|---|",
    ]
    for row in age["rows"]:
        low, high = row["ci"]
        lines.append(f"| {row['model']} | {row['runs']} | {row['failed']} | {low:.0%}-{high:.0%} |")
    return lines


def datasheet(folder: Path) -> dict:
    blind = folder / "blind_share.log"
    cremad = cremad_design(folder)
    return ({"blind_share": blind_share(blind.read_text())} if blind.is_file() else {}) | {
        **({"cremad": cremad} if cremad else {}),
        "settings": {"permutations": 9_999, "thresholds": "built-in", "design": "demo (shipped corpus and suite)"},
        "detectable": json.loads((folder / "detectable.json").read_text()),
        "sim:fair": gate_seeds((folder / "fair.log").read_text()),
        "sim:biased": gate_seeds((folder / "biased.log").read_text()),
        "release": json.loads((folder / "release.json").read_text()),
        "release_noise": release_noise((folder / "release_noise.log").read_text()),
        **datasheet_rules.sections(folder),
        **age_section(folder),
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
    return (
        "\n".join(
            lines + release_lines(sheet) + blind_share_lines(sheet) + datasheet_rules.markdown_lines(sheet)
            + age_lines(sheet) + cremad_lines(sheet)
        )
        + "\n"
    )  # fmt: skip


def share_with_ci(count: int, runs: int) -> str:
    """``count/runs = share% (95% Clopper-Pearson low-high%)``."""
    low = beta.ppf(0.025, count, runs - count + 1) if count else 0.0
    high = beta.ppf(0.975, count + 1, runs - count) if count < runs else 1.0
    return f"{count}/{runs} = {count / runs:.0%} ({low:.0%}-{high:.0%})"


def cremad_lines(sheet: dict) -> list[str]:
    """The CREMA-D-sized design's section (issue 57: there ``sim:fair`` should pass >= 95% of seeds and
    ``sim:biased`` fail >= 95%); none when the sheet has no such design."""
    cremad = sheet.get("cremad")
    if cremad is None:
        return []
    fair, biased = cremad["sim:fair"], cremad["sim:biased"]
    lines = [
        "",
        "## The CREMA-D-sized design",
        "",
        f"`bench_gate_seeds.py --design cremad`: {cremad['design']}; {cremad['permutations']:,} permutations, the",
        "built-in thresholds, each seed a fresh draw of the simulator. Targets (issue 57): `sim:fair` passes (every",
        "case measured and within its bar) in at least 95% of seeds, `sim:biased` fails in at least 95%. Shares with",
        "their 95% Clopper-Pearson intervals.",
        "",
        "| model | runs | failed | unmeasured without a failure | passed |",
        "|---|---:|---|---|---|",
    ]
    for name, tally in (("sim:fair", fair), ("sim:biased", biased)):
        whole, runs = tally["whole"], tally["whole"]["runs"]
        lines.append(f"| {name} | {runs} | {share_with_ci(whole['failed'], runs)} | "
                     f"{share_with_ci(whole['unmeasured_without_failure'], runs)} | {share_with_ci(whole['passed'], runs)} |")  # fmt: skip
    for name, tally in (("sim:fair", fair), ("sim:biased", biased)):
        design, runs = tally["by_design"], tally["by_design"]["runs"]
        flickering = ", ".join(f"`{case}`" for case in design["flickering"])
        lines += [
            "",
            f"{name}: {len(design['unmeasured_by_design'])} cases unmeasured in every seed (by design), "
            f"{len(design['flickering'])} unmeasured in some seeds only{f' ({flickering})' if flickering else ''}; "
            f"every other case passed in {share_with_ci(design['passed_every_other_case'], runs)} of seeds.",
        ]
    lines += [
        "",
        "| case | sim:fair failed | sim:fair unmeasured | sim:fair passed | sim:biased failed | sim:biased unmeasured | sim:biased passed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for case in sorted(set(fair["cases"]) | set(biased["cases"])):
        cells = []
        for tally in (fair, biased):
            row = tally["cases"].get(case)
            cells += (
                ["–"] * 3
                if row is None
                else [f"{row[key]}/{row['runs']}" for key in ("failed", "unmeasured", "passed")]
            )
        lines.append(f"| `{case}` | " + " | ".join(cells) + " |")
    return lines


SCENARIO_WORDS = {
    "fair/fair": "sim:fair against the previous seed's sim:fair (a false fail)",
    "biased/fair": "sim:biased against it (caught)",
    "half/fair": "sim:biased at half strength against it (caught)",
}


def release_lines(sheet: dict) -> list[str]:
    release, noise = sheet["release"], sheet["release_noise"]
    lines = [
        "",
        "## The release path",
        "",
        f"`--baseline` against the previous seed's `sim:fair` run, the whole gate, {release['permutations']:,}",
        f"permutations, {release['pairs']} pairs per scenario (`bench_release_path.py`). A run is unmeasured when no",
        "case fails and some case is unmeasured, by design or because its comparison could not have found a",
        "regression.",
        "",
        "| scenario | runs | failed | unmeasured without a failure |",
        "|---|---:|---:|---:|",
    ]
    for name, row in release["scenarios"].items():
        lines.append(f"| {SCENARIO_WORDS.get(name, name)} | {row['runs']} | {row['failed']} | {row['unmeasured']} |")
    lines += [
        "",
        "## Release comparisons under answer noise, at the gate's rule",
        "",
        f"One-sided alpha {noise['alpha']:.3g} (0.05 over a release run's 2 x 43 tests) and each check's margin",
        "(`bench_release_noise.py --gate-rule`). `steady` answers greedily, `noisy` samples; `grown` adds a",
        "systematic stereotype effect to the noisy checkpoint, `steady-grown` the same effect to the steady one. A",
        "pair of checkpoints with the same systematic effect should be judged worse in at most 5% of pairs. The gate",
        "decides by the excess rows; the raw rows are the measures compared before issue 45, and the U-statistic",
        "rows (`harness/metrics/unbiased_effect.py`, unbiased at any effect size) a candidate not yet used.",
        "",
        "| check | margin | candidate vs baseline | statistic | judged worse | 95% CI |",
        "|---|---:|---|---|---:|---|",
    ]
    for check, block in noise["checks"].items():
        for row in block["rows"]:
            low, high = row["ci"]
            lines.append(f"| {check} | {block['margin']:g} | {row['pair']} | {row['statistic']} | "
                         f"{row['judged_worse']:.1%} | {low:.1%}-{high:.1%} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--release-pairs", type=int, default=10)
    parser.add_argument("--noise-pairs", type=int, default=100)
    parser.add_argument("--rule-seeds", type=int, default=200, help="bench_sham_rule.py seeds")
    parser.add_argument("--rule-pairs", type=int, default=100, help="bench_sham_rule.py release pairs")
    parser.add_argument("--ratio-pairs", type=int, default=200, help="bench_wer_release.py --gate-rule pairs (demo)")
    parser.add_argument("--cremad-pairs", type=int, default=60, help="the same at CREMA-D's size (WER: a tenth)")
    parser.add_argument("--from-logs", type=Path, default=None)
    parser.add_argument("--logs", type=Path, default=None, help="keep the benches' logs here (for --from-logs)")
    parser.add_argument("--out", type=Path, default=REPO / "docs")
    parser.add_argument(
        "--cremad-seeds", type=int, default=0, help="also the CREMA-D-sized design, over this many seeds"
    )
    parser.add_argument("--cremad-corpus", type=Path, default=Path("/tmp/cremad"), help="its corpus (built if missing)")
    parser.add_argument(
        "--cremad-suite",
        type=Path,
        default=None,
        help="its BASIS suite (scripts/build_basis_demo.py --voices-per-group 16)",
    )
    parser.add_argument(
        "--cremad-cache", type=Path, default=Path("/tmp/cremad-cache"), help="its output cache and arms, kept"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.from_logs or args.logs or Path(scratch)
        if args.from_logs is None:
            folder.mkdir(parents=True, exist_ok=True)
            run_benches(args.seeds, folder, args.release_pairs, args.noise_pairs)
            datasheet_rules.run(folder, args.rule_seeds, args.rule_pairs, args.ratio_pairs, args.cremad_pairs)
            if args.cremad_seeds:
                run_cremad(args.cremad_seeds, folder, args.cremad_corpus, args.cremad_suite, args.cremad_cache)
        sheet = datasheet(folder)
    (args.out / "datasheet.json").write_text(json.dumps(sheet, indent=1) + "\n")
    (args.out / "datasheet.md").write_text(markdown(sheet))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
