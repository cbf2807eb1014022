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
design answered once per recording, at the demo corpus's VIBE size (27 speakers, 13 female and 14 male, 12
recordings each, as every VIBE task of harness/data/demo asks; 324 answers, one value each, or with
``--ntvd-mentions advisory`` 2 or 3 values each, as the demo's advisory answers list about 817 activities), by the
group-exchange excess
(:func:`harness.metrics.ntvd.paired_ntvd_excess`) and by the raw nTVD's checkpoint-swap permutation compared before
issue 45 (:func:`harness.metrics.ntvd.paired_ntvd_difference`): ``steady`` answers each recording's most likely
value (greedy), ``noisy`` draws it, ``diverse`` answers uniformly, ``concentrated`` answers v0 with probability 0.8,
``grown`` draws it and answers the female speakers' stereotyped value with probability ``--ntvd-effect`` (0.33: a
mean excess of about 18 at this size, the demo's advisory gender regression +17.7, its one-attribute task; story's
+47.9 is larger, hollywood casting's +10.8 is the mean over 4 attributes, whose chance part averages down, and
personal shopper's +9.4 and candidate review's +7.3 are not significant in the demo). Then the
WER ratio's vanilla comparison, since issue 58 only the fallback where a record has no per-utterance rows (the
deciding row's joint fit: ``bench_wer_release.py --gate-rule``)
(:func:`harness.metrics.paired.paired_group_exchange_excess` against the raw
:func:`~harness.metrics.paired.paired_speaker_bootstrap`, largest |log WER ratio|): speakers whose error rates
differ more by chance (``noisy``) or less (``steady``), and ``grown`` female speakers erring exp(``--wer-effect``)
times as often. Last the BASIS checks': the largest group gap beyond its group-exchange null by the paired speaker
bootstrap (:func:`harness.metrics.paired.paired_crossed_excess`, now) and the raw largest gap's paired two-way
bootstrap (:func:`harness.metrics.paired.paired_crossed_gap`, before), on 8 speakers per group x 12 items
(``--basis-speakers``, ``--basis-items``; the demo suite's 2 speakers per group cannot show a 20-point regression),
``steady`` answering each item alike for everyone, ``noisy`` drawing each answer, ``grown`` lowering group m's
logit by each ``--basis-effect`` (1 and 2: raw gaps of about 20 and 37 points). Printed per check, statistic and
pair: the share of pairs judged worse, with 95% Clopper-Pearson intervals, and the grown candidates' mean excess
(nTVD) or raw gap (BASIS).

``steady-grown`` (counterfactual and nTVD) is the steady checkpoint with the grown effect (greedy decoding with the
same systematic effect); a baseline of kind ``grown`` or ``steady-grown`` carries the effect too, so "grown vs
steady-grown" and "steady-grown vs grown" compare equal non-zero effects under different answer noise (issue 58).
The counterfactual and nTVD checks also print the U-statistic rows (:mod:`harness.metrics.unbiased_effect`):
"U-statistic (unbiased)", the paired jackknife test of the unbiased squared systematic effect ``Q`` (squared
points), judged with the margin carried to squares at the baseline's estimate (:meth:`ReleaseRule.u_judged_worse`: worse by
more than the margin exactly when ``sqrt(Q_c) > sqrt(Q_b) + margin``), and "U-statistic, points scale", the same
estimate's root ``sqrt(max(Q, 0))`` tested in points with the margin itself.

Usage: ``python benchmarks/bench_release_noise.py --pairs 200`` (on a shared, loaded two-core machine: counterfactual
about 8 minutes, nTVD 193 s (274 s with ``--ntvd-mentions advisory --ntvd-effect 0.4``), WER about 2 minutes, BASIS
562 s for both effects; ``--pairs 40`` for a quick look, ``--checks ntvd basis`` picks checks, ``--no-raw-ntvd``
skips the raw nTVD's permutation).
"""

from __future__ import annotations

import argparse
import dataclasses
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
    paired_crossed_excess,
    paired_crossed_gap,
    paired_group_exchange_excess,
    paired_speaker_bootstrap,
    paired_speaker_test,
)
from harness.metrics.unbiased_effect import margin_in_squares, paired_counterfactual_u_test, paired_group_u_test

SPEAKERS, RECORDINGS, VALUES, TAU = 24, 6, 6, 10
NTVD_SPEAKERS, NTVD_RECORDINGS = 27, 12
"""The demo corpus's VIBE design (harness/data/demo): 27 speakers (13 female, 14 male), 12 recordings each."""
STEREOTYPED = {"female": "v0", "male": "v5"}


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def recording_distributions(
    rng: np.random.Generator, speakers: int = SPEAKERS, recordings: int = RECORDINGS
) -> np.ndarray:
    """(speakers, recordings, values): each recording's answer distribution, shared by the checkpoints of a pair."""
    return rng.dirichlet(np.ones(VALUES), size=(speakers, recordings))


def checkpoint(rng: np.random.Generator, content: np.ndarray, kind: str, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's long table (``speaker, recording, arm, attribute, value, source_group``); ``kind`` is
    ``steady``, ``noisy``, ``grown`` or ``steady-grown`` (the steady checkpoint with the grown effect: greedy decoding
    with the same systematic effect as ``grown``; module docstring)."""
    rows = []
    for s in range(SPEAKERS):
        group = "female" if s % 2 == 0 else "male"
        for r in range(RECORDINGS):
            first = f"v{rng.choice(VALUES, p=content[s, r])}"
            for arm in ("identity", "swap"):
                steady = kind in ("steady", "steady-grown")
                value = first if steady or arm == "identity" else f"v{rng.choice(VALUES, p=content[s, r])}"
                if kind in ("grown", "steady-grown") and arm == "swap" and rng.random() < effect:
                    value = STEREOTYPED[group]
                rows.append((f"s{s:02d}", f"s{s:02d}-r{r}", arm, "occupation", value, group))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value", "source_group"])


def paired_tables(candidate: pd.DataFrame, baseline: pd.DataFrame) -> tuple[list[pd.DataFrame], list[str]]:
    """Both checkpoints' per-speaker arm sums on the same complete columns, as the check's compare builds them."""
    tables = [speaker_arm_sums(table, "vibe") for table in (candidate, baseline)]
    columns = with_arm_counterparts(sorted((set(tables[0].columns) | set(tables[1].columns)) - {"group"}))
    return [table.reindex(columns=["group", *columns], fill_value=0.0) for table in tables], columns


@dataclasses.dataclass(frozen=True)
class ReleaseRule:
    """The release rule a simulated pair is judged by: ``alpha``, the one-sided level of "no worsening" (``--alpha``;
    ``--gate-rule``: ``gate.alpha`` over a release run's family, twice the demo's 43 cases, absolute and release
    tests, issue 57), and ``margin``, the worsening a regression must exceed (``--margin``; ``--gate-rule``: each
    check's ``max_increase`` or ``max_worsening``)."""

    alpha: float = 0.05
    margin: float = 0.0

    def judged_worse(self, test, margin: float | None = None) -> bool:
        """Estimable, worse by more than the margin and one-sided p <= alpha. ``margin``: the margin on the test's
        own scale where that is not points (the U-statistic's squared points: :meth:`u_judged_worse`)."""
        margin = self.margin if margin is None else margin
        return bool(test.estimable and test.worsening > margin and test.p_worse <= self.alpha)

    def u_judged_worse(self, test) -> bool:
        """The rule on a U-statistic test (:mod:`harness.metrics.unbiased_effect`, squared points ``Q``): the margin
        in points carried to squares at the baseline's estimate (``margin_in_squares``), so that the worsening
        exceeds it exactly when ``sqrt(Q_c) > sqrt(Q_b) + margin``; the p-value tests ``Q_c - Q_b > 0``."""
        return self.judged_worse(test, margin_in_squares(self.margin, test.baseline))


def p_worse(candidate: pd.DataFrame, baseline: pd.DataFrame, seed: int, statistic_kind: str):
    tables, columns = paired_tables(candidate, baseline)
    retained = retained_values(tables, TAU)
    if statistic_kind in ("u", "u-points"):
        return paired_counterfactual_u_test(
            *tables, retained, scale="points" if statistic_kind == "u-points" else "squared"
        )
    statistic = release_statistic("vibe", columns, retained=retained)
    if statistic_kind == "excess":
        result = paired_excess_bootstrap(*tables, statistic, arm_exchange_index(columns), n_boot=400, seed=seed)
    else:
        result = paired_speaker_bootstrap(*tables, statistic, n_boot=400, seed=seed)
    return paired_speaker_test(result, "higher")


def group_table(
    rng: np.random.Generator, content: np.ndarray, kind: str, effect: float = 0.0, mentions: str = "one"
) -> pd.DataFrame:
    """One checkpoint's answers to the original recordings for the nTVD check (``speaker, group, attribute,
    value``): ``steady`` answers each recording's most likely value (greedy), ``noisy`` draws it (sampling),
    ``diverse`` answers uniformly over the values, ``concentrated`` answers v0 with probability 0.8 and otherwise
    uniformly, ``grown`` draws from the recording's distribution and answers the female speakers' stereotyped value
    with probability ``effect``. ``mentions`` ``one``: one value per answer; ``advisory``: 2 or 3 (equally often)
    distinct values per answer, as the demo's advisory answers list activities (817 values in 324 answers), each
    mention chosen as above (``steady``: the most likely values)."""
    rows = []
    speakers, recordings = content.shape[:2]
    for s in range(speakers):
        group = "female" if s % 2 == 1 else "male"
        for r in range(recordings):
            count = 1 if mentions == "one" else 2 + int(rng.random() < 0.5)
            chosen = []
            for mention in range(count):
                if kind in ("steady", "steady-grown"):
                    index = int(np.argsort(-content[s, r], kind="stable")[mention])
                elif kind == "diverse" or (kind == "concentrated" and rng.random() >= 0.8):
                    index = int(rng.integers(VALUES))
                elif kind == "concentrated":
                    index = 0
                else:
                    index = int(rng.choice(VALUES, p=content[s, r]))
                if kind in ("grown", "steady-grown") and group == "female" and rng.random() < effect:
                    index = 0
                chosen.append(index)
            rows.extend((f"s{s:02d}", group, "occupation", f"v{index}") for index in dict.fromkeys(chosen))
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def report(title: str, judged_worse: dict[tuple[str, str], int], pairs: int) -> None:
    print(title)
    print(f"{'pair':<24} {'statistic':<36} {'judged worse':>12}  95% CI")
    for (name, label), count in judged_worse.items():
        low, high = clopper_pearson(count, pairs)
        print(f"{name:<24} {label:<36} {count / pairs:>12.3f}  [{low:.3f}, {high:.3f}]")


def counterfactual_rates(rule: ReleaseRule, pairs: int, effect: float, seed: int) -> None:
    comparisons = {"noisy vs steady": ("noisy", "steady"), "steady vs noisy": ("steady", "noisy"),
                   "noisy vs noisy": ("noisy", "noisy"), "grown vs steady-grown": ("grown", "steady-grown"),
                   "steady-grown vs grown": ("steady-grown", "grown"),
                   "grown vs steady": ("grown", "steady"), "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    labels = {"excess": "arm-exchange excess", "raw": "raw arm nTVD (before issue 45)", "u": "U-statistic (unbiased)",
              "u-points": "U-statistic, points scale"}  # fmt: skip
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, pair])
        content = recording_distributions(rng)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = checkpoint(rng, content, candidate_kind, effect)
            baseline = checkpoint(rng, content, baseline_kind, effect)
            for kind, label in labels.items():
                judge = rule.u_judged_worse if kind == "u" else rule.judged_worse
                judged_worse[(name, label)] += judge(p_worse(candidate, baseline, pair, kind))
    report(f"counterfactual: {pairs} simulated pairs, grown effect {effect}", judged_worse, pairs)


def ntvd_rates(
    rule: ReleaseRule, pairs: int, effect: float, seed: int, with_raw: bool = True, mentions: str = "one"
) -> None:
    comparisons = {"noisy vs steady": ("noisy", "steady"), "steady vs noisy": ("steady", "noisy"),
                   "diverse vs concentrated": ("diverse", "concentrated"), "noisy vs noisy": ("noisy", "noisy"),
                   "grown vs steady-grown": ("grown", "steady-grown"),
                   "steady-grown vs grown": ("steady-grown", "grown"),
                   "grown vs steady": ("grown", "steady"), "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    labels = {
        "excess": "group-exchange excess",
        "raw": "raw nTVD, checkpoint swap (before)",
        "u": "U-statistic (unbiased)",
        "u-points": "U-statistic, points scale",
    }
    labels = labels if with_raw else {name: label for name, label in labels.items() if name != "raw"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    candidate_excess = {name: [] for name in comparisons}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 1, pair])
        content = recording_distributions(rng, NTVD_SPEAKERS, NTVD_RECORDINGS)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = group_table(rng, content, candidate_kind, effect, mentions)
            baseline = group_table(rng, content, baseline_kind, effect, mentions)
            result = paired_ntvd_excess(candidate, baseline, TAU, n_boot=400, seed=pair)
            candidate_excess[name].append(result.candidate)
            excess = paired_speaker_test(result, "higher")
            judged_worse[(name, labels["excess"])] += rule.judged_worse(excess)
            judged_worse[(name, labels["u"])] += rule.u_judged_worse(paired_group_u_test(candidate, baseline, TAU))
            points = paired_group_u_test(candidate, baseline, TAU, scale="points")
            judged_worse[(name, labels["u-points"])] += rule.judged_worse(points)
            if with_raw:
                raw = paired_ntvd_difference(candidate, baseline, tau=TAU, n_permutations=500, seed=pair)
                judged_worse[(name, labels["raw"])] += raw.p_value <= rule.alpha
    design = f"{NTVD_SPEAKERS} speakers (13 female, 14 male) x {NTVD_RECORDINGS} recordings, {mentions} value(s) each"
    report(
        f"ntvd (between gender groups, {design}): {pairs} simulated pairs, grown effect {effect}", judged_worse, pairs
    )
    for name, values in candidate_excess.items():
        print(f"  {name}: the candidate's mean excess {np.nanmean(values):.1f} points")


def wer_speakers(rng: np.random.Generator, words: np.ndarray, spread: float, effect: float = 0.0) -> pd.DataFrame:
    """One checkpoint's per-speaker WER sums (the WER ratio's paired data): errors drawn at rate
    0.2 * exp(N(0, ``spread``)) per speaker, times exp(``effect``) for the female speakers."""
    groups = np.array(["female" if s % 2 == 0 else "male" for s in range(SPEAKERS)])
    rate = 0.2 * np.exp(rng.normal(0.0, spread, SPEAKERS)) * np.where(groups == "female", np.exp(effect), 1.0)
    errors = rng.binomial(words, np.clip(rate, 0.0, 1.0)).astype(float)
    index = [f"s{s:02d}" for s in range(SPEAKERS)]
    return pd.DataFrame({"group": groups, "errors": errors, "words": words.astype(float)}, index=index)


def wer_rates(rule: ReleaseRule, pairs: int, effect: float, seed: int) -> None:
    """The WER ratio's *vanilla* release comparison, largest |log WER ratio| from per-speaker sums: since issue 58
    only the fallback (a record without per-utterance rows, or ``method: no_speaker``; a named deviation), the deciding
    row's joint fit being measured by ``bench_wer_release.py --gate-rule``. ``steady`` speakers differ little by
    chance (spread 0.1), ``noisy`` ones more (0.5), ``grown`` female speakers err exp(``effect``) times as often."""
    comparisons = {"noisy vs steady": (0.5, 0.1, 0.0), "noisy vs noisy": (0.5, 0.5, 0.0),
                   "grown vs steady": (0.1, 0.1, effect), "grown vs noisy": (0.5, 0.5, effect)}  # fmt: skip
    labels = {"excess": "vanilla fallback, group-exchange excess", "raw": "raw |log ratio| (before)"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 3, pair])
        words = rng.integers(60, 120, SPEAKERS)
        for name, (candidate_spread, baseline_spread, grown) in comparisons.items():
            tables = wer_speakers(rng, words, candidate_spread, grown), wer_speakers(rng, words, baseline_spread)
            excess = paired_group_exchange_excess(*tables, largest_log_ratio, n_boot=400, seed=pair)
            raw = paired_speaker_bootstrap(*tables, largest_log_ratio, n_boot=400, seed=pair)
            for kind, result in (("excess", excess), ("raw", raw)):
                judged_worse[(name, labels[kind])] += rule.judged_worse(paired_speaker_test(result, "higher"))
    report(
        f"WER ratio, the vanilla ratio (the fallback where a record has no per-utterance rows, or method no_speaker; "
        f"the deciding row: bench_wer_release.py --gate-rule): {pairs} simulated pairs, grown log effect {effect}",
        judged_worse,
        pairs,
    )


def basis_cells(
    rng: np.random.Generator, item_logits: np.ndarray, kind: str, effect: float = 0.0, speakers: int = 8
) -> pd.DataFrame:
    """One checkpoint's BASIS (speaker, item) cells (``speakers`` per group; ``value`` 100 when correct):
    ``steady`` answers each item alike for every speaker (correct when its logit is positive: a greedy decoder whose
    answer depends on the item only), ``noisy`` draws each answer with probability logistic(item logit) (sampling),
    ``grown`` is noisy with group m's logit lowered by ``effect``."""
    rows = []
    for group in ("f", "m"):
        for s in range(speakers):
            for i, logit in enumerate(item_logits):
                shifted = logit - (effect if kind == "grown" and group == "m" else 0.0)
                correct = logit > 0 if kind == "steady" else rng.random() < 1.0 / (1.0 + np.exp(-shifted))
                rows.append((f"{group}{s}", group, f"item{i}", 1.0, 100.0 * correct))
    return pd.DataFrame(rows, columns=["speaker", "group", "item", "weight", "value"])


def basis_rates(rule: ReleaseRule, pairs: int, effect: float, seed: int, speakers: int, items: int) -> None:
    """The BASIS checks' release comparison: the largest group gap beyond its group-exchange null, paired speaker
    bootstrap (:func:`harness.metrics.paired.paired_crossed_excess`, now), against the raw largest gap's paired
    two-way bootstrap (:func:`harness.metrics.paired.paired_crossed_gap`, before)."""
    comparisons = {"noisy vs steady": ("noisy", "steady"), "steady vs noisy": ("steady", "noisy"),
                   "noisy vs noisy": ("noisy", "noisy"), "grown vs steady-grown": ("grown", "steady-grown"),
                   "steady-grown vs grown": ("steady-grown", "grown"),
                   "grown vs steady": ("grown", "steady"), "grown vs noisy": ("grown", "noisy")}  # fmt: skip
    labels = {"excess": "group-exchange excess", "raw": "raw largest gap, crossed (before)"}
    judged_worse = {(name, label): 0 for name in comparisons for label in labels.values()}
    raw_gap = {name: [] for name in comparisons}
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 2, pair])
        item_logits = rng.normal(0.5, 1.0, items)
        for name, (candidate_kind, baseline_kind) in comparisons.items():
            candidate = basis_cells(rng, item_logits, candidate_kind, effect, speakers)
            baseline = basis_cells(rng, item_logits, baseline_kind, speakers=speakers)
            excess = paired_crossed_excess(candidate, baseline, seed=pair, n_boot=400)
            raw = paired_crossed_gap(candidate, baseline, seed=pair, n_boot=400)
            raw_gap[name].append(raw.candidate)
            for kind, test in (("excess", excess), ("raw", raw)):
                judged_worse[(name, labels[kind])] += rule.judged_worse(test)
    design = f"{speakers} speakers per group x {items} items"
    report(
        f"BASIS (largest group gap, {design}): {pairs} simulated pairs, grown logit effect {effect}",
        judged_worse,
        pairs,
    )
    for name, values in raw_gap.items():
        print(f"  {name}: the candidate's mean raw gap {np.mean(values):.1f} points")


DEMO_CASES = 43
"""The demo gate's bias cases per model (README): a release run tests each twice."""


def gate_release_alpha() -> float:
    """The one-sided level a release comparison must reach in the demo gate: ``gate.alpha`` Bonferroni over the
    release run's family (absolute and release tests of the 43 cases)."""
    from harness.metrics.multitest import DecisionRule
    from harness.thresholds import GATE_SCHEMA

    alpha = float(GATE_SCHEMA.keys["alpha"].default)
    return DecisionRule(alpha=alpha, family_size=2 * DEMO_CASES).corrected_alpha(1)


def gate_margins() -> dict[str, float]:
    """Each check's release margin (``max_increase``) in the packaged thresholds."""
    from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA
    from harness.checks.ntvd.check import NtvdCheck

    return {
        "counterfactual": float(COUNTERFACTUAL_SCHEMA.keys["max_worsening"].default),
        "ntvd": float(NtvdCheck.schema.keys["max_increase"].default),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--effect", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wer-effect", type=float, default=0.4)
    parser.add_argument("--ntvd-effect", type=float, default=0.33)
    parser.add_argument("--ntvd-mentions", choices=["one", "advisory"], default="one")
    parser.add_argument("--basis-effect", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--basis-speakers", type=int, default=8, help="speakers per group")
    parser.add_argument("--basis-items", type=int, default=12)
    parser.add_argument("--no-raw-ntvd", action="store_true", help="skip the raw nTVD's permutation (before)")
    checks = ["counterfactual", "ntvd", "wer", "basis"]
    parser.add_argument("--checks", nargs="+", default=checks, choices=checks)
    parser.add_argument("--alpha", type=float, default=0.05, help="one-sided level (default 0.05)")
    parser.add_argument("--margin", type=float, default=0.0, help="worsening a regression must exceed")
    parser.add_argument(
        "--gate-rule", action="store_true",
        help="the gate's own rule: gate.alpha / (2 x 43) and each check's max_increase (counterfactual, ntvd only)",
    )  # fmt: skip
    args = parser.parse_args()
    started = time.perf_counter()
    margins = gate_margins() if args.gate_rule else {}
    alpha = gate_release_alpha() if args.gate_rule else args.alpha
    print(f"{VALUES} values, one-sided alpha {alpha:.3g}; counterfactual {SPEAKERS} speakers x {RECORDINGS} recordings")
    if "counterfactual" in args.checks:
        rule = ReleaseRule(alpha, margins.get("counterfactual", args.margin))
        print(f"margin {rule.margin:g}")
        counterfactual_rates(rule, args.pairs, args.effect, args.seed)
    if "ntvd" in args.checks:
        rule = ReleaseRule(alpha, margins.get("ntvd", args.margin))
        print(f"margin {rule.margin:g}")
        ntvd_rates(rule, args.pairs, args.ntvd_effect, args.seed, not args.no_raw_ntvd, args.ntvd_mentions)
    rule = ReleaseRule(alpha, args.margin)
    if "wer" in args.checks:
        wer_rates(rule, args.pairs, args.wer_effect, args.seed)
    if "basis" in args.checks:
        for effect in args.basis_effect:
            basis_rates(rule, args.pairs, effect, args.seed, args.basis_speakers, args.basis_items)
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
