"""The real gate as a decision rule over decoding seeds (issue 16): how often it fails a simulator.

Each seed s builds the whole gate in-process (:class:`harness.gate.Gate`, every check, the repository's
thresholds.yaml) for one simulator with the model-config block ``decoding: {seed: s}`` and
``--fairness-seed s``, so each run is a fresh draw of the model, and records every case's outcome: pass,
fail (bias) or unmeasured. For ``sim:fair`` (no voice-induced bias) every failing run is a false fail; for
``sim:biased`` (``--strength-scale`` scales every strength of the preset) a failing run is a detection.
Prints, per check and for the whole gate, the share of runs failing with a 95% Clopper-Pearson interval.
This is the end-to-end counterpart of ``bench_operating_characteristic.py`` (statistics only, both designs,
100 seeds): about 20 seconds per seed on one core, as every output is generated anew (the counterfactual arms are
made once, for the first seed, and read from the run's cache folder after). The judge-score check is judged by
``--judge`` (default ``sim:fair``, as in the README's example).

Usage: ``python benchmarks/bench_gate_seeds.py --model sim:fair --seeds 1 20`` (``--checks icat personalization
classification robustness`` runs the BASIS cases alone)

``--design cremad`` (issue 57) runs the gate on the CREMA-D-sized replica corpus of ``bench_cached_rescore.py``
(91 espeak-ng speakers, 6,552 clips; built into ``--corpus-dir`` if missing) with ``--basis-suite`` (e.g. one
from ``scripts/build_basis_demo.py --voices-per-group 16``); ``--cache-dir`` keeps the output cache and the
counterfactual arms across invocations (the first seed synthesises every arm: about 49 minutes on a busy two-core
machine, later seeds about 4). Every case's passed runs and the whole gate's passed share (every case measured and
within its bar) are printed beside the failed and unmeasured ones; ``--why`` prints each unmeasured case's message.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

from scipy.stats import beta

from harness.checks import all_checks
from harness.gate import Gate, GateConfig, Unmeasured
from harness.models.sim import PRESETS

REPO = Path(__file__).resolve().parents[1]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def run_seed(
    model: str,
    seed: int,
    scale: float,
    cache_dir: str,
    permutations: int,
    checks: tuple[str, ...] = (),
    judge: str | None = "sim:fair",
    corpora: dict[str, str | None] | None = None,
    basis_suite: str | None = None,
    why: dict[str, str] | None = None,
) -> dict[str, str]:
    """Each case's outcome (pass, fail or unmeasured) in one seed's gate; ``why``, when given, gets each unmeasured
    case's message."""
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
            judge=judge,
            corpora=corpora or {"demo": None},
            basis_suite=basis_suite,
        )
    )
    outcomes = {}
    for check in (c for c in all_checks() if not checks or c.name in checks):
        for case in gate.cases(check.name):
            verdict = gate.outcome(case)
            name = f"{check.name}[{case.id.removeprefix(model + '-')}]"
            outcomes[name] = "unmeasured" if isinstance(verdict, Unmeasured) else "pass" if verdict.passed else "fail"
            if why is not None and isinstance(verdict, Unmeasured):
                why[name] = verdict.message
    return outcomes


def design_inputs(args: argparse.Namespace) -> tuple[dict[str, str | None], str | None, str]:
    """The corpora, BASIS suite and a one-line description of ``--design``: ``demo`` (the shipped corpus and
    suite) or ``cremad`` (the CREMA-D-sized espeak-ng replica of ``bench_cached_rescore.py``, 91 speakers, 6552
    clips, built into ``--corpus-dir`` if missing, with ``--basis-suite``)."""
    if args.design == "demo":
        return (
            {"demo": None},
            args.basis_suite,
            "demo corpus" + (f", suite {args.basis_suite}" if args.basis_suite else ""),
        )
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_cached_rescore import build_corpus

    manifest = build_corpus(args.corpus_dir)
    return (
        {"cremad": str(manifest)},
        args.basis_suite,
        f"CREMA-D-sized corpus {manifest}, suite {args.basis_suite or 'demo'}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sim:fair")
    parser.add_argument("--seeds", type=int, nargs=2, default=(1, 20), metavar=("FIRST", "LAST"))
    parser.add_argument("--strength-scale", type=float, default=1.0)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument(
        "--judge", default="sim:fair", help="the judge of the judge-score check (README: --judge sim:fair)"
    )
    parser.add_argument(
        "--checks",
        nargs="+",
        default=(),
        help="only these checks (e.g. icat personalization classification robustness)",
    )
    parser.add_argument("--design", choices=("demo", "cremad"), default="demo")
    parser.add_argument("--corpus-dir", type=Path, default=Path("/tmp/cremad"), help="--design cremad's corpus")
    parser.add_argument("--basis-suite", default=None, help="the BASIS suite folder (default: the demo suite)")
    parser.add_argument(
        "--cache-dir", default=None, help="keep the output cache (and the arms) here across invocations"
    )
    parser.add_argument("--why", action="store_true", help="print each unmeasured case's message, every seed")
    args = parser.parse_args()
    corpora, basis_suite, design = design_inputs(args)
    seeds = range(args.seeds[0], args.seeds[1] + 1)
    failures: collections.Counter[str] = collections.Counter()
    unmeasured: collections.Counter[str] = collections.Counter()
    passes: collections.Counter[str] = collections.Counter()
    gate_failures = gate_unmeasured = gate_passes = 0
    why: dict[str, str] | None = {} if args.why else None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        cache_dir = args.cache_dir or scratch
        for seed in seeds:
            seed_start = time.perf_counter()
            outcomes = run_seed(
                args.model, seed, args.strength_scale, cache_dir, args.permutations, tuple(args.checks), args.judge,
                corpora, basis_suite, why,
            )  # fmt: skip
            failed = sorted(case for case, outcome in outcomes.items() if outcome == "fail")
            missing = sorted(case for case, outcome in outcomes.items() if outcome == "unmeasured")
            failures.update(failed)
            unmeasured.update(missing)
            passes.update(case for case, outcome in outcomes.items() if outcome == "pass")
            gate_failures += bool(failed)
            gate_unmeasured += bool(missing) and not failed
            gate_passes += not failed and not missing
            print(
                f"seed {seed}: {len(outcomes)} cases, failed {failed or '-'}, unmeasured {missing or '-'} "
                f"({time.perf_counter() - seed_start:.0f} s)",
                flush=True,
            )
            for case in missing if why is not None else ():
                print(f"    {case}: {why[case]}", flush=True)
    n = len(seeds)
    print(
        f"\n{args.model} (strength x{args.strength_scale:g}), {n} seeds, {time.perf_counter() - start:.0f} s; "
        f"design: {design}; {args.permutations} permutations"
    )
    for case in sorted(set(failures) | set(unmeasured) | set(passes)):
        print(
            f"  {case:55s} failed {failures[case]:3d}/{n}   unmeasured {unmeasured[case]:3d}/{n}   "
            f"passed {passes[case]:3d}/{n}"
        )
    low, high = clopper_pearson(gate_failures, n)
    pass_low, pass_high = clopper_pearson(gate_passes, n)
    print(
        f"whole gate: failed {gate_failures}/{n} = {100 * gate_failures / n:.0f}% (95% CI {100 * low:.0f}% to {100 * high:.0f}%); "
        f"unmeasured without a failure {gate_unmeasured}/{n}; passed {gate_passes}/{n} = {100 * gate_passes / n:.0f}% "
        f"(95% CI {100 * pass_low:.0f}% to {100 * pass_high:.0f}%)"
    )


if __name__ == "__main__":
    main()
