"""The time of one deciding-row release comparison of a WER ratio on a CREMA-D-sized table (issue 58): 7,442
utterances of 91 speakers per checkpoint, each with its own 8 semantic covariates (the default PCA components), one
joint fit of both checkpoints (:func:`harness.metrics.wer_release.ratio_interaction`), against the vanilla
comparison it replaces as the deciding measure (:func:`harness.metrics.paired.paired_group_exchange_excess`,
1000 draws x 64 exchanges).

The tables are :func:`harness.metrics.simulation.simulate_release_pair`'s (content confounded with group, a
candidate whose errors grow on hard content, no voice effect), with 7 further pure-noise components per checkpoint.
One run each, wall and CPU time printed.

``--null N`` instead estimates how often the deciding-row test judges a candidate worse at one-sided 0.05 (its p
alone, no margin) when it is not: N replicates of the content-confounded pair above at 40 speakers x 40 utterances
(no voice effect in either checkpoint), with a speaker effect common to both checkpoints (the model's assumption)
and with a checkpoint-specific speaker deviation of SD ``--speaker-checkpoint-sd`` besides (not modelled), and the
vanilla comparison's rate on the same pairs; then the same for the judge-score ratio
(:func:`harness.metrics.simulation.simulate_score_release_pair`, 30 speakers x 20 replies).

    .venv/bin/python benchmarks/bench_wer_release.py [--seed 0]
    .venv/bin/python benchmarks/bench_wer_release.py --null 100 [--speaker-checkpoint-sd 0.2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.checks.wer_ratio.release import speaker_sums
from harness.metrics.paired import largest_log_ratio, paired_group_exchange_excess, paired_speaker_test
from harness.metrics.score_release import score_ratio_interaction
from harness.metrics.simulation import simulate_release_pair, simulate_score_release_pair
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


def null_rates(replicates: int, speaker_checkpoint_sd: float, seed: int) -> None:
    """Rejection rates at one-sided 0.05 under no change of the voice effect (``--null``)."""
    for sd in (0.0, speaker_checkpoint_sd):
        deciding = vanilla = 0
        start = time.perf_counter()
        for k in range(replicates):
            pair = simulate_release_pair(seed + k, speaker_checkpoint_sd=sd)
            result = ratio_interaction(
                pair.candidate,
                pair.baseline,
                numerator="F",
                denominator="M",
                candidate_covariates=pair.covariates,
                baseline_covariates=pair.covariates,
            )
            deciding += result.p <= 0.05
            sums = [speaker_sums(_records(table)) for table in (pair.candidate, pair.baseline)]
            excess = paired_group_exchange_excess(*sums, largest_log_ratio, n_boot=200, seed=seed + k)
            vanilla += paired_speaker_test(excess, "higher").p_worse <= 0.05
        print(
            f"speaker x checkpoint SD {sd:g}: deciding row judged worse in {deciding}/{replicates}, vanilla in "
            f"{vanilla}/{replicates} ({time.perf_counter() - start:.0f} s)"
        )
    for sd in (0.0, speaker_checkpoint_sd):
        judged = 0
        for k in range(replicates):
            candidate, baseline = simulate_score_release_pair(seed + k, speaker_checkpoint_sd=sd)
            result = score_ratio_interaction(
                candidate,
                baseline,
                numerator="F",
                denominator="M",
                candidate_covariates=["x_pc1"],
                baseline_covariates=["x_pc1"],
            )
            judged += result.p <= 0.05
        print(f"judge scores, speaker x checkpoint SD {sd:g}: deciding row judged worse in {judged}/{replicates}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--null", type=int, default=0, help="replicates of the level study (0: the timing)")
    parser.add_argument("--speaker-checkpoint-sd", type=float, default=0.2)
    args = parser.parse_args()
    if args.null:
        null_rates(args.null, args.speaker_checkpoint_sd, args.seed)
        return
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
