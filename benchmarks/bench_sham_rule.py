"""The counterfactual sham arm's intersection-union rule at the gate's own settings (issues 57 item 5, 58 item 6).

A counterfactual case with a ``sham`` arm (the swap's size of change inside the source group) is decided against
both controls: the smaller effect of swap vs identity and swap vs sham, the larger of their p-values, beyond the bar
only when both are and in the same direction (:meth:`harness.checks.counterfactual.check.CounterfactualCheck._wer`,
``_vibe``; docs/statistics.md "Sham arm"). This bench simulates per-speaker answers on the four arms (``original``,
``identity``, ``sham``, ``swap``) and runs them through the check's own measure and the one decide step
(:func:`harness.checks.verdict.bias_decision`) at the gate's settings: the built-in thresholds' bar, 10,000 sign
flips (exact enumeration where 2^S <= B, as the test does), Bonferroni over one model's 43 cases at family-wise
alpha 0.05. Each seed is a fresh draw.

Designs (the demo corpus's): the paired ASR case, 13 female and 14 male speakers, 12 recordings of 8-20 words,
each recording's error rate ``0.15 + N(0, 0.05)`` per speaker and ``N(0, 0.03)`` per recording; a greedy
recogniser, each word's fate shared by the arms except for the 30% of words an arm's resynthesis redraws (points of
WER added per arm below); the VIBE case, the same speakers, one
attribute of 6 values, each recording's answer distribution Dirichlet(1), each arm's answer drawn from it.

Models, per arm (points of WER, or for VIBE the share of answers moved to one value):

* ``fair``: no voice effect; ``fair + resynthesis artefact``: every transformed arm (identity, sham, swap) degraded
  alike (+8 points; VIBE: 30% of answers moved to one value) - cancels in both controls;
* ``artefact only``: degrades under any large transform (sham and swap +20 points; VIBE 40% to one value), no group
  effect: against identity alone it is a "voice effect", the sham controls it, so it must not fail;
* ``biased``: the swap arm alone moves by the effect (points; VIBE: the share giving the direction's stereotyped
  value, scaled so that the systematic nTVD is the effect), at the bar, at the stated detectable effect (the median
  over the fair seeds of the deciding contrast's detectable effect at the corrected alpha) and at bar + detectable,
  with and without the ``artefact only`` transform artefact on sham and swap.

Printed per model: the share of seeds that fail, that are unmeasured (did not fail, and the design could not have
failed them) and that pass, with 95% Clopper-Pearson intervals, and the share in which some contrast's p reaches the
corrected alpha whatever its size ("significant": what the stated detectable effect claims, at least 75% at it).
Targets: fair and artefact-only fail <= 5%.

Then the same inputs' pathological forms through the decide step (zero words on an arm, one arm missing, a sham on
half the recordings, two speakers per direction): each must be unmeasured or not measured, never PASS. Two
degenerate inputs are measurements, not gaps: no error on any arm, or one value on every arm, from every speaker; no
speaker moves, the estimate is an exact zero and any effect of the bar's size would move every speaker, so they
pass.

Usage: ``python benchmarks/bench_sham_rule.py --seeds 200`` (``--kinds asr`` or ``vibe`` for one design;
``--seeds 20`` for a quick look).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np
import pandas as pd
from scipy.stats import beta

from harness.checks.case import Case
from harness.checks.counterfactual.check import CounterfactualCheck
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION, CounterfactualThresholds
from harness.checks.verdict import bias_decision
from harness.core.errors import CaseNotMeasured
from harness.metrics.multitest import DecisionRule
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, packaged_thresholds

DEMO_CASES = 43
"""The demo gate's bias cases per model (README)."""
SPEAKERS = {"female": 13, "male": 14}
"""The demo corpus's speakers per swap direction (harness/data/demo)."""
RECORDINGS = 12
VALUES = 6
STEREOTYPED = {"female": "v0", "male": "v5"}
ARTEFACT_VALUE = "v3"
ALL_ARMS_ARTEFACT = {"asr": 8.0, "vibe": 0.3}
LARGE_TRANSFORM_ARTEFACT = {"asr": 20.0, "vibe": 0.4}
REDRAWN = 0.3
"""The share of a recording's words whose recognition an arm's resynthesis redraws (the rest are shared by the arms,
as a greedy recogniser transcribes alike what sounds alike)."""


@dataclasses.dataclass(frozen=True)
class RuleOnly:
    """The part of a run's context the decide step reads: the gate's decision rule."""

    rule: DecisionRule

    def decision_rule(self, model: str) -> DecisionRule:
        return self.rule


@dataclasses.dataclass(frozen=True)
class ArmModel:
    """What each arm adds (WER points, or for VIBE a share of answers moved): ``all_arms`` to identity, sham and
    swap; ``large`` to sham and swap; ``effect`` to swap alone."""

    all_arms: float = 0.0
    large: float = 0.0
    effect: float = 0.0


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def speakers(per_direction: dict[str, int] = SPEAKERS) -> list[tuple[str, str]]:
    return [(f"{group[0]}{s:02d}", group) for group, count in per_direction.items() for s in range(count)]


def arm_shifts(model: ArmModel) -> dict[str, float]:
    return {
        "original": 0.0,
        "identity": model.all_arms,
        "sham": model.all_arms + model.large,
        "swap": model.all_arms + model.large + model.effect,
    }


def asr_table(rng: np.random.Generator, model: ArmModel, per_direction: dict[str, int] = SPEAKERS) -> pd.DataFrame:
    """The four arms' word errors (module docstring): columns ``speaker, recording, arm, source_group, errors,
    words``; each arm's rate is the recording's plus the arm's shift in points."""
    rows = []
    shifts = arm_shifts(model)
    for speaker, group in speakers(per_direction):
        speaker_rate = 0.15 + rng.normal(0.0, 0.05)
        for r in range(RECORDINGS):
            words = int(rng.integers(8, 21))
            rate = speaker_rate + rng.normal(0.0, 0.03)
            heard = rng.random(words)  # a greedy recogniser: each word's fate, shared by the arms ...
            for arm, shift in shifts.items():
                redrawn = rng.random(words) < REDRAWN  # ... but for the words a resynthesis changes
                fate = np.where(redrawn, rng.random(words), heard)
                errors = int(np.count_nonzero(fate < rate + shift / 100.0))
                rows.append((speaker, f"{speaker}-r{r}", arm, group, errors, words))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "errors", "words"])


def vibe_table(
    rng: np.random.Generator,
    model: ArmModel,
    per_direction: dict[str, int] = SPEAKERS,
    steady: bool = False,
    contents: np.ndarray | None = None,
) -> pd.DataFrame:
    """The four arms' answers (module docstring): columns ``speaker, recording, arm, source_group, attribute,
    value``; an arm's shift is the share of its answers moved to one value (the artefacts to ``v3``, the effect to
    the direction's stereotyped value). ``steady``: a greedy checkpoint, one draw per recording shared by its arms
    (a sampling one draws per arm); ``contents``: the recordings' answer distributions (speakers, recordings,
    values), shared by the two checkpoints of a release pair."""
    rows = []
    for index, (speaker, group) in enumerate(speakers(per_direction)):
        for r in range(RECORDINGS):
            content = rng.dirichlet(np.ones(VALUES)) if contents is None else contents[index, r]
            shared = f"v{rng.choice(VALUES, p=content)}"
            for arm in ("identity", "sham", "swap"):  # no original arm: its artifact measure is reported, never decides
                value = shared if steady else f"v{rng.choice(VALUES, p=content)}"
                artefact = (model.all_arms if arm != "original" else 0.0) + (
                    model.large if arm in ("sham", "swap") else 0.0
                )
                if arm == "swap" and rng.random() < model.effect:
                    value = STEREOTYPED[group]
                elif rng.random() < artefact:
                    value = ARTEFACT_VALUE
                rows.append((speaker, f"{speaker}-r{r}", arm, group, "occupation", value))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])


def vibe_share_for(ntvd: float) -> float:
    """The share of swap answers moved to the stereotyped value that makes the systematic nTVD ``ntvd``: a Dirichlet(1)
    content averages 1/6 on every value, so moving a share ``s`` gives a total variation of ``s (1 - 1/6)``."""
    return min(1.0, ntvd / 100.0 / (1.0 - 1.0 / VALUES))


@dataclasses.dataclass
class Outcome:
    failed: bool
    unmeasured: bool
    detectable: float | None
    estimate: float | None
    significant: bool = False
    """Some contrast's p reaches the corrected alpha, whatever its size (the detectable effect's claim)."""


def decide_case(kind: str, table: pd.DataFrame, settings: CounterfactualThresholds, rule: DecisionRule,
                seed: int) -> Outcome:  # fmt: skip
    """The check's own measure (:meth:`CounterfactualCheck._wer` or ``_vibe``) and the one decide step."""
    check = CounterfactualCheck()
    case = Case(check="counterfactual", model="m", corpus="demo", dimension="gender", variant=kind, id=f"m-{kind}")
    try:
        measure = check._wer if kind == "asr" else check._vibe
        contrasts, payload, _ = measure(table, settings, seed)
    except (CaseNotMeasured, ValueError):
        return Outcome(False, True, None, None)
    alpha = rule.corrected_alpha(len(contrasts))
    significant = any(c.p is not None and math.isfinite(c.p) and c.p <= alpha for c in contrasts)
    decision, block = bias_decision(RuleOnly(rule), case, contrasts, rule=settings.rule, statistic=kind)
    detectable = [c.detectable for c in block.contrasts]
    finite = [d for d in detectable if d is not None and math.isfinite(d)]
    worst = max(finite) if len(finite) == len(detectable) else math.inf
    return Outcome(bool(decision.failed), bool(block.untestable), worst, payload.get("deciding"), significant)


def models(kind: str, bar: float, detectable: float | None) -> dict[str, ArmModel]:
    scale = (lambda effect: effect) if kind == "asr" else vibe_share_for
    large, all_arms = LARGE_TRANSFORM_ARTEFACT[kind], ALL_ARMS_ARTEFACT[kind]
    chosen = {
        "fair": ArmModel(),
        "fair + resynthesis artefact (all transformed arms)": ArmModel(all_arms=all_arms),
        "artefact only (degrades under any large transform)": ArmModel(large=large),
    }
    if detectable is None:
        return chosen
    unit = "points" if kind == "asr" else "nTVD"
    for name, effect in (("bar", bar), ("stated detectable", detectable), ("bar + detectable", bar + detectable)):
        chosen[f"biased, effect = {name} ({effect:.1f} {unit})"] = ArmModel(effect=scale(effect))
        if name != "stated detectable" and (kind == "asr" or name != "bar"):
            chosen[f"biased + artefact only, effect = {name}"] = ArmModel(large=large, effect=scale(effect))
    return chosen


def run_kind(kind: str, seeds: int, settings: CounterfactualThresholds, rule: DecisionRule, seed: int) -> None:
    bar = settings.max_wer_difference if kind == "asr" else settings.max_ntvd
    simulate = asr_table if kind == "asr" else vibe_table
    design = ", ".join(f"{n} {g}" for g, n in SPEAKERS.items())
    print(f"\n{kind}: {design} speakers x {RECORDINGS} recordings; bar {bar:g}; {settings.n_permutations} sign flips; "
          f"corrected alpha {rule.corrected_alpha(1):.3g} ({rule.alpha:g} over {rule.family_size} cases); {seeds} seeds")  # fmt: skip
    print(f"{'model':<62} {'failed':>8} {'95% CI':>15} {'unmeasured':>11} {'passed':>8} {'significant':>12}")
    stated = None
    for stage in (0, 1):
        for name, model in models(kind, bar, stated).items():
            if stage == 1 and name in models(kind, bar, None):
                continue
            outcomes = [
                decide_case(kind, simulate(np.random.default_rng([seed, k]), model), settings, rule, k)
                for k in range(seeds)
            ]
            failed = sum(o.failed for o in outcomes)
            unmeasured = sum(o.unmeasured and not o.failed for o in outcomes)
            low, high = clopper_pearson(failed, seeds)
            print(f"{name:<62} {failed / seeds:>8.3f} [{low:.3f}, {high:.3f}] {unmeasured / seeds:>11.3f} "
                  f"{(seeds - failed - unmeasured) / seeds:>8.3f} {sum(o.significant for o in outcomes) / seeds:>12.3f}")  # fmt: skip
            if name == "fair":
                finite = [o.detectable for o in outcomes if o.detectable is not None and math.isfinite(o.detectable)]
                stated = float(np.median(finite)) if finite else None
                words = "none (unreachable)" if stated is None else f"{stated:.2f}"
                print(f"  stated detectable effect (median over the fair seeds): {words}")
        if stated is None:
            break


RELEASE_PAIRS = {
    # name: (candidate steady?, candidate effect, baseline steady?, baseline effect, candidate artefact)
    "noisy vs steady": (False, 0.0, True, 0.0, 0.0),
    "steady vs noisy": (True, 0.0, False, 0.0, 0.0),
    "noisy vs noisy": (False, 0.0, False, 0.0, 0.0),
    "noisy+effect vs steady+effect": (False, "equal", True, "equal", 0.0),
    "steady+effect vs noisy+effect": (True, "equal", False, "equal", 0.0),
    "noisy + artefact vs noisy (no group effect)": (False, 0.0, False, 0.0, "large"),
    "grown vs steady": (False, "grown", True, 0.0, 0.0),
    "grown vs noisy": (False, "grown", False, 0.0, 0.0),
}


def release_rates(pairs: int, settings: CounterfactualThresholds, gate: dict, seed: int) -> None:
    """The counterfactual release comparison (:meth:`CounterfactualCheck.compare`'s own functions: each control's
    per-speaker arm sums as the record keeps them, each checkpoint's effect beyond its arm-exchange null, the paired
    speaker bootstrap (:func:`harness.checks.counterfactual.release.excess_test`), the two controls' intersection-union
    (:func:`~harness.checks.counterfactual.release.intersection_union`) and the gate's rule:
    :func:`harness.checks.release.regression_comparison`, one-sided alpha 0.05 over a release run's 2 x 43 tests,
    the margin ``max_worsening``, a comparison that cannot detect twice its margin underpowered) on VIBE pairs of the
    demo design: ``steady`` greedy, ``noisy`` sampling; ``effect``: both carry the same systematic effect (the bar's
    nTVD); ``grown``: the candidate's effect is the bar's nTVD, the baseline has none; ``artefact``: the candidate
    degrades under any large transform (sham and swap), the baseline does not. Each pair is judged against identity
    alone (the rule before the sham reached the release) and against both controls (now)."""
    from harness.checks.counterfactual.release import excess_test, intersection_union
    from harness.checks.counterfactual.settings import SHAM, SWAP, VIBE
    from harness.checks.release import regression_comparison
    from harness.metrics.counterfactual import speaker_arm_sums

    rule = DecisionRule(
        alpha=gate["alpha"], family_size=2 * DEMO_CASES, correction=gate["correction"], tests_per_case=2
    )
    case = Case(check="counterfactual", model="m", corpus="demo", dimension="gender", variant="story", id="m-story")
    effect = vibe_share_for(settings.max_ntvd)
    sizes = {0.0: 0.0, "equal": effect, "grown": effect}
    print(f"\nrelease (counterfactual VIBE, demo design): {pairs} simulated pairs; margin {settings.max_worsening:g}; "
          f"one-sided alpha {rule.corrected_alpha(1):.3g} ({rule.alpha:g} over {rule.family_size} tests); effect "
          f"share {effect:.3f} (nTVD {settings.max_ntvd:g})")  # fmt: skip
    print(
        f"{'pair':<44} {'controls':<18} {'judged worse':>12} {'95% CI':>15} {'underpowered':>13} {'not estimable':>14}"
    )
    rules = ("identity (before)", "identity and sham")
    counts = {
        (name, r): {"regressed": 0, "underpowered": 0, "not estimable": 0} for name in RELEASE_PAIRS for r in rules
    }
    for pair in range(pairs):
        rng = np.random.default_rng([seed, 7, pair])
        contents = rng.dirichlet(np.ones(VALUES), size=(sum(SPEAKERS.values()), RECORDINGS))
        for name, (c_steady, c_effect, b_steady, b_effect, artefact) in RELEASE_PAIRS.items():
            large = LARGE_TRANSFORM_ARTEFACT["vibe"] if artefact else 0.0
            candidate = vibe_table(rng, ArmModel(large=large, effect=sizes[c_effect]), steady=c_steady,
                                   contents=contents)  # fmt: skip
            baseline = vibe_table(rng, ArmModel(effect=sizes[b_effect]), steady=b_steady, contents=contents)
            identity = [speaker_arm_sums(table, "vibe") for table in (candidate, baseline)]
            sham = [speaker_arm_sums(table, "vibe", (SHAM, SWAP)) for table in (candidate, baseline)]
            test = excess_test(identity, VIBE, settings.tau, pair)
            tests = {rules[0]: test, rules[1]: intersection_union(test, excess_test(sham, VIBE, settings.tau, pair,
                                                                                    (SHAM, SWAP)))}  # fmt: skip
            for controls, judged in tests.items():
                comparison = regression_comparison(
                    RuleOnly(rule), case, judged, measure="nTVD excess", margin=settings.max_worsening,
                    margin_key="max_worsening",
                )  # fmt: skip
                tally = counts[(name, controls)]
                tally["regressed"] += bool(comparison.regressed)
                tally["underpowered"] += comparison.status == "underpowered"
                tally["not estimable"] += comparison.status == "not estimable"
    for (name, controls), tally in counts.items():
        low, high = clopper_pearson(tally["regressed"], pairs)
        print(f"{name:<44} {controls:<18} {tally['regressed'] / pairs:>12.3f} [{low:.3f}, {high:.3f}] "
              f"{tally['underpowered'] / pairs:>13.3f} {tally['not estimable'] / pairs:>14.3f}")  # fmt: skip


def pathological(settings: CounterfactualThresholds, rule: DecisionRule) -> None:
    """Degenerate inputs through the measure and the decide step: none may PASS."""
    print(
        "\npathological inputs (unmeasured or not measured, never PASS; but a measured zero - no error or one value on"
        " every arm, with every speaker - whose design could have failed it, passes):"
    )
    rng = np.random.default_rng(0)
    cases = {
        "asr, every word count zero on the sham arm": ("asr", _with(asr_table(rng, ArmModel()), "sham", words=0)),
        "asr, every error zero on every arm": ("asr", asr_table(rng, ArmModel()).assign(errors=0)),
        "asr, no sham arm and no swap arm": ("asr", _without(asr_table(rng, ArmModel()), "swap")),
        "asr, two speakers per direction": ("asr", asr_table(rng, ArmModel(effect=30.0), {"female": 2, "male": 2})),
        "asr, sham on half the recordings only": ("asr", _half_sham(asr_table(rng, ArmModel(effect=30.0)))),
        "vibe, two speakers per direction": ("vibe", vibe_table(rng, ArmModel(effect=0.5), {"female": 2, "male": 2})),
        "vibe, one value only on every arm": ("vibe", vibe_table(rng, ArmModel()).assign(value="v0")),
        "vibe, the swap arm only": ("vibe", _only(vibe_table(rng, ArmModel()), "swap")),
    }
    for name, (kind, table) in cases.items():
        outcome = decide_case(kind, table, settings, rule, 1)
        verdict = "FAIL" if outcome.failed else "unmeasured" if outcome.unmeasured else "PASS"
        print(f"  {name}: {verdict}")


def _with(table: pd.DataFrame, arm: str, **values) -> pd.DataFrame:
    table = table.copy()
    for column, value in values.items():
        table.loc[table["arm"] == arm, column] = value
    if "words" in values:
        table.loc[table["arm"] == arm, "errors"] = 0
    return table


def _without(table: pd.DataFrame, *arms: str) -> pd.DataFrame:
    return table[~table["arm"].isin(["sham", *arms])].reset_index(drop=True)


def _only(table: pd.DataFrame, arm: str) -> pd.DataFrame:
    return table[table["arm"] == arm].reset_index(drop=True)


def _half_sham(table: pd.DataFrame) -> pd.DataFrame:
    recordings = sorted(table["recording"].unique())[::2]
    return table[(table["arm"] != "sham") | table["recording"].isin(recordings)].reset_index(drop=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", choices=("asr", "vibe"), default=["asr", "vibe"])
    parser.add_argument("--pairs", type=int, default=200, help="simulated release pairs (0: none)")
    parser.add_argument("--parts", nargs="+", choices=("absolute", "release"), default=["absolute", "release"])
    args = parser.parse_args(argv)
    thresholds = packaged_thresholds()
    settings = thresholds.settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    gate = thresholds.values(GATE_SECTION, GATE_SCHEMA, None, "gender")
    rule = DecisionRule(alpha=gate["alpha"], family_size=DEMO_CASES, correction=gate["correction"])
    started = time.perf_counter()
    if "absolute" in args.parts:
        for kind in args.kinds:
            run_kind(kind, args.seeds, settings, rule, args.seed)
        pathological(settings, rule)
    if "release" in args.parts and args.pairs:
        release_rates(args.pairs, settings, gate, args.seed)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
