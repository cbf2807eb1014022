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
    .venv/bin/python benchmarks/bench_wer_release.py --gate-rule 200 --design demo [--measures wer score]

``--gate-rule N`` measures the release at the gate's own rule (:func:`gate_rule_rates`): N pairs per scenario of
fair/fair pairs with a speaker effect shared by both checkpoints or checkpoint-specific (SD 0.3), the candidate's
residual noise larger or smaller than the baseline's, equal non-zero group effects under both noise shifts (no
regression expected), and a grown effect (caught), on the demo design (27 speakers x 12 utterances) or CREMA-D's
size (``--design cremad``, 91 x 82).
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


def null_rates(replicates: int, speaker_checkpoint_sd: float, seed: int, measures=("wer", "score")) -> None:
    """Rejection rates at one-sided 0.05 under no change of the voice effect (``--null``; ``--measures score`` for
    the judge-score ratio alone)."""
    for sd in (0.0, speaker_checkpoint_sd) if "wer" in measures else ():
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
    for sd in (0.0, speaker_checkpoint_sd) if "score" in measures else ():
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


DESIGNS = {"demo": (27, 12), "cremad": (91, 82)}
"""Speakers and utterances per speaker: the demo corpus's (27 x 12 = 324; 13 F, 14 M) and CREMA-D's size (91 x 82 =
7,462 utterances, about its 7,442)."""
DEMO_CASES = 43

WER_SCENARIOS = {
    # name: simulate_release_pair keywords beyond the content-confounded defaults (no voice effect)
    "fair/fair, speaker effect shared": {},
    "fair/fair, checkpoint-specific speaker SD 0.3": {"speaker_checkpoint_sd": 0.3},
    "fair/fair, candidate noisier (utterance SD 0.5 vs 0)": {"utterance_sd_candidate": 0.5},
    "fair/fair, candidate steadier (utterance SD 0 vs 0.5)": {"utterance_sd_baseline": 0.5},
    "equal effects (log 0.3), candidate noisier": {
        "group_effect_candidate": 0.3, "group_effect_baseline": 0.3, "utterance_sd_candidate": 0.5},
    "equal effects (log 0.3), candidate steadier": {
        "group_effect_candidate": 0.3, "group_effect_baseline": 0.3, "utterance_sd_baseline": 0.5},
    "grown (log 0 -> 0.4, x1.5)": {"group_effect_candidate": 0.4},
}  # fmt: skip
SCORE_SCENARIOS = {
    "fair/fair, speaker effect shared": {},
    "fair/fair, checkpoint-specific speaker SD 0.3": {"speaker_checkpoint_sd": 0.3},
    "fair/fair, candidate noisier (residual SD 1.2 vs 0.8)": {"residual_sd_candidate": 1.2},
    "fair/fair, candidate steadier (residual SD 0.4 vs 0.8)": {"residual_sd_candidate": 0.4},
    "equal effects (-0.4 points), candidate noisier": {
        "group_effect_candidate": -0.4, "group_effect_baseline": -0.4, "residual_sd_candidate": 1.2},
    "equal effects (-0.4 points), candidate steadier": {
        "group_effect_candidate": -0.4, "group_effect_baseline": -0.4, "residual_sd_candidate": 0.4},
    "grown (0 -> -0.65 points, log ratio about -0.1)": {"group_effect_candidate": -0.65},
}  # fmt: skip


def gate_rule_rates(measure: str, design: str, pairs: int, seed: int) -> None:
    """The deciding-row release comparison at the gate's rule (``--gate-rule``): per scenario, ``pairs`` simulated
    pairs through the comparison's own steps (:func:`ratio_interaction` or :func:`score_ratio_interaction`,
    :func:`harness.checks.wer_ratio.release.interaction_test`, :func:`harness.checks.release.regression_comparison`
    at one-sided alpha 0.05 over a release run's 2 x 43 tests, the margin ``max_worsening`` and the detectable-
    worsening rule that makes a comparison that cannot detect twice its margin underpowered). Printed: the share
    judged worse (95% Clopper-Pearson), underpowered and not estimable, and the share with one-sided p <= 0.05."""
    from scipy.stats import beta

    from harness.checks.case import Case
    from harness.checks.release import regression_comparison
    from harness.checks.semantic_aware.thresholds import RatioThresholds
    from harness.checks.wer_ratio.release import interaction_test
    from harness.metrics.multitest import DecisionRule

    margin = float(RatioThresholds().max_worsening)
    rule = DecisionRule(alpha=0.05, family_size=2 * DEMO_CASES, tests_per_case=2)
    context = _RuleOnly(rule)
    case = Case(check=f"{measure}_ratio", model="m", corpus="demo", dimension="gender", variant=design, id="m")
    speakers, per_speaker = DESIGNS[design]
    scenarios = WER_SCENARIOS if measure == "wer" else SCORE_SCENARIOS
    print(f"{measure} ratio, deciding row, {design} design ({speakers} speakers x {per_speaker} utterances): {pairs} "
          f"simulated pairs; one-sided alpha {rule.corrected_alpha(1):.3g} (0.05 over {rule.family_size} tests); "
          f"margin {margin:g}")  # fmt: skip
    print(f"{'pair':<52} {'judged worse':>12} {'95% CI':>15} {'underpowered':>13} {'not estimable':>14} {'p<=0.05':>8}")
    started = time.perf_counter()
    for name, keywords in scenarios.items():
        tally = {"regressed": 0, "underpowered": 0, "not estimable": 0, "p05": 0}
        for k in range(pairs):
            if measure == "wer":
                pair = simulate_release_pair(seed + k, n_speakers=speakers, utterances_per_speaker=per_speaker,
                                             **keywords)  # fmt: skip
                contrast = ratio_interaction(pair.candidate, pair.baseline, numerator="F", denominator="M",
                                             candidate_covariates=pair.covariates,
                                             baseline_covariates=pair.covariates)  # fmt: skip
            else:
                candidate, baseline = simulate_score_release_pair(seed + k, n_speakers=speakers, replies=per_speaker,
                                                                  **keywords)  # fmt: skip
                contrast = score_ratio_interaction(candidate, baseline, numerator="F", denominator="M",
                                                   candidate_covariates=["x_pc1"],
                                                   baseline_covariates=["x_pc1"])  # fmt: skip
            comparison = regression_comparison(
                context, case, interaction_test([contrast]), measure="deciding row", margin=margin,
                margin_key="max_worsening",
            )  # fmt: skip
            tally["regressed"] += bool(comparison.regressed)
            tally["underpowered"] += comparison.status == "underpowered"
            tally["not estimable"] += comparison.status == "not estimable"
            tally["p05"] += bool(contrast.p <= 0.05)
        count = tally["regressed"]
        low = beta.ppf(0.025, count, pairs - count + 1) if count else 0.0
        high = beta.ppf(0.975, count + 1, pairs - count) if count < pairs else 1.0
        print(f"{name:<52} {count / pairs:>12.3f} [{low:.3f}, {high:.3f}] {tally['underpowered'] / pairs:>13.3f} "
              f"{tally['not estimable'] / pairs:>14.3f} {tally['p05'] / pairs:>8.3f}")  # fmt: skip
    print(f"{measure} {design}: {time.perf_counter() - started:.0f} s")


class _RuleOnly:
    def __init__(self, rule):
        self.rule = rule

    def decision_rule(self, model: str):
        return self.rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--null", type=int, default=0, help="replicates of the level study (0: the timing)")
    parser.add_argument("--speaker-checkpoint-sd", type=float, default=0.2)
    parser.add_argument("--gate-rule", type=int, default=0, help="pairs per scenario at the gate's rule (0: none)")
    parser.add_argument("--design", choices=sorted(DESIGNS), default="demo")
    parser.add_argument("--measures", nargs="+", choices=("wer", "score"), default=["wer", "score"])
    parser.add_argument("--wer-pairs", type=int, default=None, help="--gate-rule pairs for the WER ratio (its joint "
                        "GLMM fit takes about 30 s at CREMA-D's size on a loaded machine); default: --gate-rule's")  # fmt: skip
    args = parser.parse_args()
    if args.gate_rule:
        for measure in args.measures:
            pairs = args.wer_pairs if measure == "wer" and args.wer_pairs else args.gate_rule
            gate_rule_rates(measure, args.design, pairs, args.seed)
        return
    if args.null:
        null_rates(args.null, args.speaker_checkpoint_sd, args.seed, args.measures)
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
