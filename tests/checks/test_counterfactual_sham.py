"""The sham arm (issue 58, item 6): a shift of the swap's size inside the source group, so that a transform's
artefacts are told apart from the group cue. Known truth on plain tables: a model that degrades under any large
transform shows a "voice effect" against identity and none against the sham, and passes; one that follows the group
cue shows it against both, and fails. The shipped outputs, which hold no sham answers, are judged against identity
alone under a named deviation, never silently; a model run for real is asked the sham."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from harness.checks.counterfactual.check import CounterfactualCheck
from harness.checks.counterfactual.record import ShamArm
from harness.checks.counterfactual.settings import IDENTITY, ORIGINAL, SHAM, SWAP, CounterfactualThresholds
from harness.checks.counterfactual.tables import (
    SHAM_NOT_CACHED,
    ShamArmMissing,
    require_sham_answers,
    with_sham,
)
from harness.data.voice_transforms import get_transform, sham_of
from harness.data.voice_transforms.sham import median_f0_hz, sham_pitch_hz
from harness.results import counterfactual_sham_deviations

SETTINGS = CounterfactualThresholds(n_permutations=999)


def wer_arms(errors: dict[str, int], speakers: int = 10, recordings: int = 3) -> pd.DataFrame:
    """Per group, ``speakers`` speakers reading ``recordings`` sentences of 20 words, with ``errors[arm]`` errors on
    each arm (a speaker's own offset added to every arm, as real speakers differ)."""
    rows = []
    for group in ("female", "male"):
        for speaker in range(speakers):
            for recording in range(recordings):
                for arm, count in errors.items():
                    rows.append(
                        (f"{group}{speaker}", f"{group}{speaker}-{recording}", arm, group, count + speaker % 3, 20)
                    )
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "errors", "words"])


def test_an_asr_that_degrades_under_any_large_transform_passes_against_the_sham():
    artefact = wer_arms({ORIGINAL: 1, IDENTITY: 1, SHAM: 5, SWAP: 5})
    contrasts, payload, findings = CounterfactualCheck()._wer(artefact, SETTINGS, seed=1)
    assert payload["effect"] == pytest.approx(20.0)  # against identity: 20 points, beyond the bar of 10
    assert payload["sham"].decides and payload["sham"].per_direction == {"female": 0.0, "male": 0.0}
    assert payload["deciding"] == 0.0 and not any(contrast.relevant for contrast in contrasts)
    assert "against the sham +0.0" in findings


def test_an_asr_that_follows_the_group_cue_fails_against_both_controls():
    cue = wer_arms({ORIGINAL: 1, IDENTITY: 1, SHAM: 1, SWAP: 5})
    contrasts, payload, _ = CounterfactualCheck()._wer(cue, SETTINGS, seed=1)
    assert payload["deciding"] == pytest.approx(20.0) and all(contrast.relevant for contrast in contrasts)
    assert all(contrast.p < 0.01 for contrast in contrasts)
    # opposite signs against the two controls (the sham moved more than the swap, the other way) decide nothing
    opposite = wer_arms({ORIGINAL: 5, IDENTITY: 5, SHAM: 20, SWAP: 9})
    contrasts, payload, _ = CounterfactualCheck()._wer(opposite, SETTINGS, seed=1)
    assert not any(contrast.relevant for contrast in contrasts)


def test_without_sham_rows_the_identity_arm_alone_decides():
    contrasts, payload, _ = CounterfactualCheck()._wer(wer_arms({ORIGINAL: 1, IDENTITY: 1, SWAP: 5}), SETTINGS, 1)
    assert payload["sham"] is None and payload["deciding"] == pytest.approx(20.0)
    assert all(contrast.relevant for contrast in contrasts)


class Asked:
    decoding = types.SimpleNamespace(max_new_tokens=8)

    def keys(self, requests, decoding=None):
        return [f"key-{request}" for request in requests]


def context(bundled: bool, offline: bool = False, cached: tuple[str, ...] = ()):
    config = types.SimpleNamespace(offline=offline, bundled_exports={"m": ("export.jsonl.gz",)} if bundled else {})
    cache = types.SimpleNamespace(lookup=lambda keys: {key: ("", "") for key in keys if key in cached})
    return types.SimpleNamespace(config=config, cache=cache, pool=types.SimpleNamespace(planner=None))


def test_shipped_outputs_without_sham_answers_fall_back_with_the_deviation_and_a_real_model_is_asked():
    requests = ["a", "b"]
    with pytest.raises(ShamArmMissing, match=SHAM_NOT_CACHED):
        require_sham_answers(context(bundled=True), "m", Asked(), requests, SHAM)
    with pytest.raises(ShamArmMissing):
        require_sham_answers(context(bundled=False, offline=True, cached=("key-a",)), "m", Asked(), requests, SHAM)
    require_sham_answers(context(bundled=True, cached=("key-a", "key-b")), "m", Asked(), requests, SHAM)  # cached
    require_sham_answers(context(bundled=False), "m", Asked(), requests, SHAM)  # the model answers for real
    require_sham_answers(context(bundled=True), "m", Asked(), requests, SWAP)  # other arms: as before
    built = []

    def build(arm_names):
        built.append(tuple(arm_names))
        if SHAM in arm_names:
            raise ShamArmMissing(SHAM_NOT_CACHED)
        return pd.DataFrame()

    with_sham(types.SimpleNamespace(audio={SHAM: {}}), build)
    assert built == [(SHAM, ORIGINAL, IDENTITY, SWAP), (ORIGINAL, IDENTITY, SWAP)]


def test_the_deviation_is_one_line_per_model_on_every_surface():
    records = [
        types.SimpleNamespace(
            check="counterfactual", model="demo", sham=ShamArm(deviation=SHAM_NOT_CACHED, decides=False)
        ),
        types.SimpleNamespace(
            check="counterfactual", model="demo", sham=ShamArm(deviation=SHAM_NOT_CACHED, decides=False)
        ),
        types.SimpleNamespace(check="counterfactual", model="sim:fair", sham=ShamArm(decides=True)),
    ]
    assert counterfactual_sham_deviations(records) == [
        f"counterfactual (2 cases of demo): {SHAM_NOT_CACHED}; judged against the identity arm alone"
    ]


def test_the_sham_pitch_mirrors_the_swaps_move_inside_the_group_range():
    assert sham_pitch_hz(120.0, 210.0, 85.0, 155.0) == 85.0  # 120^2 / 210 = 68.6, below the male range
    assert sham_pitch_hz(150.0, 210.0, 85.0, 155.0) == pytest.approx(150.0**2 / 210.0)
    assert sham_pitch_hz(200.0, 115.0, 165.0, 255.0) == 255.0  # 348 Hz, above the female range
    assert sham_pitch_hz(float("nan"), 115.0, 165.0, 255.0) == pytest.approx(np.sqrt(165.0 * 255.0))
    assert sham_of(get_transform("gender_swap")) == "gender_sham" and sham_of(get_transform("age_shift")) == "age_sham"


def test_the_gender_sham_moves_a_demo_voice_inside_its_group():
    pytest.importorskip("parselmouth")
    from harness.checks.counterfactual.manipulation import arm_shift, voice_tracks
    from harness.data.corpus import load_corpus, read_utterance_audio
    from harness.perception import voice_praat_group

    corpus = load_corpus("harness/data/demo", check_audio=False)
    sham, settings = get_transform("gender_sham"), SETTINGS.sham_settings()
    for group in ("male", "female"):
        utterance = corpus.table.index[corpus.table["gender"] == group][0]
        original = read_utterance_audio(corpus, utterance)
        moved = sham.apply(original, group, settings)
        low, high = (getattr(settings, f"{group}_sham_pitch_{end}_hz") for end in ("low", "high"))
        assert low - 5 <= median_f0_hz(moved, 60.0, 600.0) <= high + 5
        if group == "female":  # raised by 1 / 0.85, as far as the swap lowers them (Burg's tracks of a lowered male
            # voice at a 5.5 kHz ceiling are not reliable enough to measure the male sham's formants this way)
            shift = arm_shift(*(voice_tracks(a.samples, a.sample_rate, 60.0, 600.0) for a in (original, moved)))
            assert 1.1 < shift.formant_ratio < 1.3 and shift.f0_ratio > 1.2
        assert voice_praat_group(moved.samples, moved.sample_rate) == group


def test_the_age_sham_is_the_other_directions_arm_on_the_source_group():
    from harness.data.voice_transforms.age_shift import OLDER, YOUNGER
    from harness.data.voice_transforms.sham import AGE_SHAM

    # the swap moves a young voice older; its sham moves it younger, as far, and keeps it young
    assert AGE_SHAM.arm("young") == YOUNGER and AGE_SHAM.arm("elderly") == OLDER
    assert AGE_SHAM.target_group("young") == "young" and sham_of(get_transform("age_shift")) == AGE_SHAM.name
    with pytest.raises(ValueError, match="cannot shift age group '40s'"):
        AGE_SHAM.target_group("40s")
