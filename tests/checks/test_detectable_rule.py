"""A PASS the design could have failed (issue 57): every contrast states its detectable effect at the corrected alpha
it is judged at, and a case that does not fail passes only when each contrast's estimate and p are finite, its
design reaches alpha and it detects its bar (:func:`harness.checks.verdict.bias_decision`).

Known truth: hand-built contrasts, the 12-per-direction paired ASR design of the issue (exact p, never passed beyond
the bar), a two-speaker design (unmeasured within its bar), the NaN counterfactual case (now defined), and a
property over generated pathological contrasts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks.case import Case
from harness.checks.verdict import bias_decision, untestable_message
from harness.metrics.counterfactual import OTHER_VALUE, arm_ntvd
from harness.metrics.detectable import NullSensitivity, WaldSensitivity
from harness.metrics.multitest import DecisionRule
from harness.metrics.permutation_floor import SIGN_FLIP, PermutationFloor
from harness.metrics.sign_flip import paired_permutation_test, sign_flip_sensitivity
from harness.records import Contrast
from tests.checks.test_testability import RuleOnly

CASE = Case(check="counterfactual", model="m", corpus="demo", dimension="gender", variant="asr", id="m-asr")
GATE = DecisionRule(alpha=0.05, family_size=43)
"""The default demo gate's rule: 43 cases of one model, family-wise alpha 0.05."""


def absolute_mean(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.abs((second - first)[:, 0])


def asr_contrast(shift: np.ndarray, bar: float = 10.0, permutations: int = 10_000) -> Contrast:
    """One direction of the paired ASR test: each speaker's identity-arm WER 20, its swap arm 20 + ``shift``."""
    first = np.full((len(shift), 1), 20.0)
    test = paired_permutation_test(first, first + shift[:, None], absolute_mean, permutations, seed=1)
    change = float(np.sum(shift))
    return Contrast.with_floor(
        "speakers",
        change / len(shift),
        test.p_value,
        abs(change / len(shift)) > bar,
        test.floor,
        bar=bar,
        sensitivity=sign_flip_sensitivity(test, "speakers in the direction"),
    )


def mean_shift_contrast(shift: np.ndarray, bar: float = 10.0) -> Contrast:
    """:func:`asr_contrast` on the estimate's own scale: the statistic is the mean shift per speaker (points)."""
    first = np.full((len(shift), 1), 20.0)
    speakers = len(shift)
    test = paired_permutation_test(
        first, first + shift[:, None], lambda a, b: absolute_mean(a, b) / speakers, 10_000, seed=1
    )
    mean = float(np.mean(shift))
    return Contrast.with_floor(
        "speakers", mean, test.p_value, abs(mean) > bar, test.floor, bar=bar,
        sensitivity=sign_flip_sensitivity(test, "speakers in the direction"),
    )  # fmt: skip


def decide(contrasts, rule="both", decision_rule=GATE):
    return bias_decision(RuleOnly(decision_rule), CASE, contrasts, rule=rule, statistic="test")


def test_a_unanimous_twenty_point_swap_over_twelve_speakers_fails_every_time():
    """The issue's case: 12 speakers per direction, +20 points (bar 10), two directions in a 43-case gate. 2^12 =
    4,096 patterns <= B, so the p is exact (2 / 4096 = 0.000488 <= 0.05 / 86): the case fails in every run, where
    Monte Carlo draws passed it in 21 of 40."""
    contrasts = [asr_contrast(np.full(12, 20.0)), asr_contrast(np.full(12, 20.0))]
    assert contrasts[0].p == 2 / 4096
    for seed in range(5):  # no seed reaches the exact test
        decision, block = decide(contrasts)
        assert decision.failed, seed
    assert not block.untestable


def test_a_two_speaker_design_is_unmeasured_within_its_bar():
    """Two speakers per direction cannot reach the corrected alpha (p >= 2/4): a case within its bar is not passed."""
    contrasts = [asr_contrast(np.array([1.0, -1.0])), asr_contrast(np.array([0.5, 0.5]))]
    decision, block = decide(contrasts)
    assert not decision.failed and set(block.untestable) == {"speakers"}
    assert "cannot reach the corrected alpha" in untestable_message("m-asr", block.contrasts, block.untestable, "both")


def test_a_design_whose_speakers_did_not_all_move_is_judged_at_the_design():
    """The demo's ASR swap: 13 speakers in a direction, two of them transcribed alike on both arms under the null.
    The draw's floor (11 movers: 2 / 2048) cannot reach 0.05 / 86, but an effect at the bar moves all 13 (2 / 8192
    can): the case passes on what the design detects, where counting the movers made it flicker between powered
    and unreachable across seeds. Two speakers per direction stay unmeasured whatever moved."""
    noise = np.array([1.0, -0.5, 0.8, -1.2, 0.3, 0.6, -0.9, 1.1, -0.4, 0.7, -0.2, 0.0, 0.0])
    contrasts = [mean_shift_contrast(noise), mean_shift_contrast(noise[::-1].copy())]
    assert contrasts[0].floor.units == (11,) and contrasts[0].floor.min_p > GATE.corrected_alpha(2)
    decision, block = decide(contrasts)
    assert not decision.failed and block.untestable == ()
    assert all(c.powered and c.detectable < 10 for c in block.contrasts)
    few = [mean_shift_contrast(np.array([0.5, 0.0])), mean_shift_contrast(np.array([0.0, 0.0]))]
    _, block = decide(few)
    assert block.untestable and not any(c.powered for c in block.contrasts)


def test_the_stated_detectable_effect_is_detected_at_least_four_times_in_five():
    """At a true shift equal to the stated detectable effect, the paired test (12 speakers, noise sd 6) fails the case
    in >= 75% of 200 seeds at the gate's corrected alpha; at half of it, the case is underpowered for a bar there."""
    rng = np.random.default_rng(0)
    alpha = GATE.corrected_alpha(1)
    noise = rng.normal(0.0, 6.0, size=(200, 12))
    stated = asr_contrast(noise[0]).sensitivity.detectable(alpha)
    assert math.isfinite(stated)
    detected = 0
    for draw in noise:
        contrast = asr_contrast(draw + stated, bar=0.5 * stated, permutations=4096)
        decision, _ = decide([contrast], decision_rule=DecisionRule(alpha=0.05, family_size=43))
        detected += decision.failed
    assert detected >= 150, detected


def test_a_non_finite_estimate_or_p_cannot_pass():
    floor = PermutationFloor(test=SIGN_FLIP, units=(20,), permutations=None)
    for estimate, p in [(math.nan, 0.5), (math.inf, 0.001), (1.0, math.nan), (1.0, None)]:
        contrast = Contrast.with_floor(
            "x", estimate, p, bool(estimate > 10), floor, bar=10.0, sensitivity=WaldSensitivity(1.0)
        )
        decision, block = decide([contrast])
        assert not decision.failed and block.untestable == ("x",), (estimate, p)


def test_an_underpowered_contrast_is_unmeasured_and_says_how_many_speakers_the_bar_needs():
    contrast = Contrast(
        "female - male", 3.0, -30.0, 36.0, 0.9, False, bar=20.0, sensitivity=WaldSensitivity(16.0, units=2)
    )
    decision, block = decide([contrast])
    judged = block.contrasts[0]
    # (z_{1 - a/2} + z_0.8) se at a = 0.05 / 43 by hand
    from scipy.stats import norm

    expected = (norm.isf(0.05 / 43 / 2) + norm.ppf(0.8)) * 16.0
    assert judged.detectable == pytest.approx(expected) and judged.powered is False
    assert block.untestable == ("female - male",)
    message = untestable_message("c", block.contrasts, block.untestable, "both")
    needed = math.ceil(2 * (expected / 20.0) ** 2)
    assert f"detects {expected:.3g}" in message and f"about {needed} speakers per group" in message
    assert judged.to_json()["detectable"] == pytest.approx(expected) and judged.to_json()["powered"] is False


def test_a_powered_contrast_within_its_bar_passes():
    contrast = Contrast("d", 1.0, -2.0, 4.0, 0.6, False, bar=20.0, sensitivity=WaldSensitivity(1.5))
    decision, block = decide([contrast])
    assert not decision.failed and not block.untestable and block.contrasts[0].powered is True


def test_the_nan_counterfactual_case_is_defined():
    """The issue's case: the swap moves all 336 answers onto one value while the identity arm's values are each rarer
    than tau. Pooling the rare values into '(other)' keeps the attribute: nTVD 100, not NaN."""
    rows = []
    for speaker in range(12):
        for recording in range(28):
            key = f"s{speaker}r{recording}"
            rows.append((f"s{speaker}", key, "identity", "male", "job", f"job{speaker * 28 + recording}"))
            rows.append((f"s{speaker}", key, "swap", "male", "job", "nurse"))
    table = pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])
    result = arm_ntvd(table, tau=10, n_permutations=999, seed=0)
    assert result.score == pytest.approx(100.0)
    assert OTHER_VALUE in set(result.distributions.index.get_level_values("value"))


def test_the_exact_critical_value_is_infinite_where_the_design_cannot_reach_alpha():
    null = np.array([0.0, 1.0, 1.0, 2.0])  # four equally likely patterns
    assert NullSensitivity(null, exact=True).critical(0.25) == 2.0
    assert math.isinf(NullSensitivity(null, exact=True).detectable(0.2))


@settings(max_examples=200, deadline=None)
@given(
    estimate=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()),
    p=st.one_of(st.floats(0, 1), st.just(math.nan), st.none()),
    se=st.one_of(st.floats(0, 100), st.just(math.nan)),
    bar=st.floats(0.1, 50),
    units=st.lists(st.integers(0, 14), min_size=1, max_size=3),
    family=st.integers(1, 60),
    rule=st.sampled_from(["both", "significance"]),
)
def test_no_pass_without_a_finite_powered_reachable_contrast(estimate, p, se, bar, units, family, rule):
    """The contract over generated pathological contrasts: NaN or infinite estimates and p-values, zero-unit and
    two-speaker designs, undefined standard errors."""
    floor = PermutationFloor(test=SIGN_FLIP, units=tuple(units), permutations=9_999)
    relevant = estimate is not None and math.isfinite(estimate) and abs(estimate) > bar
    contrast = Contrast.with_floor("c", estimate, p, relevant, floor, bar=bar, sensitivity=WaldSensitivity(se))
    decision, block = decide([contrast], rule=rule, decision_rule=DecisionRule(family_size=family))
    if not decision.failed and not block.untestable:
        judged = block.contrasts[0]
        assert judged.estimate is not None and math.isfinite(judged.estimate)
        assert judged.p is not None and math.isfinite(judged.p)
        assert judged.powered is True and judged.detectable <= bar
        assert floor.min_p * family <= 0.05 * (1 + 1e-9)
