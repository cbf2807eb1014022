"""The voice transforms of the counterfactual check on synthetic voices of known F0 and formants: the identity
arm keeps F0, a gender swap moves the median F0 to its target and the formants by its ratio."""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import importlib.metadata
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.signal import lfilter

from harness.cache import OutputCache, cache_key
from harness.core.requests import Audio, GenerationRequest
from harness.core.values import stable_hash
from harness.data import voice_transforms
from harness.data.corpus import load_corpus, read_utterance_audio
from harness.data.voice_transforms import (
    VOICE_TRANSFORMS,
    ChangeGenderSettings,
    VoiceTransformError,
    get_transform,
    source_recording,
)
from harness.models.cascade import ASR_DECODING, DEMO_ASR

parselmouth = pytest.importorskip("parselmouth")

REPO = Path(__file__).resolve().parents[2]
SHIPPED_EXPORT = REPO / "harness" / "data" / "demo_outputs" / "cascade-demo.jsonl.gz"
RATE = 16_000
SETTINGS = ChangeGenderSettings(
    pitch_floor_hz=60.0,
    pitch_ceiling_hz=600.0,
    male_to_female_formant_ratio=1.18,
    male_to_female_pitch_hz=210.0,
    female_to_male_formant_ratio=0.85,
    female_to_male_pitch_hz=115.0,
)
MALE = (120.0, (600.0, 1200.0))
FEMALE = (210.0, (720.0, 1420.0))


def synthetic_voice(f0_hz: float, formants_hz: tuple[float, ...], seconds: float = 1.5) -> Audio:
    """A glottal pulse train at ``f0_hz`` through one two-pole resonator per formant (bandwidths 80-90 Hz)."""
    n = int(seconds * RATE)
    phase = np.cumsum(np.full(n, f0_hz / RATE))
    wave = np.zeros(n)
    wave[np.flatnonzero(np.diff(np.floor(phase), prepend=0.0) > 0)] = 1.0
    for formant, bandwidth in zip(formants_hz, (80.0, 90.0)):
        radius = np.exp(-np.pi * bandwidth / RATE)
        wave = lfilter([1 - radius], [1, -2 * radius * np.cos(2 * np.pi * formant / RATE), radius**2], wave)
    return Audio((0.5 * wave / np.max(np.abs(wave))).astype(np.float32), RATE)


def median_f0(audio: Audio) -> float:
    pitch = parselmouth.Sound(audio.samples.astype(np.float64), RATE).to_pitch_ac(
        time_step=0.01, pitch_floor=60.0, pitch_ceiling=600.0
    )
    f0 = pitch.selected_array["frequency"]
    return float(np.median(f0[f0 > 0]))


def formants(audio: Audio) -> np.ndarray:
    """Median F1 and F2 (Burg, five formants below 5.5 kHz) over the clip's steady middle."""
    track = parselmouth.Sound(audio.samples.astype(np.float64), RATE).to_formant_burg(
        time_step=0.01, max_number_of_formants=5, maximum_formant=5500.0
    )
    times = np.arange(0.2, audio.duration_s - 0.2, 0.05)
    return np.array([np.nanmedian([track.get_value_at_time(i, t) for t in times]) for i in (1, 2)])


def test_both_transforms_are_registered():
    assert {"identity", "gender_swap"} <= set(VOICE_TRANSFORMS)
    with pytest.raises(VoiceTransformError, match="unknown voice transform 'neural'.*identity"):
        get_transform("neural")


@pytest.mark.parametrize(("group", "voice"), [("male", MALE), ("female", FEMALE)])
def test_identity_keeps_f0_formants_and_length(group, voice):
    original = synthetic_voice(*voice)
    arm = get_transform("identity").apply(original, group, SETTINGS)
    assert get_transform("identity").target_group(group) == group
    assert arm.sample_rate == RATE and len(arm.samples) == len(original.samples)
    assert median_f0(arm) == pytest.approx(voice[0], rel=0.02)
    np.testing.assert_allclose(formants(arm), formants(original), rtol=0.02)


@pytest.mark.parametrize(
    ("group", "voice", "target", "ratio", "pitch"),
    [
        ("male", MALE, "female", SETTINGS.male_to_female_formant_ratio, SETTINGS.male_to_female_pitch_hz),
        ("female", FEMALE, "male", SETTINGS.female_to_male_formant_ratio, SETTINGS.female_to_male_pitch_hz),
    ],
)
def test_gender_swap_moves_f0_to_target_and_formants_by_the_ratio(group, voice, target, ratio, pitch):
    original = synthetic_voice(*voice)
    swap = get_transform("gender_swap")
    arm = swap.apply(original, group, SETTINGS)
    assert swap.target_group(group) == target
    assert len(arm.samples) == len(original.samples)
    assert median_f0(arm) == pytest.approx(pitch, rel=0.10)
    np.testing.assert_allclose(formants(arm) / formants(original), [ratio, ratio], rtol=0.06)


def test_swap_refuses_a_group_it_does_not_know():
    with pytest.raises(VoiceTransformError, match="cannot swap gender group 'child'.*female.*male"):
        get_transform("gender_swap").apply(synthetic_voice(*MALE), "child", SETTINGS)


def test_settings_name_a_missing_key_and_enter_the_fingerprint():
    with pytest.raises(VoiceTransformError, match="lack \\['female_to_male_pitch_hz'\\]"):
        ChangeGenderSettings.from_settings(
            {key: value for key, value in vars(SETTINGS).items() if key != "female_to_male_pitch_hz"}
        )
    swap = get_transform("gender_swap")
    lower = ChangeGenderSettings(**{**vars(SETTINGS), "male_to_female_pitch_hz": 200.0})
    assert swap.fingerprint(SETTINGS) != swap.fingerprint(lower)
    assert swap.fingerprint(SETTINGS) != get_transform("identity").fingerprint(SETTINGS)


def test_an_arm_remembers_the_recording_it_was_made_from():
    original = synthetic_voice(*MALE)
    identity = get_transform("identity").apply(original, "male", SETTINGS)
    twice = get_transform("gender_swap").apply(identity, "male", SETTINGS)
    assert source_recording(original) is None
    assert source_recording(identity) == original.content_hash
    assert source_recording(twice) == original.content_hash


def test_an_arm_is_identified_by_its_recipe_not_by_the_last_bits_of_its_samples():
    """Praat's resynthesis may differ in the last bits between CPUs: the same recipe must name the same arm."""
    original, swap = synthetic_voice(*MALE), get_transform("gender_swap")
    arm = swap.apply(original, "male", SETTINGS)
    elsewhere = Audio(np.nextafter(arm.samples, np.float32(np.inf)), arm.sample_rate, recipe=arm.recipe)
    assert elsewhere.samples.dtype == np.float32 and not np.array_equal(elsewhere.samples, arm.samples)
    assert swap.apply(original, "male", SETTINGS).content_hash == arm.content_hash == elsewhere.content_hash
    assert Audio(elsewhere.samples, RATE).content_hash != Audio(arm.samples, RATE).content_hash
    lower = ChangeGenderSettings(**{**vars(SETTINGS), "male_to_female_pitch_hz": 200.0})
    others = [
        swap.apply(original, "male", lower),
        get_transform("identity").apply(original, "male", SETTINGS),
        swap.apply(synthetic_voice(130.0, MALE[1]), "male", SETTINGS),
    ]
    assert len({arm.content_hash, *(other.content_hash for other in others)}) == 1 + len(others)


HALVING_TRANSFORM = """
from harness.core.requests import Audio
from harness.data.voice_transforms import VoiceTransform


class Halving(VoiceTransform):
    name = "halving"
    dimension = "gender"

    def target_group(self, source_group):
        return source_group

    def resynthesise(self, audio, source_group, settings, seed):
        return Audio(audio.samples * {factor}, audio.sample_rate)


TRANSFORM = Halving()
"""


def load_transform_module(folder, factor):
    (folder / "halving_transform.py").write_text(HALVING_TRANSFORM.format(factor=factor))
    sys.modules.pop("halving_transform", None)
    return importlib.import_module("halving_transform").TRANSFORM


def test_a_change_of_a_transforms_code_changes_its_recipe_so_the_answers_to_older_arms_are_not_found(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "halving_transform", raising=False)
    original, cache = synthetic_voice(*MALE), OutputCache(tmp_path / "cache")

    def key_of(arm):
        return cache_key("generate", "model", {}, GenerationRequest("Transcribe.", arm).cache_identity())

    arm = load_transform_module(tmp_path, "0.5").apply(original, "male", SETTINGS)
    cache.put_many([(key_of(arm), "generate", "model", "an answer to the halved arm", {})])
    same_code = load_transform_module(tmp_path, "0.5")
    assert same_code.apply(original, "male", SETTINGS).recipe == arm.recipe
    assert cache.lookup([key_of(same_code.apply(original, "male", SETTINGS))])
    changed = load_transform_module(tmp_path, "0.6")
    changed_arm = changed.apply(original, "male", SETTINGS)
    assert changed.source_hash() != same_code.source_hash() and changed.version == same_code.version
    assert changed_arm.recipe != arm.recipe and changed_arm.content_hash != arm.content_hash
    assert not cache.lookup([key_of(changed_arm)])


def test_the_shipped_arms_code_keeps_its_recipes_and_any_other_code_is_named_in_them(monkeypatch):
    """The code the shipped exports' arms were made by is named in no recipe (they were keyed so); once the
    transform's code differs from it, the recipe names the code."""
    for name in ("identity", "gender_swap"):
        transform = get_transform(name)
        unnamed = f"{name}:" + stable_hash(
            {
                "name": name,
                "version": transform.version,
                "settings": dataclasses.asdict(SETTINGS),
                "resynthesiser": importlib.metadata.version("praat-parselmouth"),
            }
        )
        shipped_code = voice_transforms.RECIPES_WITHOUT_SOURCE_HASH[name]
        monkeypatch.setattr(type(transform), "source_hash", lambda self, code=shipped_code: code)
        assert transform.fingerprint(SETTINGS) == unnamed
        monkeypatch.setattr(type(transform), "source_hash", lambda self: "0123456789abcdef")
        assert transform.fingerprint(SETTINGS) != unnamed
        monkeypatch.undo()


def test_a_transform_whose_code_cannot_be_read_is_an_error_naming_it(monkeypatch):
    transform = get_transform("identity")
    monkeypatch.setattr(type(transform), "source_modules", ("harness.no_such_module",))
    voice_transforms._source_hash.cache_clear()
    try:
        with pytest.raises(VoiceTransformError, match="'identity': its code cannot be read.*no_such_module"):
            transform.source_hash()
    finally:
        monkeypatch.undo()
        voice_transforms._source_hash.cache_clear()


@pytest.mark.skipif(not SHIPPED_EXPORT.is_file(), reason="no shipped demo outputs")
def test_the_shipped_export_answers_the_arms_todays_transforms_make():
    """The default run reads its counterfactual cases from the shipped export: today's code must make the arms (the
    same recipes) whose transcripts the export holds, here the ASR stage's of one demo recording's two arms."""
    provenance = json.loads((SHIPPED_EXPORT.parent / "provenance.json").read_text())
    asr_fingerprint = provenance["stage_models"][DEMO_ASR]
    thresholds = yaml.safe_load((REPO / "thresholds.yaml").read_text())
    settings = ChangeGenderSettings.from_settings(thresholds["counterfactual"]["defaults"])
    corpus = load_corpus(REPO / "harness" / "data" / "demo", check_audio=False)
    utterance = corpus.table.index[0]
    original = read_utterance_audio(corpus, utterance)
    with gzip.open(SHIPPED_EXPORT, "rt") as export:
        shipped = {json.loads(line).get("key") for line in export}
    for name in ("identity", "gender_swap"):
        arm = get_transform(name).apply(original, str(corpus.table.loc[utterance, "gender"]), settings)
        key = cache_key(
            "generate", asr_fingerprint, ASR_DECODING.as_dict(), GenerationRequest("", arm).cache_identity()
        )
        assert key in shipped, (
            f"the {name} arm of {utterance} made by today's code is not in {SHIPPED_EXPORT}: the transform's code "
            "changed since the shipped exports were made, so the default run lost its counterfactual answers; rebuild "
            "the exports (scripts/build_demo_outputs.py)"
        )
