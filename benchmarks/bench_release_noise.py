"""Release comparisons against answer noise (issue 45): how often a voice-fair candidate that differs from a
voice-fair baseline only in answer noise is judged worse, and how often a grown systematic effect is caught.

Statistics level, no model: per simulated pair, two checkpoints answer the same recordings (24 speakers, 12 swapped
female -> male and 12 male -> female, 6 recordings each, one attribute of 6 values) on both counterfactual arms.
Each recording has its own answer distribution (its content: a Dirichlet(1) draw over the 6 values).

* ``steady``: a voice-fair checkpoint whose answer is the same on both arms (greedy decoding);
* ``noisy``: a voice-fair checkpoint whose answer is redrawn on every arm from the recording's distribution (a
  sampling decoder, ``sim:fair``);
* ``grown``: the noisy checkpoint whose swap arm answers the direction's stereotyped value with probability
  ``--effect`` (0.4 by default: an excess over the arm-exchange null of about 18, the size of the demo's advisory
  regression against the voice-blind release, +17.3; 0.3 gives about 12, its hollywood casting and personal shopper
  regressions; its story regression is larger).

Per pair the release comparison of :class:`harness.checks.counterfactual.check.CounterfactualCheck` is run on the
per-speaker arm sums (the records' paired data), one case at one-sided alpha 0.05 (rule ``both`` with margin 0):
the arm-exchange excess (:func:`harness.metrics.counterfactual.paired_excess_bootstrap`) and, for contrast, the raw
arm nTVD compared before issue 45 (:func:`harness.metrics.paired.paired_speaker_bootstrap` of
:func:`harness.metrics.counterfactual.release_statistic`). Then the nTVD check's release comparison on the same
design answered once per recording, by the group-exchange excess (:func:`harness.metrics.ntvd.paired_ntvd_excess`) and by the raw nTVD's checkpoint-swap permutation compared
before issue 45 (:func:`harness.metrics.ntvd.paired_ntvd_difference`): ``steady`` answers each recording's most
likely value (greedy), ``noisy`` draws it, ``diverse`` answers uniformly, ``concentrated`` answers v0 with
probability 0.8, ``grown`` draws it and answers the female speakers' stereotyped value with probability
``--effect``. Then the WER ratio's (:func:`harness.metrics.paired.paired_group_exchange_excess` against the raw
:func:`~harness.metrics.paired.paired_speaker_bootstrap`, largest |log WER ratio|): speakers whose error rates
differ more by chance (``noisy``) or less (``steady``), and ``grown`` female speakers erring exp(``--wer-effect``)
times as often. Last the BASIS checks' (:func:`harness.metrics.paired.paired_crossed_gap`, the raw largest group gap,
measured only): 8 speakers per group x 12 items, ``steady`` answering each item alike for everyone, ``noisy``
drawing each answer, ``grown`` lowering group m's logit by ``--basis-effect``. Printed per check, statistic and pair: the share of pairs judged worse, with 95% Clopper-Pearson intervals.

Usage: ``python benchmarks/bench_release_noise.py --pairs 200`` (counterfactual and nTVD 765 s, WER and BASIS about 2
minutes each, on a shared two-core machine; ``--pairs 40`` for a quick look, ``--checks ntvd wer`` picks checks).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import beta

from harness.metrics.counterfactual import (
    arm_exchange_index,
    paired_excess_bootstrap,
    release_statistic,
    retained_values,
    speaker_arm_sums,
    with_arm_counterparts,
)
from harness.metrics.ntvd import paired_ntvd_difference, paired_ntvd_excess
from harness.metrics.paired import (
    largest_log_ratio,
    paired_crossed_gap,
    paired_group_exchange_excess,
    paired_speaker_bootstrap,
    paired_speaker_test,
)

ALPHA = 0.05
SPEAKERS, RECORDINGS, VALUES, TAU = 24, 6, 6, 10
STEREOTYPED = {"female": "v0", "male": "v5"}


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def recording_distributions(rng: np.random.Generator) -> np.ndarray:
    """(speakers, recordings, values): each recording's answer distribution, shared by the checkpoints of a pair."""
    return rng.dirichlet(np.ones(VALUES), size=(SPEAKERS, RECORDINGS))


def checkpoint(rng: np.random.Generator, content: np.ndarray, kind: str, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's long table (``speaker, recording, arm, attribute, value, source_group``); ``kind`` is
    ``steady``, ``noisy`` or ``grown`` (module docstring)."""
    rows = []
    for s in range(SPEAKERS):
        group = "female" if s % 2 == 0 else "male"
        for r in range(RECORDINGS):
            first = f"v{rng.choice(VALUES, p=content[s, r])}"
            for arm in ("identity", "swap"):
                value = first if kind == "steady" or arm == "identity" else f"v{rng.choice(VALUES, p=content[s, r])}"
                if kind == "grown" and arm == "swap" and rng.random() < effect:
                    value = STEREOTYPED[group]
                rows.append((f"s{s:02d}", f"s{s:02d}-r{r}", arm, "occupation", value, group))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value", "source_group"])


def paired_tables(candidate: pd.DataFrame, baseline: pd.DataFrame) -> tuple[list[pd.DataFrame], list[str]]:
    """Both checkpoints' per-speaker arm sums on the same complete columns, as the check's compare builds them."""
    tables = [speaker_arm_sums(table, "vibe") for table in (candidate, baseline)]
    columns = with_arm_counterparts(sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"}))
    return [table.reindex(columns=["group", *columns], fill_value=0.0) for table in tables], columns


def p_worse(candidate: pd.DataFrame, baseline: pd.DataFrame, seed: int, statistic_kind: str) -> float:
    tables, columns = paired_tables(candidate, baseline)
    statistic = release_statistic("vibe", columns, retained=retained_values(tables, TAU))
    if statistic_kind == "excess":
        result = paired_excess_bootstrap(*tables, statistic, arm_exchange_index(columns), n_boot=400, seed=seed)
    else:
        result = paired_speaker_bootstrap(*tables, statistic, n_boot=400, seed=seed)
    test = paired_speaker_test(result, "higher")
    return test.p_worse if test.estimable else 1.0


def group_table(rng: np.random.Generator, content: np.ndarray, kind: str, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's answers to the original recordings for the nTVD check (``speaker, group, attribute,
    value``): ``steady`` answers each recording's most likely value (greedy), ``noisy`` draws it (sampling),
    ``diverse`` answers uniformly over the values, ``concentrated`` answers v0 with probability 0.8 and otherwise
    uniformly, ``grown`` draws from the recording's distribution and answers the female speakers' stereotyped value
    with probability ``effect``."""
    rows = []
    for s in range(SPEAKERS):
        group = "female" if s % 2 == 0 else "male"
        for r in range(RECORDINGS):
            if kind == "steady":
                index = int(np.argmax(content[s, r]))
            elif kind == "diverse" or (kind == "concentrated" and rng.random() >= 0.8):
                index = int(rng.integers(VALUES))
            elif kind == "concentrated":
                index = 0
            else:
                index = int(rng.choice(VALUES, p=content[s, r]))
            if kind == "grown" and group == "female" and rng.random() < effect:
                index = 0
            rows.append((f"s{s:02d}", group, "occupation", f"v{index}"))
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def report(title: str, judged_worse: dict[tuple[str, str], int], pairs: int) -> None:
    print(title)
    print(f"{'pair':<24} {'statistic':<36} {'judged worse':>12}  95% CI")
    for (name, label), count in judged_worse.items():
        low, high = clopper_pearson(count, pairs)
        print(f"{name:<24} {label:<36} {count / pairs:>12.3f}  [{low:.3f}, {high:.3f}]")


def counterfactual_rates(pairs: int, effect: float, seed: int) -> None:
    comparisons = {"noisy vs steady": ("noisy", "steady"), "noisy vs noisy": ("noisy", "noisy"),
                   "grown vs steady": ("grown", "steady"), "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    labels = {"excess": "arm-exchange excess", "raw": "raw arm nTVD (before issue 45)"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, pair])
        content = recording_distributions(rng)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = checkpoint(rng, content, candidate_kind, effect)
            baseline = checkpoint(rng, content, baseline_kind)
            for kind, label in labels.items():
                judged_worse[(name, label)] += p_worse(candidate, baseline, pair, kind) <= ALPHA
    report(f"counterfactual: {pairs} simulated pairs, grown effect {effect}", judged_worse, pairs)


def ntvd_rates(pairs: int, effect: float, seed: int) -> None:
    comparisons = {"noisy vs steady": ("noisy", "steady"), "diverse vs concentrated": ("diverse", "concentrated"),
                   "noisy vs noisy": ("noisy", "noisy"), "grown vs steady": ("grown", "steady"),
                   "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    labels = {"excess": "group-exchange excess", "raw": "raw nTVD, checkpoint swap (before)"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 1, pair])
        content = recording_distributions(rng)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = group_table(rng, content, candidate_kind, effect)
            baseline = group_table(rng, content, baseline_kind)
            excess = paired_speaker_test(paired_ntvd_excess(candidate, baseline, TAU, n_boot=400, seed=pair), "higher")
            judged_worse[(name, labels["excess"])] += excess.estimable and excess.p_worse <= ALPHA
            raw = paired_ntvd_difference(candidate, baseline, tau=TAU, n_permutations=500, seed=pair)
            judged_worse[(name, labels["raw"])] += raw.p_value <= ALPHA
    report(f"ntvd (between gender groups): {pairs} simulated pairs, grown effect {effect}", judged_worse, pairs)


def wer_speakers(rng: np.random.Generator, words: np.ndarray, spread: float, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's per-speaker WER sums (the WER ratio's paired data): errors drawn at rate
    0.2 * exp(N(0, ``spread``)) per speaker, times exp(``effect``) for the female speakers."""
    groups = np.array(["female" if s % 2 == 0 else "male" for s in range(SPEAKERS)])
    rate = 0.2 * np.exp(rng.normal(0.0, spread, SPEAKERS)) * np.where(groups == "female", np.exp(effect), 1.0)
    errors = rng.binomial(words, np.clip(rate, 0.0, 1.0)).astype(float)
    index = [f"s{s:02d}" for s in range(SPEAKERS)]
    return pd.DataFrame({"group": groups, "errors": errors, "words": words.astype(float)}, index=index)


def wer_rates(pairs: int, effect: float, seed: int) -> None:
    """The WER ratio's release comparison, largest |log WER ratio|: ``steady`` speakers differ little by chance
    (spread 0.1), ``noisy`` ones more (0.5), ``grown`` female speakers err exp(``effect``) times as often."""
    comparisons = {"noisy vs steady": (0.5, 0.1, 0.0), "noisy vs noisy": (0.5, 0.5, 0.0),
                   "grown vs steady": (0.1, 0.1, effect), "grown vs noisy": (0.5, 0.5, effect)}  # fmt: skip
    labels = {"excess": "group-exchange excess", "raw": "raw |log ratio| (before)"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 3, pair])
        words = rng.integers(60, 120, SPEAKERS)
        for name, (candidate_spread, baseline_spread, grown) in comparisons.items():
            tables = wer_speakers(rng, words, candidate_spread, grown), wer_speakers(rng, words, baseline_spread)
            excess = paired_group_exchange_excess(*tables, largest_log_ratio, n_boot=400, seed=pair)
            raw = paired_speaker_bootstrap(*tables, largest_log_ratio, n_boot=400, seed=pair)
            for kind, result in (("excess", excess), ("raw", raw)):
                judged_worse[(name, labels[kind])] += paired_speaker_test(result, "higher").p_worse <= ALPHA
    report(f"WER ratio: {pairs} simulated pairs, grown log effect {effect}", judged_worse, pairs)


def basis_cells(rng: np.random.Generator, item_logits: np.ndarray, kind: str, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's BASIS (speaker, item) cells (8 speakers per group, 12 items; ``value`` 100 when correct):
    ``steady`` answers each item alike for every speaker (correct when its logit is positive: a greedy decoder whose
    answer depends on the item only), ``noisy`` draws each answer with probability logistic(item logit) (sampling),
    ``grown`` is noisy with group m's logit lowered by ``effect``."""
    rows = []
    for group in ("f", "m"):
        for s in range(8):
            for i, logit in enumerate(item_logits):
                shifted = logit - (effect if kind == "grown" and group == "m" else 0.0)
                correct = logit > 0 if kind == "steady" else rng.random() < 1.0 / (1.0 + np.exp(-shifted))
                rows.append((f"{group}{s}", group, f"item{i}", 1.0, 100.0 * correct))
    return pd.DataFrame(rows, columns=["speaker", "group", "item", "weight", "value"])


def basis_rates(pairs: int, effect: float, seed: int) -> None:
    """The BASIS checks' release comparison (:func:`harness.metrics.paired.paired_crossed_gap` on the raw largest
    group gap): measured, not yet corrected for noise."""
    comparisons = {"noisy vs steady": ("noisy", "steady"), "noisy vs noisy": ("noisy", "noisy"),
                   "grown vs steady": ("grown", "steady"), "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    label = "raw largest gap, crossed bootstrap"
    judged_worse = {(name, label): 0 for name in comparisons}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 2, pair])
        item_logits = rng.normal(0.5, 1.0, 12)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = basis_cells(rng, item_logits, candidate_kind, effect)
            baseline = basis_cells(rng, item_logits, baseline_kind)
            test = paired_crossed_gap(candidate, baseline, seed=pair, n_boot=400)
            judged_worse[(name, label)] += test.estimable and test.p_worse <= ALPHA
    report(f"BASIS (largest group gap): {pairs} simulated pairs, grown logit effect {effect}", judged_worse, pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--effect", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wer-effect", type=float, default=0.4)
    parser.add_argument("--basis-effect", type=float, default=1.0)
    checks = ["counterfactual", "ntvd", "wer", "basis"]
    parser.add_argument("--checks", nargs="+", default=checks, choices=checks)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{SPEAKERS} speakers x {RECORDINGS} recordings, {VALUES} values, one-sided alpha {ALPHA}")
    if "counterfactual" in args.checks:
        counterfactual_rates(args.pairs, args.effect, args.seed)
    if "ntvd" in args.checks:
        ntvd_rates(args.pairs, args.effect, args.seed)
    if "wer" in args.checks:
        wer_rates(args.pairs, args.wer_effect, args.seed)
    if "basis" in args.checks:
        basis_rates(args.pairs, args.basis_effect, args.seed)
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
