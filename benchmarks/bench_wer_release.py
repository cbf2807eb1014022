"""The time of one deciding-row release comparison of a WER ratio on a CREMA-D-sized table (issue 58): 7,442
utterances of 91 speakers per checkpoint, each with its own 8 semantic covariates (the default PCA components), one
joint fit of both checkpoints (:func:`harness.metrics.wer_release.ratio_interaction`), against the vanilla
comparison it replaces as the deciding measure (:func:`harness.metrics.paired.paired_group_exchange_excess`,
1000 draws x 64 exchanges).

The tables are :func:`harness.metrics.simulation.simulate_release_pair`'s (content confounded with group, a
candidate whose errors grow on hard content, no voice effect), with 7 further pure-noise components per checkpoint.
One run each, wall and CPU time printed.

    .venv/bin/python benchmarks/bench_wer_release.py [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.checks.wer_ratio.release import speaker_sums
from harness.metrics.paired import largest_log_ratio, paired_group_exchange_excess, paired_speaker_test
from harness.metrics.simulation import simulate_release_pair
from harness.metrics.wer_release import ratio_interaction

UTTERANCES, SPEAKERS, COMPONENTS = 7442, 91, 8


def cremad_sized(seed: int):
    """Both checkpoints' tables at CREMA-D's size (82 utterances for most speakers, 7,442 in all)."""
    pair = simulate_release_pair(seed, n_speakers=SPEAKERS, utterances_per_speaker=82)
    keep = np.arange(len(pair.candidate)) < UTTERANCES
    rng = np.random.default_rng(seed + 1)
    tables = []
    for table in (pair.candidate, pair.baseline):
        table = table[keep].reset_index(drop=True)
        for k in range(2, COMPONENTS + 1):
            table[f"x_pc{k}"] = rng.normal(size=len(table))
        tables.append(table)
    return tables, [f"x_pc{k}" for k in range(1, COMPONENTS + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    (candidate, baseline), covariates = cremad_sized(args.seed)
    print(f"{len(candidate)} utterances, {candidate['speaker'].nunique()} speakers, {len(covariates)} covariates each")
    wall, cpu = time.perf_counter(), time.process_time()
    result = ratio_interaction(
        candidate,
        baseline,
        numerator="F",
        denominator="M",
        candidate_covariates=covariates,
        baseline_covariates=covariates,
    )
    print(
        f"deciding row (joint fit): {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU; "
        f"log ratio {result.log_ratio_baseline:+.3f} -> {result.log_ratio_candidate:+.3f}, delta {result.delta:+.3f} "
        f"(se {result.se:.3f}, df {result.df:g}, one-sided p {result.p:.3g}), converged {result.converged}"
    )
    sums = [speaker_sums(_records(table)) for table in (candidate, baseline)]
    wall, cpu = time.perf_counter(), time.process_time()
    vanilla = paired_speaker_test(paired_group_exchange_excess(*sums, largest_log_ratio, seed=args.seed), "higher")
    print(
        f"vanilla beyond group exchange: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s "
        f"CPU; worsening {vanilla.worsening:+.3f} (one-sided p {vanilla.p_worse:.3g})"
    )


def _records(table):
    columns = ["speaker", "group", "insertions", "deletions", "substitutions", "n_ref_words"]
    return {"utterance": [str(k) for k in range(len(table))], **{c: table[c].tolist() for c in columns}}


if __name__ == "__main__":
    main()
