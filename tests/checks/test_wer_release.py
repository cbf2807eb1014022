"""The WER-ratio release comparison on the row that decides the case (issue 58, item 1; semantic-aware mixed-effects
paper §IV): a joint fit of both checkpoints with a checkpoint x group interaction and each one's own semantic
covariates, on simulated tables whose truth is known (:func:`harness.metrics.simulation.simulate_release_pair`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from harness.checks.case import Case
from harness.checks.semantic_aware.record import RatioRecord
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.checks.wer_ratio.check import WerRatioCheck
from harness.checks.wer_ratio.release import COVARIATE_PREFIX, DECIDING_MEASURE, UTTERANCE_COLUMNS, speaker_sums
from harness.metrics.multitest import DecisionRule
from harness.metrics.simulation import simulate_release_pair
from harness.metrics.wer_release import ratio_interaction

CASE = Case(check="wer_ratio", model="m", corpus="demo", dimension="gender", variant=None, id="m-demo-gender")


@dataclasses.dataclass
class Context:
    """What a baseline comparison reads: thresholds, a seed and the gate's decision rule (one case, alpha 0.05)."""

    thresholds: object
    seed: int = 0
    permutations: int = 99

    def decision_rule(self, model: str) -> DecisionRule:
        return DecisionRule(alpha=0.05, family_size=1)


@dataclasses.dataclass
class Margin:
    """Thresholds at the check's defaults with the release margin ``max_worsening`` set."""

    margin: float

    def values(self, check, schema, variant, dimension):
        return schema.defaults() | {"max_worsening": self.margin}


def context(margin: float = 0.15) -> Context:
    return Context(Margin(margin))


def record(table: pd.DataFrame, covariates: tuple[str, ...] = ("x_pc1",), per_speaker: bool = False) -> RatioRecord:
    """A WER-ratio record whose ``paired_data`` is the table's utterances (as a run writes them), or its per-speaker
    sums (as a results.json written before the deciding-row comparison)."""
    data = {
        "utterance": [f"u{k:05d}" for k in range(len(table))],
        "speaker": table["speaker"].tolist(),
        "group": table["group"].tolist(),
        **{c: table[c].astype(int).tolist() for c in UTTERANCE_COLUMNS[3:]},
        **{COVARIATE_PREFIX + c: table[c].astype(float).tolist() for c in covariates},
    }
    if per_speaker:
        sums = speaker_sums(data)
        data = {"speaker": list(sums.index), **sums.to_dict("list")}
    return RatioRecord(
        check="wer_ratio", id=CASE.id, model="m", model_fingerprint="m@1", corpus="demo", dimension="gender",
        variant=None, value=1.0, threshold=RatioThresholds(), passed=True, message="ok", ci=[0.9, 1.1], p=None,
        q=None, comparisons=[], semantics={}, paired_data=data,
    )  # fmt: skip


def compare(candidate: RatioRecord, baseline: RatioRecord, margin: float = 0.15):
    return WerRatioCheck().compare(context(margin), CASE, candidate, baseline)


@pytest.fixture(scope="module")
def confounded():
    """The candidate's errors grow on hard content (difficulty effect 0.3 -> 1.2), which group F reads more of; no
    voice effect in either checkpoint (true change of the deciding ratio 0)."""
    return simulate_release_pair(3, n_speakers=40, utterances_per_speaker=40)


def test_content_confounded_growth_regresses_the_vanilla_ratio_but_not_the_deciding_row(confounded):
    assert confounded.true_delta == 0.0
    vanilla = compare(record(confounded.candidate, per_speaker=True), record(confounded.baseline, per_speaker=True))
    assert vanilla.regressed and vanilla.delta > 0.5
    assert "DEVIATION: not the deciding row" in vanilla.measure and "DEVIATION" in vanilla.message
    deciding = compare(record(confounded.candidate), record(confounded.baseline))
    assert deciding.measure == DECIDING_MEASURE and "DEVIATION" not in deciding.message
    assert deciding.status == "compared" and not deciding.regressed
    assert abs(deciding.delta) < 0.1 and deciding.p_value > 0.05


def test_a_baseline_without_utterance_rows_falls_back_to_the_vanilla_ratio_named_as_a_deviation(confounded):
    comparison = compare(record(confounded.candidate), record(confounded.baseline, per_speaker=True))
    assert comparison.measure.startswith("largest |log WER ratio| (vanilla, one-vs-rest) beyond group exchange")
    assert "the baseline record carries no per-utterance rows" in comparison.measure
    assert comparison.message.endswith("rerun it)]")


def test_a_true_checkpoint_by_group_growth_is_caught():
    pair = simulate_release_pair(5, n_speakers=40, utterances_per_speaker=40, group_effect_candidate=0.8)
    assert pair.true_delta > 0.5
    interaction = ratio_interaction(
        pair.candidate, pair.baseline, numerator="F", denominator="M", candidate_covariates=pair.covariates,
        baseline_covariates=pair.covariates,
    )  # fmt: skip
    assert abs(interaction.delta - pair.true_delta) < 3 * interaction.se
    comparison = compare(record(pair.candidate), record(pair.baseline))
    assert comparison.status == "compared" and comparison.regressed
    assert comparison.delta == pytest.approx(interaction.worsening) and comparison.delta > 0.15
    assert comparison.decision.detectable < 0.3 and comparison.decision.powered


def test_a_comparison_that_cannot_detect_twice_its_margin_is_underpowered(confounded):
    comparison = compare(record(confounded.candidate), record(confounded.baseline), margin=0.02)
    assert comparison.status == "underpowered" and not comparison.regressed
    assert comparison.decision.detectable > 0.04
    # (t_{0.95, df} + t_{0.8, df}) se, the Wald shift at 80% power and the corrected alpha
    from scipy import stats

    df, se = comparison.decision.df, comparison.decision.se
    assert comparison.decision.detectable == pytest.approx((stats.t.isf(0.05, df) + stats.t.isf(0.2, df)) * se)


def test_other_utterances_make_the_comparison_unsupported(confounded):
    baseline = record(confounded.baseline)
    baseline.paired_data["utterance"] = [f"v{k}" for k in range(len(confounded.baseline))]
    assert compare(record(confounded.candidate), baseline).status == "unsupported"


def test_the_interaction_is_the_difference_of_the_cell_wer_ratios_when_the_model_is_saturated():
    """Hand-computed case: without covariates and without speaker variance the joint model is saturated in the four
    (checkpoint, group) cells, so each checkpoint's expected-WER ratio is the ratio of its cells' corpus WERs, and the
    interaction their log difference (up to the speaker SD the fit finds by chance)."""
    pair = simulate_release_pair(
        11, n_speakers=30, utterances_per_speaker=30, sigma=0.0, confounding=0.0, difficulty_baseline=0.0,
        difficulty_candidate=0.0, group_effect_candidate=0.3,
    )  # fmt: skip
    result = ratio_interaction(pair.candidate, pair.baseline, numerator="F", denominator="M")

    def log_ratio(table):
        errors = table["insertions"] + table["deletions"] + table["substitutions"]
        wer = errors.groupby(table["group"]).sum() / table["n_ref_words"].groupby(table["group"]).sum()
        return math.log(wer["F"] / wer["M"])

    assert result.converged
    assert result.log_ratio_candidate == pytest.approx(log_ratio(pair.candidate), abs=5e-3)
    assert result.log_ratio_baseline == pytest.approx(log_ratio(pair.baseline), abs=5e-3)
    assert result.delta == pytest.approx(log_ratio(pair.candidate) - log_ratio(pair.baseline), abs=5e-3)


def test_the_direction_follows_the_mean_ratio_and_a_flip_to_the_other_group_is_no_worsening():
    """Equal bias flipped to the other group: the interaction is large, the magnitude change is not."""
    pair = simulate_release_pair(
        13, n_speakers=40, utterances_per_speaker=30, confounding=0.0, group_effect_baseline=0.5,
        group_effect_candidate=-0.5,
    )  # fmt: skip
    result = ratio_interaction(pair.candidate, pair.baseline, numerator="F", denominator="M")
    assert result.delta < -0.5 and abs(result.worsening) < 0.2
    comparison = compare(record(pair.candidate, ()), record(pair.baseline, ()))
    assert not comparison.regressed


def test_three_groups_compare_each_group_with_the_rest():
    pair = simulate_release_pair(17, n_speakers=30, utterances_per_speaker=20, group_effect_candidate=0.6)
    relabel = {f"s{k:03d}": ("F", "M", "X")[k % 3] for k in range(30)}
    tables = [t.assign(group=t["speaker"].map(relabel)) for t in (pair.candidate, pair.baseline)]
    np.testing.assert_array_equal(tables[0]["group"], tables[1]["group"])
    comparison = WerRatioCheck().compare(
        context(0.15), dataclasses.replace(CASE, dimension="accent"), record(tables[0]), record(tables[1])
    )
    assert comparison.measure.startswith("largest ") and comparison.measure.endswith("one group vs the rest")
    assert comparison.status in ("compared", "underpowered")
