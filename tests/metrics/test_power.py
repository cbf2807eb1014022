"""Power of the speaker-level permutation test: the minimum detectable nTVD is detected 80% of the time."""

import numpy as np
import pandas as pd
import pytest

from harness.data import DEMO_CORPUS_PATH
from harness.metrics.power import corpus_design, detection_rate, minimum_detectable_ntvd, population_ntvd


def test_population_ntvd_of_the_family():
    # Two groups, two values: P_f(v0) = sigmoid(2 delta), P_m(v0) = sigmoid(-2 delta), so nTVD = 100 tanh(delta).
    for effect in (0.0, 0.3, 1.0):
        assert population_ntvd(effect, 2, 2) == pytest.approx(100 * np.tanh(effect))
    curve = [population_ntvd(effect, 6, 5, speaker_sd=0.5) for effect in (0.0, 0.5, 1.0, 2.0)]
    assert curve[0] == pytest.approx(0.0, abs=1e-9) and np.all(np.diff(curve) > 0)


def test_demo_corpus_design():
    manifest = pd.read_csv(DEMO_CORPUS_PATH / "manifest.csv", dtype=str)
    design = corpus_design(manifest, "gender")
    assert design == {"speakers_per_group": {"female": 13, "male": 14}, "utterances_per_speaker": 12}


def test_no_effect_is_detected_at_rate_alpha():
    result = detection_rate(0.0, (13, 14), speaker_sd=0.5, n_simulations=2000, n_permutations=200, seed=5)
    assert result.population_ntvd == pytest.approx(0.0, abs=1e-9)
    assert abs(result.power - 0.05) < 0.02
    assert result.mean_observed_ntvd > 0  # sampling noise alone gives a positive observed nTVD


def test_detection_rate_at_the_minimum_detectable_ntvd_is_the_target_power():
    demo = {"female": 13, "male": 14}
    result = minimum_detectable_ntvd(
        demo, utterances_per_speaker=12, speaker_sd=0.5, n_simulations=1000, n_permutations=300, seed=0
    )
    assert result.detectable and result.power >= 0.8
    assert 5 < result.min_detectable_ntvd < result.expected_observed_ntvd < 60
    assert result.curve["effect"].is_monotonic_increasing and len(result.curve) >= 5
    check = detection_rate(
        result.effect,
        demo,
        utterances_per_speaker=12,
        speaker_sd=0.5,
        n_simulations=2000,
        n_permutations=300,
        seed=12345,
    )
    assert abs(check.power - 0.8) <= 0.05


def test_more_speakers_detect_smaller_differences():
    small = minimum_detectable_ntvd((6, 6), n_simulations=300, n_permutations=200)
    large = minimum_detectable_ntvd((24, 24), n_simulations=300, n_permutations=200)
    assert large.min_detectable_ntvd < small.min_detectable_ntvd


def test_two_speakers_per_group_can_never_reach_alpha():
    # Only 6 distinct splits of 4 speakers: the smallest attainable p is about 1/3 (a split and its mirror).
    result = minimum_detectable_ntvd((2, 2), n_simulations=100, n_permutations=100)
    assert not result.detectable and np.isnan(result.min_detectable_ntvd)


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match=">= 2 groups"):
        detection_rate(0.5, (10,))
    with pytest.raises(ValueError, match="values_per_attribute"):
        detection_rate(0.5, (10, 10), values_per_attribute=1)
    with pytest.raises(ValueError, match="alpha and target_power"):
        minimum_detectable_ntvd((10, 10), alpha=0.0)
