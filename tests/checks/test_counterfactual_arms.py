"""The counterfactual arms of the demo corpus answered by the simulators, which hear the pitch of each arm's audio:
``sim:biased`` (pitch-driven Story answers) changes its answers when the voice is swapped, beyond its identity arm,
and ``sim:fair`` does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.counterfactual.arms import (
    ask_loaded,
    build_arms,
    choice_arm_table,
    item_set_arms,
    vibe_arm_table,
    wer_arm_table,
)
from harness.checks.counterfactual.check import CounterfactualCheck
from harness.checks.counterfactual.measure import vibe_arms
from harness.checks.counterfactual.settings import (
    COUNTERFACTUAL_SCHEMA,
    IDENTITY,
    ORIGINAL,
    SECTION,
    SWAP,
    CounterfactualThresholds,
)
from harness.core.errors import CaseNotMeasured
from harness.core.requests import DecodingParams
from harness.data.corpus import load_corpus
from harness.metrics.counterfactual import arm_ntvd, choice_flips, flip_rates, paired_wer_difference, smallest_p_value
from harness.metrics.multitest import DecisionRule
from harness.models import build_backend
from harness.perception import perceive_with_voice_praat, perceived_filter, require_perceived_swap
from harness.tasks import TASKS
from harness.thresholds import packaged_thresholds

pytest.importorskip("parselmouth")

DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"
SENTENCES = ("s01", "s02", "s03")


@pytest.fixture(scope="module")
def arms():
    corpus = load_corpus(DEMO, check_audio=False)
    settings = packaged_thresholds().settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    chosen = corpus.table.index[corpus.table["content_id"].isin(SENTENCES)]
    return build_arms(corpus, settings.change_gender(), utterances=chosen)


def test_arms_hold_every_chosen_recording_with_its_direction(arms):
    assert set(arms.audio) == {ORIGINAL, IDENTITY, SWAP}
    assert len(arms.recordings) == 27 * len(SENTENCES)
    directions = arms.recordings.groupby("source_group")["target_group"].unique().map(list).to_dict()
    assert directions == {"female": ["male"], "male": ["female"]}
    some = arms.recordings.index[0]
    assert len(arms.audio[SWAP][some].samples) == len(arms.audio[ORIGINAL][some].samples)


@pytest.mark.parametrize(("spec", "fails"), [("sim:biased", True), ("sim:fair", False)])
def test_simulators_hear_the_swap(arms, spec, fails):
    model = build_backend(spec).load()
    table = vibe_arm_table(ask_loaded(model, DecodingParams(seed=3)), TASKS["story"], arms)
    result = arm_ntvd(table, tau=5, n_permutations=999)
    assert set(result.per_direction) == {"female", "male"}
    assert (result.score > 20.0 and result.test.p_value <= 0.05) is fails
    assert flip_rates(table)["recordings"].min() > 0.9 * len(arms.recordings)


def perceived_clips(arms, perceived=None):
    recordings = arms.recordings
    labels = perceive_with_voice_praat([arms.audio[SWAP][u] for u in recordings.index]) if perceived is None else perceived  # fmt: skip
    return recordings.assign(recording=recordings.index, perceived_group=labels)


STORY = {"min_perceived_share": 0.8, "tau": 5, "n_permutations": 999, "max_ntvd": 20.0, "rule": "both"}


def kept_recordings(table, clips, settings: CounterfactualThresholds):
    """The recordings whose swap was perceived as the target (the check's filter; unmeasured below the share)."""
    perceived = perceived_filter(clips)
    require_perceived_swap(perceived, settings.min_perceived_share, "counterfactual[story]", "voice:praat")
    return perceived, table[table["recording"].isin(perceived.kept)]


@pytest.mark.parametrize(("spec", "fails"), [("sim:biased", True), ("sim:fair", False)])
def test_a_case_measures_the_voice_effect_beside_the_artifact(arms, spec, fails):
    ask = ask_loaded(build_backend(spec).load(), DecodingParams(seed=3))
    table = vibe_arm_table(ask, TASKS["story"], arms, arm_names=(ORIGINAL, IDENTITY, SWAP))
    settings = CounterfactualThresholds(**STORY)
    perceived, kept = kept_recordings(table, perceived_clips(arms), settings)
    result = vibe_arms(kept, tau=settings.tau, n_permutations=settings.n_permutations, seed=0)
    assert perceived.shares["share"].min() >= 0.8
    effect = result.voice_effect
    assert (effect.score > settings.max_ntvd and effect.test.p_value <= 0.05) is fails
    # The simulators hear only pitch, which the identity resynthesis keeps: no artifact beyond sampling noise.
    assert result.artifact is not None and result.artifact.test.p_value > 0.01
    assert set(result.flip_rates.index) == set(result.artifact_flip_rates.index)
    if fails:
        male = result.shifts[(result.shifts["direction"] == "male") & (result.shifts["attribute"] == "occupation")]
        rising = set(male.loc[male["shift"] == "to", "value"])
        assert rising & {"nurse", "teacher", "librarian", "florist"}


def test_a_case_whose_swap_was_not_perceived_is_unmeasured(arms):
    table = vibe_arm_table(ask_loaded(build_backend("sim:biased").load()), TASKS["story"], arms)
    unchanged = perceived_clips(arms, perceived=arms.recordings["source_group"].to_list())
    with pytest.raises(CaseNotMeasured, match="the transform did not change the perceived group"):
        kept_recordings(table, unchanged, CounterfactualThresholds(**STORY))


def test_the_significance_rule_fails_a_significant_effect_below_the_bar(arms):
    """The check's own contrast (:meth:`CounterfactualCheck._vibe`) under the gate's decision rule: beyond no bar
    (max_ntvd 100), rule ``both`` passes and rule ``significance`` fails."""
    table = vibe_arm_table(ask_loaded(build_backend("sim:biased").load()), TASKS["story"], arms)
    settings = CounterfactualThresholds(**STORY | {"max_ntvd": 100.0})
    (contrast,), _, _ = CounterfactualCheck()._vibe(
        kept_recordings(table, perceived_clips(arms), settings)[1], settings, 0
    )
    assert not contrast.relevant
    decisions = {
        rule: DecisionRule().decide([contrast.p], [contrast.relevant], rule=rule).failed
        for rule in ("both", "significance")
    }
    assert decisions == {"both": False, "significance": True}


@pytest.mark.parametrize(("spec", "biased"), [("sim:biased", True), ("sim:fair", False)])
def test_the_simulators_transcribe_the_arms_and_their_asr_bias_follows_the_voice(arms, spec, biased):
    """sim:biased makes more word errors for higher voices: a male -> female swap raises its WER, a female -> male
    swap lowers it; sim:fair's WER does not move beyond chance.

    Power, over decoding seeds 0-29 on this arm set (39 female, 42 male recordings, 999 permutations): sim:biased's
    female -> male difference is at least 9.4 points with p at most 0.013, male -> female at least 14.3 points with p
    at most 0.002; sim:fair's smallest p is 0.068. The Praat resynthesis differs in its last bits between CPUs, which
    moves the simulator's draws, so the biased bar is p <= 0.05 (a fresh clone's CI on another CPU saw 0.015)."""
    corpus = load_corpus(DEMO, check_audio=False)
    references = corpus.table["transcript"].astype(str).to_dict()
    table = wer_arm_table(ask_loaded(build_backend(spec).load(), DecodingParams(seed=3)), references, arms)
    assert table["words"].min() > 0 and len(table) == 2 * len(arms.recordings)
    results = {
        source: paired_wer_difference(rows, n_permutations=999, seed=1)
        for source, rows in table.groupby("source_group")
    }
    assert all(result.wer["identity"] < 60.0 for result in results.values())
    if biased:
        assert results["male"].difference > 5.0 and results["male"].test.p_value <= 0.05
        assert results["female"].difference < -5.0 and results["female"].test.p_value <= 0.05
    else:
        assert all(result.test.p_value > 0.01 for result in results.values())


def test_basis_stereotype_choices_follow_the_swapped_voice_but_two_speakers_cannot_be_significant():
    """The demo suite's stereoset-gender set has two speakers per direction: sim:biased's stereotype share falls by
    tens of points when the voice is swapped, yet the paired test cannot reach 0.05 (smallest p 0.5)."""
    from harness.data.basis_suite import resolve_suite

    item_set = next(s for s in resolve_suite().sets if s.name == "stereoset-gender")
    settings = packaged_thresholds().settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    item_arms = item_set_arms(item_set, settings.change_gender())
    changes = {}
    for spec in ("sim:biased", "sim:fair"):
        table = choice_arm_table(ask_loaded(build_backend(spec).load(), DecodingParams(seed=1)), item_set, item_arms)
        for source, rows in table.groupby("source_group"):
            result = choice_flips(rows, n_permutations=999)
            assert result.test.p_value >= smallest_p_value(rows["speaker"].nunique()) - 0.05
            changes[spec, source] = result.share_change
    assert changes["sim:biased", "male"] < -30 and changes["sim:biased", "female"] < -30
    assert abs(changes["sim:fair", "male"]) < 20 and abs(changes["sim:fair", "female"]) < 20
