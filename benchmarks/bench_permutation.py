"""Speaker-level permutation test on CREMA-D-sized data: vectorised against a naive pandas loop.

    python benchmarks/bench_permutation.py [--permutations 10000] [--naive-permutations 20]

Data: 91 speakers, 7,442 utterances, 6 attributes of ~40 values each (CREMA-D's size, VIBE §II-C).
The naive baseline re-groups the table with pandas for every permutation; it is timed on a few
permutations in the same run and scaled to the same count. Target: <= 0.1 s per 10,000 permutations.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from harness.metrics import ntvd, permutation_test


def crema_d_sized_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    speakers = np.repeat(np.arange(91), np.diff(np.linspace(0, 7442, 92).astype(int)))
    groups = np.where(np.arange(91) < 48, "male", "female")
    frames = []
    for attribute in range(6):
        preferences = rng.dirichlet(np.full(40, 0.5), size=91)
        values = [rng.choice(40, p=preferences[s]) for s in speakers]
        frames.append(
            pd.DataFrame(
                {
                    "speaker": speakers.astype(str),
                    "group": groups[speakers],
                    "attribute": f"a{attribute}",
                    "value": np.asarray(values).astype(str),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def naive_null(table: pd.DataFrame, n_permutations: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    speaker_groups = table.drop_duplicates("speaker").set_index("speaker")["group"]
    null = np.empty(n_permutations)
    for index in range(n_permutations):
        shuffled = pd.Series(rng.permutation(speaker_groups.to_numpy()), index=speaker_groups.index)
        null[index] = ntvd(table.assign(group=table["speaker"].map(shuffled)), tau=10).score
    return null


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--permutations", type=int, default=10_000)
    parser.add_argument("--naive-permutations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    table = crema_d_sized_table()
    permutation_test(table, n_permutations=100)
    timings = []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        result = permutation_test(table, n_permutations=args.permutations, seed=repeat)
        timings.append(time.perf_counter() - started)
    vectorised = min(timings)

    started = time.perf_counter()
    naive_null(table, args.naive_permutations, seed=0)
    naive = (time.perf_counter() - started) / args.naive_permutations * args.permutations

    print(f"data: {table['speaker'].nunique()} speakers, {len(table) // 6} utterances, 6 attributes, {len(table)} rows")
    print(
        f"vectorised: {vectorised:.3f} s per {args.permutations} permutations (best of {args.repeats}; observed nTVD {result.observed:.2f}, p {result.p_value:.4f})"
    )
    print(
        f"naive pandas loop: {naive:.1f} s per {args.permutations} permutations (timed on {args.naive_permutations}, scaled)"
    )
    print(f"speed-up: {naive / vectorised:.0f}x; target <= 0.1 s: {'met' if vectorised <= 0.1 else 'NOT met'}")


if __name__ == "__main__":
    main()
