"""Speed of the random-intercept GLMM against lme4, and calibration of the expected-WER ratio intervals.

    python benchmarks/bench_glmm.py                  # timing on the LibriSpeech-sized reference data
    python benchmarks/bench_glmm.py --coverage 200   # coverage of 95% intervals on 200 simulated data sets
    python benchmarks/bench_glmm.py --bootstrap 200  # speaker-bootstrap SE vs delta-method SEs, reference data

Timing fits the Poisson (insertions, offset log N) and Binomial (deletions+substitutions) GLMMs with
nAGQ = 1 and 10 on ``tests/support/reference/lme4/librispeech_like.csv.gz`` (median of ``--reps`` runs) and
compares with lme4 ``glmer`` (default control) timed in the same run when ``Rscript`` with lme4 is on the
PATH, otherwise with the timings committed in ``tests/support/reference/lme4/reference.json`` (labelled as such;
they were measured on another load and possibly another machine).

Coverage simulates data sets of the same size with a shared speaker intercept (sigma 0.5) and true group
effects (0.1 on insertions, 0.2 on deletions+substitutions), so the true expected-WER ratio is known, and
reports for the "w/ speaker w/ semantics" row the fraction of 95% delta-method intervals covering it, for
the joint fit and for two separate fits (with the between-within small-sample correction that
``wer_ratio`` applies, and with a plain normal quantile), next to the Monte-Carlo SD of the log-ratio
estimates, the mean delta-method SEs, and the correlation of the speaker intercepts predicted by the two
separate fits. ``--bootstrap`` compares, on the reference data, the speaker-bootstrap SE of the log-ratio
with the joint and separate delta-method SEs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.metrics import wer_model  # noqa: E402
from harness.metrics import wer_ratio as wr  # noqa: E402
from harness.metrics.glmm import fit_random_intercept  # noqa: E402
from harness.metrics.simulation import simulate_wer_table  # noqa: E402

REFERENCE_DIR = ROOT / "tests" / "support" / "reference" / "lme4"
COLUMNS = ["(Intercept)", "genderM"] + [f"x{k}" for k in range(1, 9)]
MODELS = [("poisson", 1), ("poisson", 10), ("binomial", 1), ("binomial", 10)]


def reference_fit(table: pd.DataFrame, family: str, nagq: int):
    design = np.column_stack(
        [np.ones(len(table)), (table["gender"] == "M").to_numpy(float)]
        + [table[f"x{k}"].to_numpy(float) for k in range(1, 9)]
    )
    if family == "poisson":
        return fit_random_intercept(
            table["insertions"],
            design,
            table["speaker"],
            "poisson",
            offset=np.log(table["n_ref_words"]),
            nagq=nagq,
            column_names=COLUMNS,
        )
    return fit_random_intercept(
        table["deletions"] + table["substitutions"],
        design,
        table["speaker"],
        "binomial",
        trials=table["n_ref_words"],
        nagq=nagq,
        column_names=COLUMNS,
    )


def median_seconds(function, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def lme4_seconds(reps: int) -> tuple[dict[str, float], str]:
    committed = json.loads((REFERENCE_DIR / "reference.json").read_text())
    if shutil.which("Rscript"):
        run = subprocess.run(
            ["Rscript", str(REFERENCE_DIR / "fit.R"), "--timing", "--reps", str(reps)],
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode == 0:
            return json.loads(run.stdout.strip().splitlines()[-1])["lme4_seconds"], "lme4 timed in this run"
        print(f"Rscript failed ({run.stderr.strip()[-200:]}); using committed timings", file=sys.stderr)
    seconds = {key: fit["lme4_seconds_default_control"] for key, fit in committed["fits"].items()}
    source = f"committed lme4 timings ({committed['lme4_version']}, {committed['timing']}, cpu {committed['cpu']})"
    return seconds, source


def run_timing(reps: int) -> None:
    table = pd.read_csv(REFERENCE_DIR / "librispeech_like.csv.gz")
    committed = json.loads((REFERENCE_DIR / "reference.json").read_text())["fits"]
    ours = {}
    for family, nagq in MODELS:
        fit = reference_fit(table, family, nagq)
        ref = committed[f"{family}_nagq{nagq}"]
        diff = max(
            np.max(np.abs(fit.coef[COLUMNS] - pd.Series(ref["coef"])[COLUMNS])),
            np.max(np.abs(fit.se[COLUMNS] - pd.Series(ref["se"])[COLUMNS])),
            abs(fit.sigma - ref["sigma"]),
        )
        ours[f"{family}_nagq{nagq}"] = (
            median_seconds(lambda family=family, nagq=nagq: reference_fit(table, family, nagq), reps),
            diff,
        )
    wer_table = table.rename(columns={"gender": "group"})
    joint = median_seconds(
        lambda: wer_model._WERModel.fit_mixed(wer_table, "M", tuple(COLUMNS[2:]), 10, "joint", False), reps
    )
    lme4, source = lme4_seconds(reps)
    print(
        f"{len(table)} utterances, {table['speaker'].nunique()} speakers, {len(COLUMNS)} fixed effects; "
        f"median of {reps} runs"
    )
    print(f"{'model':<18}{'ours (s)':>10}{'lme4 (s)':>10}{'speed-up':>10}{'max |diff| vs lme4':>21}")
    for key, (seconds, diff) in ours.items():
        print(f"{key:<18}{seconds:>10.3f}{lme4[key]:>10.3f}{lme4[key] / seconds:>9.1f}x{diff:>21.2e}")
    print(f"{'joint_nagq10':<18}{joint:>10.3f}{'-':>10}{'-':>10}{'(no lme4 equivalent)':>21}")
    print(f"lme4 column: {source}")


def coverage_replicate(seed: int) -> dict[str, float]:
    sim = simulate_wer_table(
        seed,
        n_speakers=40,
        utterances_per_speaker=65,
        sigma=0.5,
        group_effect_insertions=0.1,
        group_effect_delsub=0.2,
        n_noise_covariates=3,
    )
    data, numerator, _, _ = wr._prepare_wer_table(sim.table, list(sim.covariates), "F", "M")
    out = {"true_log_ratio": float(np.log(sim.true_ratio))}
    for kind in ("joint", "separate"):
        model = wer_model._WERModel.fit_mixed(data, numerator, sim.covariates, 10, kind, False)
        row = model.row(data, numerator, 0.05, small_sample=True)
        log_ratio, se = float(np.log(row["ratio"])), float(row["se_log_ratio"])
        out[f"{kind}_log_ratio"] = log_ratio
        out[f"{kind}_se"] = se
        out[f"{kind}_covered"] = float(row["ci_low"] <= sim.true_ratio <= row["ci_high"])
        out[f"{kind}_covered_plain_z"] = float(abs(log_ratio - out["true_log_ratio"]) <= 1.959963984540054 * se)
        out[f"{kind}_converged"] = float(model.converged)
        if kind == "separate":
            ins_fit, del_fit = model.fit
            out["separate_intercept_correlation"] = float(
                np.corrcoef(ins_fit.random_effects, del_fit.random_effects.loc[ins_fit.random_effects.index])[0, 1]
            )
    return out


def run_coverage(n_sets: int, jobs: int, seed: int) -> None:
    start = time.perf_counter()
    seeds = [seed + k for k in range(n_sets)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            rows = list(pool.map(coverage_replicate, seeds, chunksize=4))
    else:
        rows = [coverage_replicate(s) for s in seeds]
    results = pd.DataFrame(rows)
    elapsed = time.perf_counter() - start
    print(
        f"{n_sets} simulated data sets (40 speakers x 65 utterances, sigma 0.5, true log-ratio "
        f"{results['true_log_ratio'].mean():.3f} on average), {elapsed:.0f} s"
    )
    for kind in ("joint", "separate"):
        ok = results[f"{kind}_converged"] == 1
        errors = results.loc[ok, f"{kind}_log_ratio"] - results.loc[ok, "true_log_ratio"]
        print(
            f"{kind:>9}: coverage {results.loc[ok, f'{kind}_covered'].mean():.3f} (between-within t), "
            f"{results.loc[ok, f'{kind}_covered_plain_z'].mean():.3f} (plain z)  "
            f"MC SD(log-ratio) {errors.std(ddof=1):.4f}  mean delta SE {results.loc[ok, f'{kind}_se'].mean():.4f}  "
            f"bias {errors.mean():+.4f}  converged {int(ok.sum())}/{n_sets}"
        )
    print(
        f"correlation of speaker intercepts from the two separate fits: "
        f"{results['separate_intercept_correlation'].mean():.2f} (mean over data sets)"
    )


def run_bootstrap(n_boot: int, seed: int) -> None:
    """SE of the log expected-WER ratio (M / F, w/ speaker w/ semantics) on the reference data: speaker
    bootstrap (joint refits) against the joint and the separate-fits delta methods."""
    table = pd.read_csv(REFERENCE_DIR / "librispeech_like.csv.gz").rename(columns={"gender": "group"})
    data, numerator, _, _ = wr._prepare_wer_table(table, COLUMNS[2:], "M", "F")
    covariates = tuple(COLUMNS[2:])
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    joint = wer_model._WERModel.fit_mixed(data, numerator, covariates, 10, "joint", False)
    separate = wer_model._WERModel.fit_mixed(data, numerator, covariates, 10, "separate", False)
    by_speaker = dict(tuple(data.groupby("speaker", sort=False)))
    strata = wer_model._speaker_strata(data)
    draws = []
    for _ in range(n_boot):
        parts = [
            by_speaker[spk].assign(speaker=f"{spk}#{k}")
            for speakers in strata
            for k, spk in enumerate(rng.choice(speakers, size=speakers.size, replace=True))
        ]
        sample = pd.concat(parts, ignore_index=True)
        refit = wer_model._WERModel.fit_mixed(sample, numerator, covariates, 10, "joint", False, start=joint.fit)
        if refit.converged:
            draws.append(refit.log_ratio(refit.params, wer_model._PooledDesign.build(sample, numerator, refit.columns)))
    pooled = wer_model._PooledDesign.build(data, numerator, joint.columns)
    ins_fit, del_fit = separate.fit
    correlation = np.corrcoef(ins_fit.random_effects, del_fit.random_effects.loc[ins_fit.random_effects.index])[0, 1]
    estimate = joint.log_ratio(joint.params, pooled)
    print(
        f"reference data, log expected-WER ratio M/F (w/ speaker w/ semantics) {estimate:.4f}; "
        f"{time.perf_counter() - start:.0f} s"
    )
    print(f"  speaker bootstrap SE ({len(draws)}/{n_boot} converged joint refits): {np.std(draws, ddof=1):.4f}")
    print(f"  joint-fit delta-method SE:                 {joint.delta_se(pooled):.4f}")
    print(f"  separate-fits delta-method SE:             {separate.delta_se(pooled):.4f}")
    print(f"  correlation of the separate fits' predicted speaker intercepts: {correlation:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5, help="timing repetitions (median reported)")
    parser.add_argument(
        "--coverage",
        type=int,
        nargs="?",
        const=200,
        default=None,
        help="run the coverage study on N simulated data sets (default 200)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        nargs="?",
        const=200,
        default=None,
        help="speaker-bootstrap SE on the reference data with N refits (default 200)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=20260817)
    args = parser.parse_args()
    if args.coverage:
        run_coverage(args.coverage, args.jobs, args.seed)
    elif args.bootstrap:
        run_bootstrap(args.bootstrap, args.seed)
    else:
        run_timing(args.reps)


if __name__ == "__main__":
    main()
