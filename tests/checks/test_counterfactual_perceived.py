"""The counterfactual check's perceived-group filter and unmeasured rule (voice:praat as the perceiver, on
synthetic voices moved by the real transforms) and the validated ``counterfactual`` thresholds section."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core.errors import CaseNotMeasured
from harness.core.requests import Audio
from harness.data.voice_transforms import ChangeGenderSettings, get_transform
from harness.models.voice_profile import TOO_SHORT, VoiceMeasures, describe_voice
from harness.perception import (
    UNMEASURED_REASON,
    group_from_voice_description,
    perceive_with_voice_praat,
    perceived_filter,
    require_perceived_swap,
)
from harness.thresholds import ThresholdsError, load_thresholds, packaged_thresholds

RATE = 16_000


def synthetic_voice(f0_hz: float, seconds: float = 1.2) -> Audio:
    """A pulse train at ``f0_hz`` through resonators at 600 and 1200 Hz."""
    n = int(seconds * RATE)
    phase = np.cumsum(np.full(n, f0_hz / RATE))
    wave = np.zeros(n)
    wave[np.flatnonzero(np.diff(np.floor(phase), prepend=0.0) > 0)] = 1.0
    for formant in (600.0, 1200.0):
        radius = np.exp(-np.pi * 80.0 / RATE)
        wave = lfilter([1 - radius], [1, -2 * radius * np.cos(2 * np.pi * formant / RATE), radius**2], wave)
    return Audio((0.5 * wave / np.max(np.abs(wave))).astype(np.float32), RATE)


def packaged_settings() -> ChangeGenderSettings:
    return ChangeGenderSettings.from_settings(
        packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    )


@pytest.mark.parametrize(("f0", "group"), [(110.0, "male"), (200.0, "female"), (300.0, "child")])
def test_voice_praat_descriptions_name_a_group(f0, group):
    assert group_from_voice_description(describe_voice(VoiceMeasures(2.0, 100, f0, 6.0))) == group


def test_a_voice_praat_cannot_tell_has_no_group():
    assert group_from_voice_description(TOO_SHORT) is None


def test_voice_praat_perceives_the_swap_as_the_target_and_identity_as_the_source():
    pytest.importorskip("parselmouth")
    settings = packaged_settings()
    male, female = synthetic_voice(115.0), synthetic_voice(215.0)
    identity, swap = get_transform("identity"), get_transform("gender_swap")
    arms = [
        identity.apply(male, "male", settings),
        swap.apply(male, "male", settings),
        identity.apply(female, "female", settings),
        swap.apply(female, "female", settings),
    ]
    assert perceive_with_voice_praat(arms) == ["male", "female", "female", "male"]


def clips(perceived: list[str | None], source: str = "male", target: str = "female") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "recording": [f"{source}-{index}" for index in range(len(perceived))],
            "source_group": source,
            "target_group": target,
            "perceived_group": perceived,
        }
    )


def test_filter_keeps_only_swaps_perceived_as_the_target_and_counts_the_rest():
    table = pd.concat([clips(["female"] * 9 + [None]), clips(["male"] * 4 + ["female"], "female", "male")])
    result = perceived_filter(table)
    assert result.kept == {f"male-{index}" for index in range(9)} | {"female-0", "female-1", "female-2", "female-3"}
    assert result.excluded == {"female -> male": 1, "male -> female": 1}
    assert result.shares.loc[("male", "female"), "share"] == 0.9
    require_perceived_swap(result, 0.8, "counterfactual[demo-gender-story]", "voice:praat")


def test_a_direction_below_the_share_makes_the_case_unmeasured_naming_it():
    table = pd.concat([clips(["female"] * 10), clips(["female"] * 3 + ["male"] * 2, "female", "male")])
    with pytest.raises(CaseNotMeasured) as error:
        require_perceived_swap(perceived_filter(table), 0.8, "counterfactual[demo-gender-story]", "voice:praat")
    message = str(error.value)
    assert UNMEASURED_REASON in message and "female -> male: 2 of 5 (40%)" in message
    assert "male -> female" not in message and "voice:praat" in message and "80%" in message


def test_a_recording_listed_twice_is_refused():
    with pytest.raises(ValueError, match="recording 'male-0' is listed twice"):
        perceived_filter(pd.concat([clips(["female"]), clips(["female"])]))


def test_packaged_section_is_valid_and_reaches_the_transform():
    packaged = packaged_thresholds()
    section_only = dataclasses.replace(packaged, raw={SECTION: packaged.raw[SECTION]}, notes=[])
    section_only.validate({SECTION: COUNTERFACTUAL_SCHEMA}, {}, ["gender"])
    settings = packaged_settings()
    assert 1.15 <= settings.male_to_female_formant_ratio <= 1.2 and 200 <= settings.male_to_female_pitch_hz <= 220
    assert settings.female_to_male_formant_ratio == 0.85 and 110 <= settings.female_to_male_pitch_hz <= 120


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("transform: neural", "counterfactual.defaults.transform = 'neural' is not a registered voice transform"),
        ("male_to_female_formant_ratio: 2.0", "male_to_female_formant_ratio = 2.0 must lie in \\[1, 1.5\\]"),
        ("min_perceived_share: 0", "min_perceived_share = 0 must lie in \\(0, 1\\]"),
        ("n_permutations: 10", "n_permutations = 10 must be >= 99"),
        ("rule: majority", "counterfactual.defaults.rule = 'majority' is not one of both, significance"),
        ("max_flips: 3", "unknown key 'max_flips'"),
    ],
)
def test_bad_values_are_refused_naming_the_key(tmp_path, block, message):
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"counterfactual:\n  defaults:\n    {block}\n")
    with pytest.raises(ThresholdsError, match=message):
        load_thresholds(path).validate({SECTION: COUNTERFACTUAL_SCHEMA}, {}, ["gender"])


def test_the_gate_validates_the_section(tmp_path):
    from harness.gate import Gate, GateConfig

    path = tmp_path / "thresholds.yaml"
    path.write_text("counterfactual:\n  dimensions:\n    gender: {max_ntvd: 15.0}\n")
    gate = Gate(GateConfig(thresholds_path=str(path)))
    assert gate.thresholds.values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")["max_ntvd"] == 15.0
    path.write_text("counterfactual:\n  defaults: {min_perceived_share: 1.5}\n")
    with pytest.raises(ThresholdsError, match="min_perceived_share = 1.5"):
        Gate(GateConfig(thresholds_path=str(path)))
    assert Path(packaged_thresholds().source.split(": ", 1)[1].rstrip(">")).name == "thresholds.yaml"


def test_the_vibe_preset_judges_counterfactual_cases_by_significance():
    from harness.thresholds import load_thresholds

    preset = load_thresholds("preset:vibe")
    assert preset.values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")["rule"] == "significance"
    assert packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")["rule"] == "both"
