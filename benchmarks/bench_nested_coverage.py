"""Coverage of the crossed bootstrap's 95% intervals when speakers are nested in item sets (BASIS demo
classification's design), over a grid of designs and speaker-effect sizes.

    python benchmarks/bench_nested_coverage.py                 # 400 data sets per design, about 2 minutes
    python benchmarks/bench_nested_coverage.py --datasets 1000

Each data set is :func:`harness.metrics.simulation.simulate_nested_scores` (0/100 scores, probit model with speaker
and item effects, a known true gap) for 2 item sets of 8 items, with 2, 3 or 5 speakers per (set, group) cell and
speaker-effect SD 0.3, 1 or 2 (item SD 0.5), at a true gap of 0 (probits 0.8, 0.8) and one of about 12 points (1.0,
0.5). For each it prints the share of intervals (:func:`harness.metrics.crossed.crossed_group_gap`, 400 replicates)
covering the true gap, with its Monte-Carlo standard error, and the median degrees of freedom, next to the same
data's interval from a speaker-level Welch test on per-speaker mean scores (the baseline, computed in the same run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.metrics.crossed import crossed_group_gap
from harness.metrics.simulation import simulate_nested_scores

SPEAKERS_PER_CELL = (2, 3, 5)
SPEAKER_SDS = (0.3, 1.0, 2.0)
GAPS = {"null": (0.8, 0.8), "gap": (1.0, 0.5)}


def welch_interval(table, level: float = 0.95) -> tuple[float, float]:
    """Welch's interval for the difference of the groups' mean per-speaker scores (speakers as the units)."""
    per_speaker = table.groupby(["group", "speaker"])["score"].mean()
    a, b = per_speaker["a"].to_numpy(), per_speaker["b"].to_numpy()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    if se == 0:
        return a.mean() - b.mean(), a.mean() - b.mean()
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.5 + level / 2, df) * se
    return a.mean() - b.mean() - half, a.mean() - b.mean() + half


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print("speakers/cell  speaker SD  truth   crossed coverage (SE)  median df  Welch coverage  crossed/Welch")
    for per_cell in SPEAKERS_PER_CELL:
        for speaker_sd in SPEAKER_SDS:
            for name, probits in GAPS.items():
                covered, welch_covered, dfs = 0, 0, []
                for seed in range(args.datasets):
                    simulated = simulate_nested_scores(
                        seed, speakers_per_cell=per_cell, probits=probits, speaker_sd=speaker_sd, item_sd=0.5
                    )
                    result = crossed_group_gap(
                        simulated.table, value="score", contrast=("a", "b"), n_boot=400, seed=seed
                    )
                    covered += bool(result.estimable and result.ci_low <= simulated.true_gap <= result.ci_high)
                    dfs.append(result.df)
                    low, high = welch_interval(simulated.table)
                    welch_covered += bool(low <= simulated.true_gap <= high)
                share, welch_share = covered / args.datasets, welch_covered / args.datasets
                se = np.sqrt(share * (1 - share) / args.datasets)
                print(
                    f"{per_cell:>13}  {speaker_sd:>10.1f}  {name:>5}   {share:>9.3f} ({se:.3f})      "
                    f"{np.nanmedian(dfs):>6.1f}     {welch_share:>10.3f}      {share / welch_share:>6.3f}",
                    flush=True,
                )
    print(f"\n{time.perf_counter() - start:.0f} s; {args.datasets} data sets per row; target: crossed coverage >= 0.93")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
