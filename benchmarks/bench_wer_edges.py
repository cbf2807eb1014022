"""Coverage of the expected-WER ratio intervals at 6, 10 and 40 speakers, old method next to new, one run.

    python benchmarks/bench_wer_edges.py --replicates 200

Each replicate simulates a data set with ``harness.metrics.simulation.simulate_wer_table`` (half the speakers
per group, 20 utterances each, no confounding and no group effect, so every row's estimand is the true ratio
1) and calls ``wer_ratio`` once. Two speaker-intercept SDs: ``sigma = 0.5`` (speakers differ) and
``sigma = 0`` (they do not: the fit is often singular). Reported per speaker count, as the fraction of 95%
intervals that cover the true ratio:

* vanilla, old: the percentile speaker-cluster bootstrap (the row's ``boot_ci_*``, 1,000 draws);
* vanilla, new: the linearised t interval with Welch df (the row's ``ci_*``);
* speaker GLMM (``regression w/ speaker w/o semantics``), old: the between-within interval ``df = m - q``
  with the ``sqrt(m / df)`` factor even for a singular fit (the same fit's row recomputed with its
  ``singular`` flag cleared);
* speaker GLMM, new: the row as given (``df = n - p`` and no factor when the speaker SD is estimated at 0).

Also printed: the share of singular fits and the replicates a row could not give (none expected). Runs
in one process (``OMP_NUM_THREADS=1`` is set for it); about 1 s per replicate at 40 speakers.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.metrics.simulation import simulate_wer_table
from harness.metrics.wer_ratio import METHOD_SPEAKER, METHOD_VANILLA, wer_ratio

SPEAKERS = (6, 10, 40)
SIGMAS = (0.5, 0.0)


def covers(low: float, high: float, truth: float) -> float:
    return float(low <= truth <= high) if np.isfinite(low) and np.isfinite(high) else np.nan


def replicate(seed: int, n_speakers: int, sigma: float) -> dict[str, float]:
    sim = simulate_wer_table(seed, n_speakers=n_speakers, utterances_per_speaker=20, sigma=sigma, confounding=0.0,
                             n_noise_covariates=0)  # fmt: skip
    truth = sim.true_ratio
    table = wer_ratio(sim.table, numerator="F", denominator="M", n_boot=1000, seed=seed)
    vanilla, mixed = table.row(METHOD_VANILLA), table.row(METHOD_SPEAKER)
    fit = table.fits.get(METHOD_SPEAKER)
    old_mixed = (
        dataclasses.replace(fit, singular=False).row(sim.table.reset_index(drop=True), "F", 0.05) if fit else None
    )
    return {
        "vanilla_old": covers(vanilla["boot_ci_low"], vanilla["boot_ci_high"], truth),
        "vanilla_new": covers(vanilla["ci_low"], vanilla["ci_high"], truth),
        "mixed_old": covers(old_mixed["ci_low"], old_mixed["ci_high"], truth) if old_mixed else np.nan,
        "mixed_new": covers(mixed["ci_low"], mixed["ci_high"], truth) if mixed["converged"] else np.nan,
        "singular": float(bool(fit is not None and fit.singular)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=200, help="simulated data sets per cell (default 200)")
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    start = time.perf_counter()
    lines = []
    for sigma in SIGMAS:
        for n_speakers in SPEAKERS:
            rows = pd.DataFrame([replicate(args.seed + k, n_speakers, sigma) for k in range(args.replicates)])
            lines.append({
                "sigma": sigma, "speakers": n_speakers,
                "vanilla old (bootstrap)": rows["vanilla_old"].mean(), "vanilla new (linearised t)": rows["vanilla_new"].mean(),
                "GLMM old (df=m-q)": rows["mixed_old"].mean(), "GLMM new (singular-aware df)": rows["mixed_new"].mean(),
                "singular fits": rows["singular"].mean(), "rows missing": int(rows[["mixed_new"]].isna().sum().sum()),
            })  # fmt: skip
            print(f"  sigma {sigma}, {n_speakers} speakers done ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    report = pd.DataFrame(lines)
    print(f"Coverage of 95% intervals for the expected-WER ratio, {args.replicates} data sets per row "
          f"(Monte-Carlo SE about {100 * np.sqrt(0.95 * 0.05 / args.replicates):.1f} points), "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(report.to_string(index=False))


if __name__ == "__main__":
    main()
