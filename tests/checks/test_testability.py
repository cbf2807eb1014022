"""The one decide step's reach rule (issue 45): a case whose effect is beyond its bar while its test cannot reach the
corrected alpha is unmeasured, never passed, whatever the check (:func:`harness.checks.verdict.bias_decision`).

A property over random small designs (speakers per direction, directions, permutations, the family size m, alpha,
the rule) and hand-computed cases under each rule.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks.case import Case
from harness.checks.verdict import UNREACHABLE, bias_decision
from harness.metrics.multitest import DecisionRule
from harness.metrics.permutation_floor import GROUP_PERMUTATION, SIGN_FLIP, PermutationFloor
from harness.records import Contrast

CASE = Case(check="counterfactual", model="m", corpus="demo", dimension="gender", variant="asr", id="m-asr")


@dataclasses.dataclass
class RuleOnly:
    """The part of a run's context the decide step reads: the gate's decision rule."""

    rule: DecisionRule

    def decision_rule(self, model: str) -> DecisionRule:
        return self.rule


def reachable(floor: PermutationFloor, rule: DecisionRule, comparisons: int) -> bool:
    """By hand: the Bonferroni steps ``min(1, m min(1, k p)) <= alpha`` at the design's smallest p."""
    factor = rule.family_size if rule.correction == "bonferroni" else 1
    return min(1.0, factor * min(1.0, comparisons * floor.min_p)) <= rule.alpha


designs = st.lists(
    st.tuples(
        st.lists(st.integers(1, 9), min_size=1, max_size=3),  # speakers per direction of one contrast's test
        st.floats(0.0, 1.0),  # where its p lies between 1 / (B + 1) and 1
        st.booleans(),  # beyond the bar
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    designs=designs,
    permutations=st.sampled_from([99, 999, 9_999]),
    family_size=st.integers(1, 60),
    alpha=st.sampled_from([0.01, 0.05, 0.1]),
    rule=st.sampled_from(["both", "significance"]),
)
def test_no_case_passes_beyond_its_bar_with_an_unreachable_test(designs, permutations, family_size, alpha, rule):
    decision_rule = DecisionRule(alpha=alpha, family_size=family_size)
    contrasts = []
    for index, (units, where, beyond) in enumerate(designs):
        floor = PermutationFloor(test=SIGN_FLIP, units=tuple(units), permutations=permutations)
        p = 1.0 / (permutations + 1) + where * (1.0 - 1.0 / (permutations + 1))  # a Monte Carlo p may undercut min_p
        contrasts.append(Contrast.with_floor(f"direction {index}", 20.0 if beyond else 1.0, p, beyond, floor))
    decision, block = bias_decision(RuleOnly(decision_rule), CASE, contrasts, rule=rule, statistic="test")
    k = len(contrasts)
    counted = [c for c in contrasts if c.relevant or rule == "significance"]
    out_of_reach = [c for c in counted if not reachable(c.floor, decision_rule, k)]
    passed_measured = not decision.failed and not block.untestable
    # the property: no case passes with a counted contrast (beyond its bar; any, under significance) out of reach
    assert not (passed_measured and out_of_reach)
    # a case fails only through a contrast that can reach the corrected alpha
    if decision.failed:
        deciding = contrasts[decision.deciding]
        assert reachable(deciding.floor, decision_rule, k) and deciding.p * k * family_size <= alpha * (1 + 1e-12)
    # where every contrast can reach it, the decision is the rule's own on the p-values
    if all(reachable(c.floor, decision_rule, k) for c in contrasts):
        plain = decision_rule.decide([c.p for c in contrasts], [c.relevant for c in contrasts], rule=rule)
        assert (decision.failed, decision.p) == (plain.failed, plain.p) and block.contrasts == tuple(contrasts)
    for contrast in block.contrasts:
        assert (contrast.reason or "").startswith(UNREACHABLE) == (not reachable(contrast.floor, decision_rule, k))


def test_six_speakers_per_direction_cannot_reach_a_corrected_alpha_of_thirty_cases():
    """The issue's design: each direction's 6 speakers give p >= 2 / 64, above 0.05 / (2 * 30); a -12.8 / +17.4
    point effect beyond a 10-point bar is unmeasured; 12 speakers per direction would do (2 / 2^12 = 0.00049; 2 / 2^11 = 0.00098)."""
    rule = DecisionRule(alpha=0.05, family_size=30)
    contrasts = [
        Contrast.with_floor(f"{group} speakers", effect, 0.0334, True, PermutationFloor(test=SIGN_FLIP, units=(6,), permutations=9_999))
        for group, effect in (("female", -12.8), ("male", 17.4))
    ]  # fmt: skip
    decision, block = bias_decision(RuleOnly(rule), CASE, contrasts, rule="both", statistic="WER")
    assert not decision.failed and not decision.estimable
    assert block.untestable == ("female speakers", "male speakers")
    reason = block.contrasts[0].reason
    assert reason.startswith("cannot reach the corrected alpha 0.000833")
    assert (
        "a sign flip over 6 speakers (one direction) gives p >= 0.0312; 12 speakers per direction would reach it"
        in reason
    )
    assert block.contrasts[0].p == 0.0334  # the record keeps the measured p


def test_a_reachable_contrast_within_its_bar_does_not_rescue_an_unreachable_one_beyond_it():
    rule = DecisionRule(alpha=0.05, family_size=1)
    big = PermutationFloor(test=SIGN_FLIP, units=(12,), permutations=9_999)
    small = PermutationFloor(test=SIGN_FLIP, units=(3,), permutations=9_999)
    contrasts = [Contrast.with_floor("a", 1.0, 0.5, False, big), Contrast.with_floor("b", 30.0, 0.25, True, small)]
    decision, block = bias_decision(RuleOnly(rule), CASE, contrasts, rule="both", statistic="s")
    assert not decision.failed and block.untestable == ("b",)


def test_an_unreachable_contrast_within_its_bar_is_unmeasured_under_every_rule():
    """Issue 57: a design that cannot reach alpha could not have failed the case, so it cannot pass it either, within
    its bar or not (before, rule both passed it within the bar)."""
    rule = DecisionRule(alpha=0.05, family_size=10)
    floor = PermutationFloor(test=SIGN_FLIP, units=(4,), permutations=9_999)
    contrast = Contrast.with_floor("female speakers", 0.5, 0.9, False, floor)
    _, block = bias_decision(RuleOnly(rule), CASE, [contrast], rule="significance", statistic="s")
    assert block.untestable == ("female speakers",)
    _, block = bias_decision(RuleOnly(rule), CASE, [contrast], rule="both", statistic="s")
    assert block.untestable == ("female speakers",)


def test_under_the_q_value_rule_a_floor_at_the_fdr_alpha_is_unmeasured():
    """A BH q-value is never below its p, so a group permutation of 3 + 3 speakers (p >= 0.1) cannot pass q < 0.05."""
    rule = DecisionRule(alpha=0.05, family_size=1)
    floor = PermutationFloor(test=GROUP_PERMUTATION, units=(3, 3), permutations=9_999)
    contrast = Contrast.with_floor("nTVD across groups", 40.0, 0.1, True, floor)
    decision, block = bias_decision(
        RuleOnly(rule), CASE, [contrast], rule="q-value", statistic="nTVD", fdr=(0.1, 12, 0.05)
    )
    assert not decision.failed and block.untestable == ("nTVD across groups",)
    assert "a group permutation of 3 + 3 speakers in 2 groups gives p >= 0.1" in block.contrasts[0].reason
    reachable_floor = PermutationFloor(test=GROUP_PERMUTATION, units=(6, 6), permutations=9_999)
    decision, block = bias_decision(
        RuleOnly(rule),
        CASE,
        [Contrast.with_floor("nTVD across groups", 40.0, 0.003, True, reachable_floor)],
        rule="q-value",
        statistic="nTVD",
        fdr=(0.01, 12, 0.05),
    )
    assert decision.failed and block.untestable == ()


def test_a_contrast_without_a_design_floor_is_decided_on_its_p_alone():
    rule = DecisionRule(alpha=0.05, family_size=30)
    contrast = Contrast("male / female", 1.4, 1.1, 1.8, 1e-5, True)
    decision, block = bias_decision(RuleOnly(rule), CASE, [contrast], rule="both", statistic="ratio")
    assert decision.failed and block.contrasts == (contrast,)


def test_rule_magnitude_ignores_the_floor():
    floor = PermutationFloor(test=SIGN_FLIP, units=(2,), permutations=99)
    contrast = Contrast.with_floor("female speakers", 30.0, 0.5, True, floor)
    decision, block = bias_decision(RuleOnly(DecisionRule()), CASE, [contrast], rule="magnitude", statistic="s")
    assert decision.failed and block.contrasts == (contrast,)


@pytest.mark.parametrize("correction, expected", [("bonferroni", 0.05 / (2 * 30)), ("none", 0.05 / 2)])
def test_corrected_alpha_is_the_bonferroni_steps(correction, expected):
    assert DecisionRule(alpha=0.05, family_size=30, correction=correction).corrected_alpha(2) == pytest.approx(expected)
