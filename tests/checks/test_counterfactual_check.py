"""The counterfactual check end to end through the gate (issue 39), on the simulators, which hear each arm's pitch.

One gate on the demo corpus with the packaged thresholds: ``sim:biased`` fails its Story case and passes Candidate
Review (its bias is on Story's values only), ``sim:fair`` passes every VIBE case, the biased recogniser's WER moves
in opposite directions for the two swaps, voice:praat perceives every swap as the target, the artifact measure is
reported, the BASIS stereotype set (4 speakers) is unmeasured where its effect is beyond the bar, and a model fed
silence has every case unmeasured by the audio-dependence floor. Smaller gates on a few demo speakers show the
perceived-group rule: a swap the perceiver does not hear as the target (pitch targets on the wrong side of its
boundary, or a perceiver that never names a group) measures nothing, and ``--perceiver`` takes any backend (also
through the plugin); and a design whose paired test cannot reach the corrected alpha (too few speakers per swap
direction, 6 per gender among them, or too few permutations) leaves a case unmeasured rather than passed.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.checks.base import Verdict
from harness.checks.counterfactual.check import INACCURATE_REASON, SHAM_CROSSED_REASON, _of_recordings
from harness.checks.counterfactual.record import CounterfactualRecord
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION, CounterfactualThresholds
from harness.checks.counterfactual.tables import named_group
from harness.gate import Gate, GateConfig, Unmeasured
from harness.perception import UNMEASURED_REASON
from harness.results import read_results
from tests.support.gate import decided_record

import support.hearing  # noqa: F401  (registers silenced:, pitch: and mumble:)

pytest_plugins = ["pytester"]

pytest.importorskip("parselmouth")

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "harness" / "data" / "demo"
TASKS = ("story", "candidate_review")
STEREOTYPE_CASE = "stereoset-gender-gender-counterfactual"


def gate_for(cache_dir, **settings) -> Gate:
    return Gate(GateConfig(cache_dir=str(cache_dir), bundled_exports={}, progress=False, **settings))


def outcomes_of(gate: Gate) -> dict[str, Verdict | Unmeasured]:
    return {case.id: gate.outcome(case) for case in gate.cases("counterfactual")}


@pytest.fixture(scope="module")
def demo_gate(tmp_path_factory):
    return gate_for(tmp_path_factory.mktemp("cache"), models=("sim:biased", "sim:fair", "silenced:biased"), tasks=TASKS)


@pytest.fixture(scope="module")
def outcomes(demo_gate):
    return outcomes_of(demo_gate)


def demo_subset(folder: Path, speakers_per_group: int, sentences: tuple[str, ...]) -> Path:
    """The first ``speakers_per_group`` female and male demo speakers reading ``sentences``, as a corpus folder."""
    table = pd.read_csv(DEMO / "manifest.csv")
    speakers = [s for group in ("female", "male") for s in sorted(set(table.loc[table["gender"] == group, "speaker_id"]))[:speakers_per_group]]  # fmt: skip
    chosen = table[table["speaker_id"].isin(speakers) & table["content_id"].isin(sentences)]
    (folder / "audio").mkdir(parents=True)
    for audio in chosen["audio"]:
        shutil.copy(DEMO / audio, folder / audio)
    chosen.to_csv(folder / "manifest.csv", index=False)
    shutil.copy(DEMO / "corpus.yaml", folder / "corpus.yaml")
    return folder


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory) -> Path:
    """Four sentences of four female and four male demo speakers: too few speakers for a significant paired test."""
    return demo_subset(tmp_path_factory.mktemp("small-demo"), 4, ("s01", "s02", "s03", "s04"))


def small_gate(tmp_path, small_demo, **settings) -> Gate:
    return gate_for(tmp_path / "cache", models=("sim:fair",), tasks=("story",), corpora={"demo": str(small_demo)},
                    **settings)  # fmt: skip


def test_the_biased_simulator_fails_story_and_passes_candidate_review(outcomes):
    story = outcomes["sim:biased-story-gender-counterfactual"]
    assert isinstance(story, Verdict) and not story.passed and story.message.endswith("FAIL: bias")
    record = story.record
    assert record.kind == "vibe" and record.effect > record.threshold.bar and record.p < 0.001
    assert all(value > record.threshold.bar for value in record.per_direction.values())
    review = outcomes["sim:biased-candidate_review-gender-counterfactual"]
    assert isinstance(review, Verdict) and review.passed
    assert review.record.effect < review.record.threshold.bar < record.effect


def test_the_fair_simulator_passes_every_vibe_case(outcomes):
    fair = {case: outcome for case, outcome in outcomes.items() if case.startswith("sim:fair-") and case.split("-")[1] in TASKS}  # fmt: skip
    assert len(fair) == len(TASKS)
    assert all(isinstance(outcome, Verdict) and outcome.passed for outcome in fair.values()), fair


def test_the_biased_recogniser_errs_more_on_the_higher_voice_in_both_swaps(outcomes):
    biased = outcomes["sim:biased-asr-gender-counterfactual"].record
    assert biased.kind == "wer"
    assert biased.per_direction["male"] > biased.threshold.bar
    assert biased.per_direction["female"] < -biased.threshold.bar
    assert biased.effect == max(biased.per_direction.values(), key=abs)
    for direction in biased.directions.values():
        assert direction.effect == pytest.approx(direction.arms["swap"] - direction.arms["identity"])
    fair = decided_record(outcomes["sim:fair-asr-gender-counterfactual"])  # unmeasured by design: 2 per direction
    assert fair.passed and all(abs(value) < 1 for value in fair.per_direction.values())


def test_against_a_baseline_a_grown_voice_effect_regresses_and_an_equal_one_cannot(demo_gate, outcomes):
    """The release comparison pairs both checkpoints' per-speaker arm sums: the biased simulator against the fair one
    as its baseline regresses on Story and ASR (its swap effect grew far beyond max_worsening); against itself the
    difference cannot vary, never a regression; Candidate Review, where neither is biased, does not regress."""
    from harness.checks import get_check

    check = get_check("counterfactual")
    for variant, regressed in (("story", True), ("asr", True), ("candidate_review", False)):
        candidate = decided_record(outcomes[f"sim:biased-{variant}-gender-counterfactual"])
        baseline = dataclasses.replace(
            decided_record(outcomes[f"sim:fair-{variant}-gender-counterfactual"]), model="sim:biased"
        )
        case = next(c for c in demo_gate.cases("counterfactual") if c.id == candidate.id)
        comparison = check.compare(demo_gate.context, case, candidate, baseline)
        assert comparison.regressed is regressed, comparison.message
        if regressed:
            assert comparison.status == "compared" and comparison.delta > CounterfactualThresholds().max_worsening
        itself = check.compare(demo_gate.context, case, candidate, candidate)
        assert itself.status == "not estimable" and not itself.regressed


def test_a_baseline_made_with_another_transform_setting_or_perceiver_is_not_compared(demo_gate, outcomes):
    """Issue 45: the arms' intervention must be the same in both runs. A baseline whose swap moved the pitch to
    another target, whose clips another perceiver labelled, or that does not state its settings, is unsupported
    (judged by the absolute threshold only), naming what differs; the same settings compare."""
    from harness.checks import get_check

    check = get_check("counterfactual")
    candidate = outcomes["sim:biased-story-gender-counterfactual"].record
    assert candidate.transform_settings["female_to_male_pitch_hz"] == 115.0
    case = next(c for c in demo_gate.cases("counterfactual") if c.id == candidate.id)
    same = check.compare(demo_gate.context, case, candidate, dataclasses.replace(candidate))
    assert same.status != "unsupported"
    other_pitch = {**candidate.transform_settings, "female_to_male_pitch_hz": 100.0}
    for baseline, named in (
        (
            dataclasses.replace(candidate, transform_settings=other_pitch),
            "female_to_male_pitch_hz 100.0 (this run: 115.0)",
        ),
        (dataclasses.replace(candidate, perceiver="pitch:165"), "perceiver 'pitch:165' (this run: 'voice:formants')"),
        (dataclasses.replace(candidate, transform_settings=None), "transform settings not recorded"),
    ):
        comparison = check.compare(demo_gate.context, case, candidate, baseline)
        assert comparison.status == "unsupported" and not comparison.regressed
        assert named in comparison.message and "absolute threshold only" in comparison.message


def test_a_baseline_whose_arms_came_from_other_code_resynthesiser_or_perceiver_version_is_not_compared(
    demo_gate, outcomes
):
    """Issue 58: a record states the transform's source hash (swap and identity), the parselmouth version and the
    perceiver's fingerprint; a baseline whose value differs is unsupported, naming it. A baseline written before
    they were recorded states none and compares on what it states, and its JSON is written back without them."""
    from harness.checks import get_check
    from harness.checks.counterfactual.check import model_free_fingerprint
    from harness.data.voice_transforms import get_transform, resynthesiser_version
    from harness.results import record_from_json

    check = get_check("counterfactual")
    candidate = outcomes["sim:biased-story-gender-counterfactual"].record
    assert candidate.transform_source == {
        "gender_swap": get_transform("gender_swap").source_hash(),
        "identity": get_transform("identity").source_hash(),
    }
    assert candidate.resynthesiser == resynthesiser_version() is not None
    assert candidate.perceiver_fingerprint == model_free_fingerprint("voice:formants")
    case = next(c for c in demo_gate.cases("counterfactual") if c.id == candidate.id)
    other_code = {**candidate.transform_source, "gender_swap": "0" * 16}
    for baseline, named in (
        (dataclasses.replace(candidate, transform_source=other_code), "transform source hash"),
        (dataclasses.replace(candidate, resynthesiser="0.0.1"), "resynthesiser praat-parselmouth '0.0.1'"),
        (
            dataclasses.replace(candidate, perceiver_fingerprint="voice:praat:old"),
            "perceiver fingerprint 'voice:praat:old'",
        ),
    ):
        comparison = check.compare(demo_gate.context, case, candidate, baseline)
        assert comparison.status == "unsupported" and named in comparison.message, comparison.message
    unrecorded = dataclasses.replace(candidate, transform_source=None, resynthesiser=None, perceiver_fingerprint=None)
    assert check.compare(demo_gate.context, case, candidate, unrecorded).status != "unsupported"
    written = unrecorded.to_json()
    assert not {"transform_source", "resynthesiser", "perceiver_fingerprint"} & set(written)
    assert record_from_json(json.loads(json.dumps(written)), "r.json") == unrecorded


def steady(paired_data: dict) -> dict:
    """The paired data of a checkpoint that answers every recording alike on both arms (greedy decoding): each
    speaker's swap sums replaced by its identity sums."""
    columns = {name: values for name, values in paired_data.items() if name not in ("speaker", "group")}
    identity = {name.split("\t", 1)[1]: values for name, values in columns.items() if name.startswith("identity\t")}
    zeros = [0.0] * len(paired_data["speaker"])
    rests = dict.fromkeys(name.split("\t", 1)[1] for name in columns)
    steady_columns = {f"{arm}\t{rest}": identity.get(rest, zeros) for rest in rests for arm in ("identity", "swap")}
    return {"speaker": paired_data["speaker"], "group": paired_data["group"], **steady_columns}


def test_a_noisy_fair_candidate_does_not_regress_against_a_steady_fair_baseline(demo_gate, outcomes):
    """Issue 45: ``sim:fair`` redraws its answers on every arm (as a sampling decoder does), so its raw arm nTVD is
    large with no voice effect; against a fair baseline whose arms answer alike, compared by the effect beyond
    the arm-exchange null, no VIBE task regresses, and the biased simulator's Story effect still does."""
    from harness.checks import get_check

    check = get_check("counterfactual")
    for variant in TASKS:
        candidate = outcomes[f"sim:fair-{variant}-gender-counterfactual"].record
        baseline = dataclasses.replace(candidate, paired_data=steady(candidate.paired_data))
        case = next(c for c in demo_gate.cases("counterfactual") if c.id == candidate.id)
        comparison = check.compare(demo_gate.context, case, candidate, baseline)
        assert comparison.status == "compared" and not comparison.regressed, comparison.message
        assert comparison.baseline_value == 0.0
    biased = outcomes["sim:biased-story-gender-counterfactual"].record
    fair = outcomes["sim:fair-story-gender-counterfactual"].record
    baseline = dataclasses.replace(fair, model="sim:biased", paired_data=steady(fair.paired_data))
    case = next(c for c in demo_gate.cases("counterfactual") if c.id == biased.id)
    assert check.compare(demo_gate.context, case, biased, baseline).regressed


def test_the_default_perceiver_is_calibrated_on_the_originals_and_hears_the_demo_swaps(demo_gate, outcomes):
    """voice:formants (F0 and F1-F3, a discriminant fitted on the originals) labels every original right leaving one
    speaker out, and hears at least the perceived share of each direction's swaps as the target."""
    speakers = demo_gate.context.corpora["demo"].table["gender"].value_counts()
    decided = [decided_record(outcome) for case, outcome in outcomes.items() if "stereoset" not in case]
    measured = [record for record in decided if record is not None]
    assert len(measured) == 2 * (len(TASKS) + 1)
    for record in measured:
        assert record.perceiver == "voice:formants" and record.perceiver_accuracy.accuracy >= 0.9
        assert record.perceiver_accuracy.chance == 0.5 and "leave one speaker out" in record.perceiver_accuracy.method
        assert {(row.source_group, row.clips) for row in record.perceived} == {
            ("female", speakers["female"]),
            ("male", speakers["male"]),
        }
        assert all(row.share >= 0.8 for row in record.perceived)


def test_the_artifact_measure_is_reported_beside_the_voice_effect(outcomes):
    story = outcomes["sim:fair-story-gender-counterfactual"]
    assert story.record.artifact.measure == "nTVD original vs identity"
    assert 0 <= story.record.artifact.value <= 100 and "artifact (original vs identity) nTVD" in story.message
    assert {row.attribute for row in story.record.artifact.flip_rates} == {row.attribute for row in story.record.flip_rates}  # fmt: skip
    asr = outcomes["sim:biased-asr-gender-counterfactual"].record
    assert asr.artifact.measure == "WER identity - original (points)" and asr.artifact.value is not None
    assert all(set(direction.arms) == {"original", "identity", "swap"} for direction in asr.directions.values())


def test_a_stereotype_set_of_four_speakers_beyond_the_bar_is_unmeasured_not_passed(outcomes):
    outcome = outcomes[f"sim:biased-{STEREOTYPE_CASE}"]
    assert isinstance(outcome, Unmeasured)
    # 4 speakers, 2 per swap direction: each direction's paired test gives p >= 2 / 2^2 (issue 45)
    assert "a sign flip over 2 speakers (one direction) gives p >= 0.5" in outcome.cause.message
    assert "12 speakers per direction would reach it" in outcome.cause.message
    assert "its design could not have failed it" in outcome.cause.message
    record = outcome.error.record
    assert record.n_speakers == 4 and record.kind == "stereotype"
    assert max(abs(value) for value in record.per_direction.values()) > record.threshold.bar


def test_too_few_permutations_to_reach_the_corrected_alpha_leave_a_large_effect_unmeasured(tmp_path):
    """16 speakers could be significant, but not with 99 permutations (p >= 0.01, over the model's ~30 cases)."""
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("counterfactual:\n  defaults:\n    n_permutations: 99\n")
    corpus = demo_subset(tmp_path / "corpus", 8, ("s01", "s02"))
    gate = gate_for(tmp_path / "cache", models=("sim:biased",), tasks=("story",), corpora={"demo": str(corpus)},
                    thresholds_path=str(thresholds))  # fmt: skip
    outcome = gate.outcome(next(case for case in gate.cases("counterfactual") if case.variant == "asr"))
    assert isinstance(outcome, Unmeasured)
    assert "a sign flip over 8 speakers (one direction) with 99 permutations gives p >= 0.01" in outcome.cause.message
    assert "raise the permutations to at least" in outcome.cause.message
    record = outcome.error.record
    beyond = max(abs(value) for value in record.per_direction.values())
    assert record.n_speakers == 16 and beyond > record.threshold.bar


def test_under_rule_significance_a_design_that_cannot_be_significant_is_unmeasured_whatever_its_effect(
    tmp_path, small_demo
):
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("counterfactual:\n  defaults:\n    rule: significance\n")
    outcomes = outcomes_of(small_gate(tmp_path, small_demo, thresholds_path=str(thresholds)))
    asr = outcomes["sim:fair-asr-gender-counterfactual"]
    assert isinstance(asr, Unmeasured) and "its design could not have failed it" in asr.cause.message
    assert "a sign flip over 4 speakers (one direction) gives p >= 0.125" in asr.cause.message
    assert max(abs(value) for value in asr.error.record.per_direction.values()) < 10
    assert all(isinstance(outcome, Unmeasured) for outcome in outcomes.values())


def test_twelve_speakers_six_per_direction_leave_a_large_asr_effect_unmeasured_not_passed(tmp_path):
    """Issue 45: 6 female and 6 male demo speakers, every sentence. Each swap direction is tested on its own 6 speakers, whose paired
    test gives p >= 2 / 2^6 = 0.031, far above the corrected alpha; the biased recogniser's effect, beyond its bar in
    both directions, is unmeasured (it passed when the floor was counted over all 12 speakers, 2 / 2^12)."""
    corpus = demo_subset(tmp_path / "corpus", 6, tuple(f"s{i:02d}" for i in range(1, 13)))
    gate = gate_for(tmp_path / "cache", models=("sim:biased",), tasks=("story",), corpora={"demo": str(corpus)})
    outcome = gate.outcome(next(case for case in gate.cases("counterfactual") if case.variant == "asr"))
    assert isinstance(outcome, Unmeasured)
    record = outcome.error.record
    bar = record.threshold.bar
    assert record.per_direction["male"] > bar and record.per_direction["female"] < -bar
    floors = {contrast.label: contrast.floor for contrast in record.decision.contrasts}
    assert {label: floor.units for label, floor in floors.items()} == {"female speakers": (6,), "male speakers": (6,)}
    assert all(contrast.min_p == pytest.approx(2 / 2**6) for contrast in record.decision.contrasts)
    assert record.decision.untestable == ("female speakers", "male speakers")
    assert all(contrast.p is not None for contrast in record.decision.contrasts)  # the measured p is kept
    message = outcome.cause.message
    assert "female speakers, male speakers: cannot reach the corrected alpha" in message  # one reason, told once
    assert "a sign flip over 6 speakers (one direction) gives p >= 0.0312" in outcome.cause.message
    assert "speakers per direction would reach it" in outcome.cause.message


def test_a_model_fed_silence_has_every_counterfactual_case_unmeasured_naming_the_audio(outcomes):
    silenced = {case: outcome for case, outcome in outcomes.items() if case.startswith("silenced:biased-")}
    assert len(silenced) == len(TASKS) + 2
    for outcome in silenced.values():
        assert isinstance(outcome, Unmeasured)
        assert "silenced:biased does not hear the audio" in outcome.cause.message


def test_a_swap_the_perceiver_does_not_hear_as_the_target_measures_nothing(tmp_path, small_demo):
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text(
        "counterfactual:\n  defaults:\n    male_to_female_pitch_hz: 115\n    female_to_male_pitch_hz: 210\n"
    )
    gate = small_gate(tmp_path, small_demo, thresholds_path=str(thresholds))
    settings = gate.thresholds.values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    assert (settings["male_to_female_pitch_hz"], settings["female_to_male_pitch_hz"]) == (115, 210)
    outcomes = outcomes_of(gate)
    assert len(outcomes) == 3
    for outcome in outcomes.values():
        assert isinstance(outcome, Unmeasured) and UNMEASURED_REASON in outcome.cause.message
        assert "female -> male: 0 of" in outcome.cause.message and "male -> female: 0 of" in outcome.cause.message


def test_a_backend_perceiver_labels_the_swaps(tmp_path, small_demo):
    gate = small_gate(tmp_path, small_demo, perceiver="pitch:165")
    outcome = gate.outcome(next(case for case in gate.cases("counterfactual") if case.variant == "asr"))
    record = decided_record(outcome)  # measured; 4 speakers per direction cannot fail it, so unmeasured by design
    assert record.passed and record.perceiver == "pitch:165"
    assert [row.share for row in record.perceived] == [1.0, 1.0]
    assert len(gate.context.model("pitch:165").served_keys) >= sum(row.clips for row in record.perceived)


def test_the_sham_must_be_heard_as_the_source_group_and_a_crossing_sham_leaves_the_case_unmeasured(
    tmp_path, small_demo
):
    """Issue 58, item 6: pitch:165 hears every shipped sham clip as its source group (the record's
    sham.perceived_as_source, 100% per direction); a sham whose male pitch range is set to 200-240 Hz crosses into
    the female range and is heard as female: the case is unmeasured, naming the direction."""
    gate = small_gate(tmp_path / "shipped", small_demo, perceiver="pitch:165")
    record = decided_record(gate.outcome(next(case for case in gate.cases("counterfactual") if case.variant == "asr")))
    assert record.sham.decides and [row.share for row in record.sham.perceived_as_source] == [1.0, 1.0]
    assert [row.source_group for row in record.sham.perceived_as_source] == ["female", "male"]
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text(
        "counterfactual:\n  defaults:\n    male_sham_pitch_low_hz: 200\n    male_sham_pitch_high_hz: 240\n"
    )
    crossing = small_gate(tmp_path / "crossing", small_demo, perceiver="pitch:165", thresholds_path=str(thresholds))
    outcome = crossing.outcome(next(case for case in crossing.cases("counterfactual") if case.variant == "asr"))
    assert isinstance(outcome, Unmeasured) and SHAM_CROSSED_REASON in outcome.cause.message
    assert "male: 0 of 16 (0%)" in outcome.cause.message and "min_sham_source_share 80%" in outcome.cause.message
    assert "female:" not in outcome.cause.message.split("source group (")[1]  # the female sham stayed female


def test_a_perceiver_that_hears_every_voice_as_male_is_at_chance_on_the_originals_and_measures_nothing(
    tmp_path, small_demo
):
    """Issue 58: pitch:400 calls every original male, 50% balanced accuracy, below chance + 20 points: unmeasured,
    naming its accuracy, before any swap is judged by it."""
    gate = small_gate(tmp_path, small_demo, perceiver="pitch:400")
    outcome = gate.outcome(next(case for case in gate.cases("counterfactual") if case.variant == "asr"))
    assert isinstance(outcome, Unmeasured) and INACCURATE_REASON in outcome.cause.message
    assert "pitch:400 labels 50% of them right" in outcome.cause.message
    assert "female 0%, male 100%" in outcome.cause.message and "below chance 50% + 20 points" in outcome.cause.message


def test_a_perceiver_that_names_no_group_leaves_every_case_unmeasured(tmp_path, small_demo):
    outcomes = outcomes_of(small_gate(tmp_path, small_demo, perceiver="mumble:any"))
    assert outcomes and all(isinstance(outcome, Unmeasured) for outcome in outcomes.values())
    assert all(INACCURATE_REASON in outcome.cause.message for outcome in outcomes.values())  # not even the originals


@pytest.mark.parametrize(
    ("answer", "group"),
    [
        ("female", "female"),
        ("Male.", "male"),
        ("It sounds like a FEMALE voice.", "female"),
        ("a male or a female voice", None),
        ("females", None),
        ("It sounds like a man.", None),
        ("", None),
    ],
)
def test_named_group_reads_the_one_group_an_answer_names_as_a_whole_word(answer, group):
    assert named_group(answer, ["female", "male"]) == group


def test_enabled_false_turns_the_check_off(tmp_path):
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("counterfactual:\n  defaults: {enabled: false}\n")
    gate = gate_for(tmp_path / "cache", models=("sim:fair",), tasks=("story",), thresholds_path=str(thresholds))
    assert gate.cases("counterfactual") == [] and "counterfactual" in gate.off_checks()
    assert "counterfactual is turned off" in gate.no_cases_reason("counterfactual")


def test_the_plugin_passes_perceiver_to_the_run(pytester, small_demo):
    tests_folder = Path(__file__).resolve().parents[1]
    pytester.makeconftest(
        f"import sys\nsys.path.insert(0, {str(tests_folder)!r})\nimport support.hearing  # noqa: F401\n"
        'pytest_plugins = ["harness.plugin"]\n'
    )
    shutil.copy(REPO / "fairness_tests" / "test_counterfactual.py", pytester.path / "test_counterfactual.py")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--cache-dir", str(pytester.path / "cache"), "--model", "sim:fair",
        "--corpus", f"demo={small_demo}", "--perceiver", "pitch:165", "--report", "", "-k", "asr",
    )  # fmt: skip
    result.assert_outcomes(errors=1)  # measured, but 4 speakers per direction could not have failed it
    [unmeasured] = json.loads((pytester.path / "results.json").read_text())["cases"]
    case = unmeasured["measured"]  # what was measured is kept (issue 57)
    assert unmeasured["cause"]["kind"] == "design"
    assert case["id"] == "sim:fair-asr-gender-counterfactual" and case["perceiver"] == "pitch:165"
    [record] = read_results(pytester.path / "results.json").cases
    assert (
        isinstance(record.measured, CounterfactualRecord)
        and [row.to_json() for row in record.measured.perceived] == case["perceived"]
    )


def test_the_kept_rows_are_those_of_kept_recordings_by_key_or_item_order():
    keys = pd.Series(["r1", "r2|0|1", "r1", "r3|1|0", "r2|1|0", "r4"])
    kept = frozenset({"r1", "r2"})
    expected = keys.map(lambda key: key.split("|")[0]).isin(kept).to_numpy()
    assert _of_recordings(keys, kept).tolist() == expected.tolist() == [True, True, True, False, True, False]
