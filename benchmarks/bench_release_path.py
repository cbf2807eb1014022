"""The release path as a decision rule (issue 23): how often ``--baseline`` fails a candidate checkpoint.

For each seed s the whole gate is built in-process (:class:`harness.gate.Gate`, every check, the
repository's thresholds.yaml) three times, each a fresh draw of the model (model-config ``decoding:
{seed: s}``, ``--fairness-seed s``), against the baseline of the fair run of seed s - 1 (its records, with
the per-speaker data a ``--baseline`` results.json carries; no embedder: its value merging is reported beside
nTVD and decides nothing):

- ``fair/fair``: ``sim:fair`` seed s against ``sim:fair`` seed s - 1. Neither is biased, so a failing run
  is a false fail of the release path; the gate's rule bounds it by ``gate.alpha`` (0.05);
- ``biased/fair``: ``sim:biased`` (preset strengths) against the fair baseline: a failing run is a detection;
- ``half/fair``: ``sim:biased`` at ``--strength-scale`` (default 0.5) of every preset strength.

A run is unmeasured when no case fails and some case is unmeasured (by design, or a release comparison that could
not have found a regression: issue 57). A run fails when some case fails under the release ratchet (:func:`harness.gate.release_outcome`): a
significant regression, or a new failure (a case failing its absolute threshold where the baseline's did not,
or was unmeasured); a case failing in both runs without a regression is a known failure and passes.
Prints each scenario's failing share with a 95% Clopper-Pearson interval, and the cases behind the fails.
The absolute counterpart is ``bench_gate_seeds.py``; ``tests/gate/test_release_path.py`` runs the first two
scenarios on 12 pairs.

Usage: ``python benchmarks/bench_release_path.py --pairs 100``
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from scipy.stats import beta

from harness.checks import all_checks
from harness.gate import Gate, GateConfig, Unmeasured
from harness.gate.baseline import Baseline, baseline_key
from harness.models.sim import PRESETS
from harness.records import CaseRecord

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ("fair/fair", "biased/fair", "half/fair")


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def gate_run(
    model: str,
    seed: int,
    cache_dir: str,
    permutations: int,
    scale: float = 1.0,
    baseline: Mapping[tuple, CaseRecord] | None = None,
) -> tuple[dict[str, str], dict[tuple, CaseRecord]]:
    """One in-process gate run: each case's outcome (pass, fail, unmeasured) and its records (a later baseline)."""
    options: dict = {"decoding": {"seed": seed}}
    preset = model.split(":", 1)[1]
    if scale != 1.0:
        options["strengths"] = {task: value * scale for task, value in PRESETS[preset]["strengths"].items()}
    gate = Gate(
        GateConfig(
            models=(model,),
            model_options={model: options},
            seed=seed,
            permutations=permutations,
            cache_dir=cache_dir,
            progress=False,
            thresholds_path=str(REPO / "thresholds.yaml"),
            embedder="none",
        )
    )
    if baseline is not None:
        gate.baseline = Baseline(f"seed {seed - 1}", "sim:fair", baseline)
    outcomes, records = {}, {}
    for check in all_checks():
        for case in gate.cases(check.name):
            name = f"{check.name}[{case.id.removeprefix(model + '-')}]"
            verdict = gate.outcome(case)
            if isinstance(verdict, Unmeasured):
                outcomes[name] = "unmeasured"
                continue
            outcomes[name] = "pass" if verdict.passed else "fail"
            records[baseline_key(verdict.record)] = verdict.record
    return outcomes, records


def failing_share(
    model: str, seeds: range, baseline_seed: int, cache_dir: str, permutations: int = 999, scale: float = 1.0
) -> int:
    """How many runs of ``model`` (one per seed) fail against the one fair baseline of ``baseline_seed``."""
    _, baseline = gate_run("sim:fair", baseline_seed, cache_dir, permutations)
    return sum(
        any(
            outcome == "fail" for outcome in gate_run(model, seed, cache_dir, permutations, scale, baseline)[0].values()
        )
        for seed in seeds
    )


def release_path(
    pairs: int, first_seed: int, half_scale: float, permutations: int, scenarios=SCENARIOS, report=print
) -> dict[str, dict]:
    """Run ``pairs`` seeds of each scenario; per scenario the failing runs and the failing cases' counts."""
    tallies = {
        name: {"runs": 0, "failed": 0, "unmeasured": 0, "cases": collections.Counter(), "unmeasured_cases": collections.Counter()}
        for name in scenarios
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as cache_dir:
        _, baseline = gate_run("sim:fair", first_seed, cache_dir, permutations)
        for seed in range(first_seed + 1, first_seed + 1 + pairs):
            candidates = {
                "fair/fair": ("sim:fair", 1.0),
                "biased/fair": ("sim:biased", 1.0),
                "half/fair": ("sim:biased", half_scale),
            }
            next_baseline = None
            for name in scenarios:
                model, scale = candidates[name]
                outcomes, records = gate_run(model, seed, cache_dir, permutations, scale, baseline)
                failed = sorted(case for case, outcome in outcomes.items() if outcome == "fail")
                unmeasured = sorted(case for case, outcome in outcomes.items() if outcome == "unmeasured")
                tally = tallies[name]
                tally["runs"] += 1
                tally["failed"] += bool(failed)
                tally["unmeasured"] += bool(unmeasured) and not failed
                tally["cases"].update(failed)
                tally["unmeasured_cases"].update(unmeasured)
                report(f"seed {seed} {name}: failed {failed or '-'}")
                if name == "fair/fair":
                    next_baseline = records
            if next_baseline is None:
                _, next_baseline = gate_run("sim:fair", seed, cache_dir, permutations)
            baseline = next_baseline
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--strength-scale", type=float, default=0.5, help="strength of the half-strength scenario")
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="run only these (default: all three)")
    parser.add_argument("--json", help="also write the tallies here (bench_datasheet.py reads them)")
    args = parser.parse_args()
    start = time.perf_counter()
    tallies = release_path(
        args.pairs,
        args.first_seed,
        args.strength_scale,
        args.permutations,
        tuple(args.scenario or SCENARIOS),
        report=lambda line: print(line, flush=True),
    )
    print(f"\n{args.pairs} pairs per scenario, {time.perf_counter() - start:.0f} s")
    for name, tally in tallies.items():
        n, k = tally["runs"], tally["failed"]
        low, high = clopper_pearson(k, n)
        label = name if name != "half/fair" else f"half/fair (x{args.strength_scale:g})"
        print(
            f"{label:22s} failed {k:3d}/{n} = {100 * k / n:5.1f}% (95% CI {100 * low:.1f}% to {100 * high:.1f}%), "
            f"unmeasured without a failure {tally['unmeasured']}/{n}"
        )
        for case, count in tally["cases"].most_common(8):
            print(f"    {case:55s} {count:3d}/{n}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"pairs": args.pairs, "permutations": args.permutations, "strength_scale": args.strength_scale,
             "seconds": round(time.perf_counter() - start),
             "scenarios": {name: {**{key: tally[key] for key in ("runs", "failed", "unmeasured")},
                                  "cases": dict(tally["cases"]), "unmeasured_cases": dict(tally["unmeasured_cases"])}
                           for name, tally in tallies.items()}}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
