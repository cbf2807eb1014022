"""The WORLD age arms of the counterfactual check (issue 61): on demo recordings of both registers the older arm
moves F0 the way its register ages (down above voice:praat's 160 Hz boundary, up below it) and every formant down,
the younger arm the other way, and the identity control stays within its artefact bound; the older arm's jitter,
tremor and breathiness show in Praat's measures; the recipe names the transform's code and pyworld's version, so a
baseline made with other code or another WORLD is not compared."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import shutil
import types
from pathlib import Path

import numpy as np
import pytest

from harness.checks.counterfactual.check import arms_protocol_difference
from harness.checks.counterfactual.manipulation import arm_shift, manipulation_checks, moved_as_planned, voice_tracks
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core.requests import Audio
from harness.data.corpus import load_corpus, read_utterance_audio
from harness.data.voice_transforms import (
    VOICE_TRANSFORMS,
    VoiceTransformError,
    control_of,
    get_transform,
    resynthesiser_of,
)
from harness.data.voice_transforms import age_shift as age_module
from harness.data.voice_transforms.age_shift import OLDER, WorldChange, arm_change, world_resynthesise
from harness.thresholds import packaged_thresholds

pyworld = pytest.importorskip("pyworld")

DEMO_FOLDER = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"
parselmouth = pytest.importorskip("parselmouth")

DEMO_RECORDINGS = ("spk02_s09", "spk05_s02", "spk04_s05", "spk19_s02")
"""Two high (female, about 220 Hz) and two low (male, about 90-115 Hz) demo voices."""


@pytest.fixture(scope="module")
def bounds():
    return packaged_thresholds().settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "age")


@pytest.fixture(scope="module")
def settings(bounds):
    return dataclasses.replace(bounds, transform="age_shift").transform_settings()


@pytest.fixture(scope="module")
def demo():
    return load_corpus(DEMO_FOLDER)


def shifts(audio: Audio, group: str, settings):
    """The identity and age arms' :class:`ArmShift` from ``audio`` and the age arm's planned change."""
    tracks = [voice_tracks(clip.samples, clip.sample_rate, 60.0, 600.0) for clip in (audio,)]
    made = {name: get_transform(name).apply(audio, group, settings) for name in ("world_identity", "age_shift")}
    arms = {name: arm_shift(tracks[0], voice_tracks(arm.samples, arm.sample_rate, 60.0, 600.0)) for name, arm in made.items()}  # fmt: skip
    return arms, get_transform("age_shift").planned_change(audio, group, settings), made


def test_the_age_transforms_are_registered_with_their_world_control():
    assert {"age_shift", "world_identity"} <= set(VOICE_TRANSFORMS)
    age = get_transform("age_shift")
    assert control_of(age) == "world_identity" and control_of(get_transform("gender_swap")) == "identity"
    assert (age.dimension, age.target_group("young"), age.target_group("elderly")) == ("age", "elderly", "young")
    with pytest.raises(VoiceTransformError, match="cannot shift age group 'twenties'.*elderly.*young"):
        age.target_group("twenties")


@pytest.mark.parametrize("utterance", DEMO_RECORDINGS)
def test_the_age_arms_move_f0_and_formants_the_planned_way_and_the_identity_stays_within_its_bound(
    demo, settings, bounds, utterance
):
    audio = read_utterance_audio(demo, utterance)
    high = demo.table.at[utterance, "gender"] == "female"
    for group, older in (("young", True), ("elderly", False)):
        arms, plan, made = shifts(audio, group, settings)
        assert len(made["age_shift"].samples) == len(audio.samples)
        identity, arm = arms["world_identity"], arms["age_shift"]
        assert abs(math.log(identity.f0_ratio)) <= math.log1p(bounds.max_identity_shift)
        assert abs(math.log(identity.formant_ratio)) <= math.log1p(bounds.max_identity_shift)
        # The older arm lowers a high voice's F0 and raises a low voice's (Linville 2001; Hollien & Shipp 1972);
        # the younger arm does the opposite; both move F1-F3 together, down for the older arm.
        f0_down = high == older
        assert (plan.f0_factor < 1) == f0_down and (arm.f0_ratio < 1) == f0_down, (group, arm)
        assert all((ratio < 1) == older for ratio in arm.formant_ratios), (group, arm)
        assert moved_as_planned(arm.f0_ratio, plan.f0_factor, bounds.min_manipulation_shift)


def test_the_manipulation_checks_admit_a_moved_arm_and_refuse_an_unmoved_one(demo, settings, bounds):
    import pandas as pd

    keys = list(DEMO_RECORDINGS[:2])
    originals = {key: read_utterance_audio(demo, key) for key in keys}
    identity = {
        key: get_transform("world_identity").apply(audio, "young", settings) for key, audio in originals.items()
    }
    swap = {keys[0]: get_transform("age_shift").apply(originals[keys[0]], "young", settings), keys[1]: identity[keys[1]]}  # fmt: skip
    recordings = pd.DataFrame({"source_group": "young", "target_group": "elderly"}, index=keys)
    checks = manipulation_checks(
        recordings,
        {"original": originals, "identity": identity, "swap": swap},
        get_transform("age_shift"),
        settings,
        min_shift=bounds.min_manipulation_shift,
        max_identity_shift=bounds.max_identity_shift,
    )
    assert checks.admitted == {keys[0]}
    [summary] = checks.summary()
    assert (summary["clips"], summary["admitted"]) == (2, 1) and summary["identity_f0_ratio"] == pytest.approx(
        1, abs=0.03
    )


def test_the_older_arms_jitter_tremor_and_breathiness_show_in_praats_measures(demo, settings):
    audio = read_utterance_audio(demo, "spk05_s02")
    plain = arm_change(OLDER, 200.0, settings)
    quiet = dataclasses.replace(plain, jitter=0.0, tremor_depth=0.0, breathiness=0.0)
    shaky = dataclasses.replace(quiet, jitter=0.03)
    trembling = dataclasses.replace(quiet, tremor_hz=5.0, tremor_depth=0.08)
    breathy = dataclasses.replace(quiet, breathiness=0.8)
    made = {name: world_resynthesise(audio, lambda _f0, c=change: c, settings, seed=1) for name, change in (("quiet", quiet), ("shaky", shaky), ("trembling", trembling), ("breathy", breathy))}  # fmt: skip
    sounds = {name: parselmouth.Sound(clip.samples.astype(np.float64), clip.sample_rate) for name, clip in made.items()}
    call = parselmouth.praat.call

    def jitter(sound):
        pulses = call(sound, "To PointProcess (periodic, cc)", 60, 600)
        return call(pulses, "Get jitter (local)", 0, 0, 0.0001, 0.02, 1.3)

    def hnr(sound):
        return call(sound.to_harmonicity_cc(), "Get mean", 0, 0)

    def f0_spread(sound):
        f0 = sound.to_pitch_ac(time_step=0.01, pitch_floor=60, pitch_ceiling=600).selected_array["frequency"]
        return float(np.std(np.diff(np.log(f0[f0 > 0]))))

    assert jitter(sounds["shaky"]) > 1.25 * jitter(sounds["quiet"])
    assert hnr(sounds["breathy"]) < hnr(sounds["quiet"]) - 2.0
    assert f0_spread(sounds["trembling"]) > f0_spread(sounds["quiet"])


def test_f0_range_factor_widens_the_contour_about_its_median(demo, settings):
    audio = read_utterance_audio(demo, "spk05_s02")
    spreads = {}
    for factor in (1.0, 1.5):
        clip = world_resynthesise(audio, lambda _f0, f=factor: WorldChange(f0_range_factor=f), settings, seed=2)
        f0 = voice_tracks(clip.samples, clip.sample_rate, 60.0, 600.0)[0]
        spreads[factor] = np.subtract(*np.percentile(np.log(f0[f0 > 0]), [90, 10]))  # 10-90% range of log F0
    assert 1.3 < spreads[1.5] / spreads[1.0] < 1.7


def test_the_recipe_names_the_code_and_pyworlds_version_and_another_is_not_compared(demo, settings, monkeypatch):
    age = get_transform("age_shift")
    assert resynthesiser_of(age) == f"pyworld-prebuilt {importlib.metadata.version('pyworld-prebuilt')}"
    assert resynthesiser_of(get_transform("gender_swap")) == resynthesiser_of(get_transform("identity"))
    fingerprint = age.fingerprint(settings)
    monkeypatch.setattr(age_module, "world_version", lambda: "0.0.0")
    assert age.fingerprint(settings) != fingerprint
    monkeypatch.undo()
    assert age.fingerprint(dataclasses.replace(settings, older_jitter=0.05)) != fingerprint
    record = dict(
        transform="age_shift",
        perceiver="judge:x",
        transform_source={"age_shift": age.source_hash(), "world_identity": get_transform("world_identity").source_hash()},
        resynthesiser=resynthesiser_of(age),
        perceiver_fingerprint="judge:1",
        transform_settings=dataclasses.asdict(settings),
    )  # fmt: skip
    candidate = types.SimpleNamespace(**record)
    assert arms_protocol_difference(candidate, types.SimpleNamespace(**record)) is None
    older_world = types.SimpleNamespace(**{**record, "resynthesiser": "pyworld-prebuilt 0.3.4"})
    assert "resynthesiser 'pyworld-prebuilt 0.3.4'" in arms_protocol_difference(candidate, older_world)
    other_code = types.SimpleNamespace(**{**record, "transform_source": {"age_shift": "0" * 16}})
    assert "transform source hash" in arms_protocol_difference(candidate, other_code)


def test_the_suite_builders_transform_bank_makes_an_older_voice_with_the_age_settings():
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    from harness.suite.banks import checked_bank
    from harness.suite.errors import SuiteError
    from harness.suite.voices import parse_voice_spec

    spec = "transform:age_shift[source=espeak-ng:en-us+f1[pitch=60],source_group=young]@age=elderly"
    voice = parse_voice_spec(spec)
    bank = checked_bank(voice)
    made, rate = bank.synthesise(voice, "The bus leaves at half past seven.")
    assert np.array_equal(made, bank.synthesise(voice, "The bus leaves at half past seven.")[0])
    assert bank.recipe_parts(voice)["synthesiser"].startswith("age_shift:") and rate == 16_000
    with pytest.raises(SuiteError, match="age_shift makes a young voice elderly, but the voice declares age=young"):
        checked_bank(parse_voice_spec(spec.replace("@age=elderly", "@age=young")))
