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
from harness.display.decisions import release_test
from harness.metrics.multitest import DecisionRule
from harness.metrics.simulation import simulate_release_pair, simulate_score_release_pair
from harness.metrics.wer_release import ratio_interaction
from harness.records import BaselineComparison

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
    method: str = "semantic"

    def values(self, check, schema, variant, dimension):
        return schema.defaults() | {"max_worsening": self.margin, "method": self.method}


def context(margin: float = 0.15, method: str = "semantic") -> Context:
    return Context(Margin(margin, method))


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
    return ratio_record(data)


def ratio_record(data: dict, check: str = "wer_ratio") -> RatioRecord:
    return RatioRecord(
        check=check, id=CASE.id, model="m", model_fingerprint="m@1", corpus="demo", dimension="gender",
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
    # every surface: the terminal's and report's release test (its measure), results.json's baseline block
    assert "DEVIATION: not the deciding row" in release_test(vanilla).detail
    written = BaselineComparison.of(vanilla, "released.json", "m").to_json()
    assert "DEVIATION" in written["measure"] and "DEVIATION" in written["message"]
    deciding = compare(record(confounded.candidate), record(confounded.baseline))
    assert deciding.measure == DECIDING_MEASURE and "DEVIATION" not in deciding.message
    assert deciding.status == "compared" and not deciding.regressed
    assert abs(deciding.delta) < 0.1 and deciding.p_value > 0.05


def test_a_baseline_without_utterance_rows_falls_back_to_the_vanilla_ratio_named_as_a_deviation(confounded):
    comparison = compare(record(confounded.candidate), record(confounded.baseline, per_speaker=True))
    assert comparison.measure.startswith("largest |log WER ratio| (vanilla, one-vs-rest) beyond group exchange")
    assert "the baseline record carries no per-utterance rows" in comparison.measure
    assert comparison.message.endswith("rerun it)]")


def test_a_case_judged_on_the_vanilla_row_compares_the_vanilla_ratio_with_no_deviation(confounded):
    vanilla = WerRatioCheck().compare(
        context(method="vanilla"), CASE, record(confounded.candidate), record(confounded.baseline)
    )
    assert vanilla.measure == "largest |log WER ratio| (vanilla, one-vs-rest) beyond group exchange"
    assert "DEVIATION" not in vanilla.message and vanilla.regressed
    no_speaker = WerRatioCheck().compare(
        context(method="no_speaker"), CASE, record(confounded.candidate), record(confounded.baseline)
    )
    assert "DEVIATION: not the deciding row (no_speaker)" in no_speaker.measure


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
    # three one-vs-rest comparisons: the detectable worsening at the alpha one of them must reach, 0.05 / 3
    from scipy import stats

    df, se = comparison.decision.df, comparison.decision.se
    assert comparison.decision.detectable == pytest.approx((stats.t.isf(0.05 / 3, df) + stats.t.isf(0.2, df)) * se)


def score_record(table: pd.DataFrame, per_speaker: bool = False) -> RatioRecord:
    data = {
        "utterance": table["utterance"].tolist(),
        "speaker": table["speaker"].tolist(),
        "group": table["group"].tolist(),
        "score": table["score"].tolist(),
        COVARIATE_PREFIX + "x_pc1": table["x_pc1"].tolist(),
    }
    if per_speaker:
        sums = speaker_sums(data)
        data = {"speaker": list(sums.index), **sums.to_dict("list")}
    return ratio_record(data, "score_ratio")


def test_judge_scores_falling_on_confounded_content_regress_the_vanilla_ratio_but_not_the_deciding_row():
    from harness.checks.score_ratio.check import ScoreRatioCheck

    candidate, baseline = simulate_score_release_pair(19)
    check, case = ScoreRatioCheck(), dataclasses.replace(CASE, check="score_ratio")
    vanilla = check.compare(context(0.05), case, score_record(candidate, True), score_record(baseline, True))
    assert vanilla.regressed and "DEVIATION" in vanilla.measure
    deciding = check.compare(context(0.05), case, score_record(candidate), score_record(baseline))
    assert deciding.measure.startswith("|log judge-score ratio| on the deciding row")
    assert deciding.status == "compared" and not deciding.regressed
    grown = simulate_score_release_pair(19, group_effect_candidate=-1.0)
    caught = check.compare(context(0.05), case, score_record(grown[0]), score_record(grown[1]))
    assert caught.status == "compared" and caught.regressed


def test_the_score_interaction_matches_statsmodels_mixedlm():
    """The joint linear fit against statsmodels' MixedLM (REML) on the same design: the log-ratio contrast from its
    estimates, and the delta-method se with the speaker-cluster CR2 sandwich computed by hand from its variance
    components (dense per-speaker covariances), agree."""
    from statsmodels.regression.mixed_linear_model import MixedLM

    from harness.metrics.score_release import score_ratio_interaction
    from harness.metrics.wer_model import _design
    from harness.metrics.wer_release import CHECKPOINT, INTERACTION, stacked_table

    candidate, baseline = simulate_score_release_pair(23, group_effect_candidate=-0.4)
    ours = score_ratio_interaction(
        candidate, baseline, numerator="F", denominator="M", candidate_covariates=["x_pc1"],
        baseline_covariates=["x_pc1"],
    )  # fmt: skip
    stacked, covariates = stacked_table(candidate, baseline, ["x_pc1"], ["x_pc1"], values=("score",))
    stacked[INTERACTION] = stacked[CHECKPOINT] * (stacked["group"] == "F")
    design = _design(stacked, "F", covariates)
    fit = MixedLM(stacked["score"].to_numpy(), design.to_numpy(float), groups=stacked["speaker"].to_numpy()).fit(
        reml=True,
        method="cg",  # its default (bfgs) stops short of the optimum on this design, saying so
    )
    # the CR2 speaker-cluster sandwich by hand (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018, eq. 3-5), with
    # dense per-speaker covariances Phi_i at statsmodels' variance components
    beta, x, y = np.asarray(fit.fe_params), design.to_numpy(float), stacked["score"].to_numpy()
    speakers = list(stacked.groupby("speaker").indices.values())
    phis = [fit.scale * np.eye(len(rows)) + float(np.asarray(fit.cov_re)[0, 0]) for rows in speakers]
    bread = sum(x[rows].T @ np.linalg.inv(phi) @ x[rows] for rows, phi in zip(speakers, phis))
    m_inverse, scores = np.linalg.inv(bread), []
    for rows, phi in zip(speakers, phis):
        upper = np.linalg.cholesky(phi).T
        values, vectors = np.linalg.eigh(upper @ (phi - x[rows] @ m_inverse @ x[rows].T) @ upper.T)
        adjust = upper.T @ (vectors / np.sqrt(values)) @ vectors.T @ upper
        scores.append(x[rows].T @ np.linalg.inv(phi) @ adjust @ (y[rows] - x[rows] @ beta))
    scores = np.array(scores)
    cov = m_inverse @ (scores.T @ scores) @ m_inverse
    log_ratios, gradients = [], []
    for flag in (1.0, 0.0):
        own = design[(stacked[CHECKPOINT] == flag).to_numpy()]
        high = own.assign(**{"group[F]": 1.0, INTERACTION: flag}).to_numpy(float).mean(axis=0)
        low = own.assign(**{"group[F]": 0.0, INTERACTION: 0.0}).to_numpy(float).mean(axis=0)
        log_ratios.append(math.log((high @ beta) / (low @ beta)))
        gradients.append(high / (high @ beta) - low / (low @ beta))
    gradient = gradients[0] - gradients[1]
    assert ours.delta == pytest.approx(log_ratios[0] - log_ratios[1], abs=1e-6)
    assert ours.se == pytest.approx(math.sqrt(gradient @ cov @ gradient), rel=1e-3)


def test_the_clusters_scores_sum_to_the_gradient_and_the_sandwich_widens_under_checkpoint_specific_speakers():
    """The cluster-robust covariance's scores are each speaker's share of the exact gradient; where speakers' effects
    differ between checkpoints (not modelled), the sandwich se of the interaction exceeds the model-based one."""
    from harness.metrics.glmm.likelihood import _Evaluator, _Problem

    rng = np.random.default_rng(0)
    n, clusters = 400, 20
    cluster = np.repeat(np.arange(clusters), n // clusters)
    design = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = rng.poisson(np.exp(0.2 + 0.3 * design[:, 1] + rng.normal(0, 0.5, clusters)[cluster])).astype(float)
    problem = _Problem.build(
        y=y, trials=np.zeros(n), is_binomial=np.zeros(n, dtype=bool), offset=np.zeros(n), design=design,
        cluster=cluster, loaded=np.zeros(n, dtype=bool),
    )  # fmt: skip
    evaluator = _Evaluator(problem, 5, estimate_loading=False)
    theta = np.array([0.1, 0.2, 0.4])
    total = evaluator.loglik_and_gradient(theta)[1]
    per_cluster = evaluator.loglik_and_gradient(theta, per_cluster=True)[1]
    assert per_cluster.shape == (clusters, 3)
    np.testing.assert_allclose(per_cluster.sum(axis=0), total, rtol=1e-8, atol=1e-8)

    pair = simulate_release_pair(29, n_speakers=30, utterances_per_speaker=30, speaker_checkpoint_sd=0.4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("harness.metrics.wer_release._robust_cov", lambda model: model.cov)
        model_based = ratio_interaction(pair.candidate, pair.baseline, numerator="F", denominator="M")
    robust = ratio_interaction(pair.candidate, pair.baseline, numerator="F", denominator="M")
    assert robust.se > 1.3 * model_based.se
