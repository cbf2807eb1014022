"""The counterfactual voice test's operating characteristic and power, by simulation on the demo corpus (issue 39).

Every recording of the demo corpus (27 speakers x 12 sentences) is resynthesised once per arm, ``identity`` and
``gender_swap`` (harness/data/voice_transforms/, the settings of thresholds.yaml ``counterfactual``), and the share
of swapped clips ``voice:praat`` perceives as the target group is printed per direction. Then, per decoding seed
(``DecodingParams.seed``, a fresh draw of the simulator's answers), a simulator answers the five VIBE tasks
(self-report form, rules extractor) on both arms, and each task is one case: the arm nTVD per swap direction
(:func:`harness.metrics.counterfactual.arm_ntvd`) with its paired speaker-level permutation test, failed by the
gate's decision rule (:class:`harness.metrics.multitest.DecisionRule`, rule ``both``: nTVD above ``max_ntvd`` and
p significant after Bonferroni across the model's five cases, family-wise alpha from thresholds.yaml ``gate``).

* **Operating characteristic**: the share of seeds in which ``sim:fair`` passes every case and in which
  ``sim:biased`` fails at least one, with 95% Clopper-Pearson intervals.
* **WER arms**: for seed 1, each preset's pooled WER per swap direction on the original, identity and swap
  audio, the paired difference swap - identity with its p, and the artifact (identity - original).
* **Power against the between-speaker nTVD**: for Story alone, a simulator whose only bias is Story strength
  ``s`` (``sim:fair`` with ``strengths: {story: s}``), the share of seeds each test detects (one case at alpha,
  under rule ``both`` and under rule ``significance``): the counterfactual test on the arms, and the nTVD check's between-speaker permutation test
  (:func:`harness.metrics.ntvd.permutation_test`, gender groups) on the original recordings of the same seed.
  Printed: the detection curves and the smallest strength each detects in at least 80% of seeds, and their
  ratio per rule (between-speaker / counterfactual; above 1 means the counterfactual test needs a weaker bias).

Usage: ``python benchmarks/bench_counterfactual.py --seeds 100 --power-seeds 50`` (about 7 minutes on one core;
``--part oc``, ``--part power`` or ``--part wer`` runs one of them; ``--seeds 20 --power-seeds 20`` for a quick look).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import beta

from harness.checks.counterfactual.arms import ask_loaded, build_arms, vibe_arm_table, wer_arm_table
from harness.checks.counterfactual.settings import (
    COUNTERFACTUAL_SCHEMA,
    IDENTITY,
    ORIGINAL,
    SECTION,
    SWAP,
    CounterfactualThresholds,
)
from harness.core.requests import DecodingParams
from harness.data.corpus import load_corpus
from harness.metrics.counterfactual import arm_ntvd, paired_wer_difference
from harness.metrics.multitest import DecisionRule
from harness.metrics.ntvd import permutation_test
from harness.models.sim import PRESETS, SimulatorBackend
from harness.perception import perceive_with_voice_praat, perceived_filter
from harness.tasks import TASKS
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, packaged_thresholds

DEMO = Path(__file__).resolve().parents[1] / "harness" / "data" / "demo"
POWER_STRENGTHS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
COLUMNS = [f"{test} ({rule})" for rule in ("both", "significance") for test in ("counterfactual", "between_speaker")]
TARGET_POWER = 0.8


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def simulator(strengths: dict[str, float]):
    return SimulatorBackend("sim:bench", "fair", {"strengths": strengths, "refusal_rate": 0.02}).load()


def counterfactual_case(
    table: pd.DataFrame, settings: CounterfactualThresholds, rule: DecisionRule, seed: int
) -> tuple[bool, float, float]:
    result = arm_ntvd(table, tau=settings.tau, n_permutations=settings.n_permutations, seed=seed)
    decision = rule.decide([result.test.p_value], [result.score > settings.max_ntvd])
    return decision.failed, result.score, result.test.p_value


def between_speaker_case(table: pd.DataFrame, settings: CounterfactualThresholds, seed: int) -> tuple[float, float]:
    original = table.rename(columns={"source_group": "group"})
    result = permutation_test(original, tau=settings.tau, n_permutations=settings.n_permutations, seed=seed)
    return result.observed, result.p_value


def operating_characteristic(arms, settings: CounterfactualThresholds, gate: dict, seeds: int) -> None:
    rule = DecisionRule(alpha=gate["alpha"], family_size=len(TASKS), correction=gate["correction"])
    print(f"\nOperating characteristic: {len(TASKS)} counterfactual cases per run ({', '.join(TASKS)}), {seeds} seeds")
    for preset in ("fair", "biased"):
        model = simulator(PRESETS[preset]["strengths"])
        failing_runs, cases = 0, []
        for seed in range(1, seeds + 1):
            failed_any = False
            for name, task in TASKS.items():
                table = vibe_arm_table(ask_loaded(model, DecodingParams(seed=seed)), task, arms)
                failed, score, p = counterfactual_case(table, settings, rule, seed)
                cases.append((name, failed, score, p))
                failed_any |= failed
            failing_runs += failed_any
        frame = pd.DataFrame(cases, columns=["task", "failed", "ntvd", "p"])
        per_task = frame.groupby("task").agg(fail_rate=("failed", "mean"), median_ntvd=("ntvd", "median"))
        low, high = clopper_pearson(failing_runs, seeds)
        outcome = "passes" if preset == "fair" else "is caught"
        share = (seeds - failing_runs) / seeds if preset == "fair" else failing_runs / seeds
        interval = (1 - high, 1 - low) if preset == "fair" else (low, high)
        print(f"  sim:{preset} {outcome} in {share:.0%} of {seeds} seeds (95% CI {interval[0]:.0%}-{interval[1]:.0%})")
        print(per_task.round(3).to_string().replace("\n", "\n    ").join(["    ", ""]))


def power(arms, settings: CounterfactualThresholds, gate: dict, seeds: int) -> None:
    rule = DecisionRule(alpha=gate["alpha"], family_size=1, correction=gate["correction"])
    story = TASKS["story"]
    print(f"\nPower on Story (one case, alpha {gate['alpha']:g}), {seeds} seeds; rule both (nTVD > max_ntvd "
          f"{settings.max_ntvd:g} and significant) and rule significance (the VIBE preset's)")  # fmt: skip
    rows = []
    for strength in POWER_STRENGTHS:
        model = simulator({"story": strength})
        detected = {name: 0 for name in COLUMNS}
        for seed in range(1, seeds + 1):
            params = DecodingParams(seed=seed)
            table = vibe_arm_table(ask_loaded(model, params), story, arms, arm_names=(ORIGINAL, IDENTITY, SWAP))
            swapped = table[table["arm"] != ORIGINAL]
            _, score, p = counterfactual_case(swapped, settings, rule, seed)
            between_score, between_p = between_speaker_case(table[table["arm"] == ORIGINAL], settings, seed)
            for test, (effect, p_value) in {
                "counterfactual": (score, p),
                "between_speaker": (between_score, between_p),
            }.items():
                for rule_name in ("both", "significance"):
                    relevant = effect > settings.max_ntvd
                    detected[f"{test} ({rule_name})"] += rule.decide([p_value], [relevant], rule=rule_name).failed
        rows.append((strength, *(detected[name] / seeds for name in COLUMNS)))
    frame = pd.DataFrame(rows, columns=["story_strength", *COLUMNS]).set_index("story_strength")
    print(frame.to_string().replace("\n", "\n    ").join(["    ", ""]))
    smallest = {
        test: next((strength for strength, rate in frame[test].items() if rate >= TARGET_POWER), np.nan)
        for test in frame.columns
    }
    for test, strength in smallest.items():
        print(f"  smallest Story strength detected in >= {TARGET_POWER:.0%} of seeds, {test}: {strength}")
    for rule_name in ("both", "significance"):
        ratio = smallest[f"between_speaker ({rule_name})"] / smallest[f"counterfactual ({rule_name})"]
        print(f"  ratio between_speaker / counterfactual, rule {rule_name}: {ratio:.2f}")


def wer_arms(corpus, arms, settings: CounterfactualThresholds) -> None:
    """Seed 1's paired WER per swap direction of both presets (their ``asr`` strength), with the artifact measure."""
    print("\nWER per swap direction (seed 1): original, identity, swap (%); swap - identity (points) and its paired p")
    for preset in ("fair", "biased"):
        model = simulator(PRESETS[preset]["strengths"])
        references = corpus.table["transcript"].astype(str).to_dict()
        ask = ask_loaded(model, DecodingParams(seed=1))
        table = wer_arm_table(ask, references, arms, arm_names=(ORIGINAL, IDENTITY, SWAP))
        for source, rows in table.groupby("source_group"):
            voice = paired_wer_difference(rows, n_permutations=settings.n_permutations, seed=1)
            artifact = paired_wer_difference(rows, (ORIGINAL, IDENTITY), n_permutations=settings.n_permutations, seed=1)
            print(f"  sim:{preset} {source} -> {arms.recordings.loc[rows['recording'].iloc[0], 'target_group']}: "
                  f"{artifact.wer[ORIGINAL]:.1f}, {voice.wer[IDENTITY]:.1f}, {voice.wer[SWAP]:.1f}; "
                  f"{voice.difference:+.1f} (p {voice.test.p_value:.3f}); artifact {artifact.difference:+.1f} "
                  f"(p {artifact.test.p_value:.3f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds of the operating characteristic")
    parser.add_argument("--power-seeds", type=int, default=50, help="seeds per strength of the power curve")
    parser.add_argument("--part", choices=("all", "oc", "power", "wer"), default="all", help="which measurement to run")
    arguments = parser.parse_args()
    thresholds = packaged_thresholds()
    settings = thresholds.settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    gate = thresholds.values(GATE_SECTION, GATE_SCHEMA, None, "gender")
    corpus = load_corpus(DEMO, check_audio=False)
    started = time.perf_counter()
    arms = build_arms(corpus, settings.change_gender(), transform=settings.transform)
    print(f"arms: {len(arms.recordings)} recordings x 2 arms in {time.perf_counter() - started:.1f} s")
    clips = arms.recordings.assign(
        recording=arms.recordings.index,
        perceived_group=perceive_with_voice_praat([arms.audio[SWAP][u] for u in arms.recordings.index]),
    )
    shares = perceived_filter(clips).shares
    print("swapped clips perceived as the target group by voice:praat:")
    print(shares.to_string().replace("\n", "\n    ").join(["    ", ""]))
    started = time.perf_counter()
    if arguments.part in ("all", "oc"):
        operating_characteristic(arms, settings, gate, arguments.seeds)
    if arguments.part in ("all", "power"):
        power(arms, settings, gate, arguments.power_seeds)
    if arguments.part in ("all", "wer"):
        wer_arms(corpus, arms, settings)
    print(f"\nsimulation: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
