"""The whole gate's decision rule (DecisionRule), Holm, p from an interval, and the family-wise false-fail rate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from harness.metrics.multitest import DecisionRule, fdr_bh, gate_decision, holm, p_from_interval
from harness.metrics.ratio_table import ratio_p_value


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, 1*0.04 -> running max 0.02 0.03 0.06 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, np.nan, 0.9]), [1.0, np.nan, 1.0])
    assert holm([]).shape == (0,)
    with pytest.raises(ValueError):
        holm([1.5])


def test_p_from_interval():
    # a 95% interval 0 +- 1.96 around an estimate of 1.96 has se 1 -> z = 1.96 -> p = 0.05
    assert p_from_interval(1.96, 0.0, 3.92) == pytest.approx(0.05, rel=1e-3)
    assert p_from_interval(np.e, 1.0, np.e**2, log=True) == pytest.approx(0.05, rel=1e-3)
    assert np.isnan(p_from_interval(16.7, 16.7, 16.7))  # a degenerate interval carries no test
    assert np.isnan(p_from_interval(1.0, np.nan, 2.0))


def comparisons(rows):
    return pd.DataFrame(rows, columns=["case", "p"])


def test_gate_decision_by_hand():
    table = comparisons([("A", 0.01), ("A", 0.2), ("B", 0.04), ("C", 0.3), ("C", 0.5), ("C", 0.001)])
    decision = gate_decision(table, alpha=0.05)
    # within: A 2*0.01 = 0.02, B 0.04, C 3*0.001 = 0.003; across Holm: C 3*0.003, A 2*0.02, B max(0.04, 0.04)
    np.testing.assert_allclose(decision.cases["p_case"], [0.02, 0.04, 0.003])
    np.testing.assert_allclose(decision.cases["p_adjusted"], [0.04, 0.04, 0.009])
    assert decision.failed and decision.cases["failed"].all()
    strict = gate_decision(table, alpha=0.03)
    assert strict.cases["failed"].to_dict() == {"A": False, "B": False, "C": True}
    assert "Holm across 3 cases" in strict.correction


def test_relevance_and_not_estimable():
    table = comparisons([("A", 0.001), ("A", 0.02), ("B", np.nan), ("C", 0.5)]).assign(big=[False, True, True, True])
    decision = gate_decision(table, relevant="big")
    assert decision.cases.loc["A", "p_case"] == pytest.approx(0.04)  # k = 2 comparisons, the relevant one 0.02
    assert decision.not_estimable == ["B"] and not decision.cases.loc["B", "failed"]
    bh = gate_decision(table, across="bh")
    np.testing.assert_allclose(bh.cases["p_adjusted"].dropna(), fdr_bh(bh.cases["p_case"].dropna()))


def simulate_false_fail(runs, rng, rule):
    """A gate of 33 cases, 1 to 6 comparisons each (one-vs-rest), every null true; the comparisons inside
    a case are positively correlated (they share the pooled groups), as in the accent WER case."""
    sizes = rng.choice([1, 1, 1, 2, 2, 6], size=33)
    fails = 0
    for _ in range(runs):
        rows = []
        for c, k in enumerate(sizes):
            shared = rng.normal()
            z = np.sqrt(0.3) * shared + np.sqrt(0.7) * rng.normal(size=k)
            p = 2 * norm.sf(np.abs(z))
            rows += [(f"c{c}", float(x)) for x in p]
        table = comparisons(rows)
        fails += gate_decision(table).failed if rule == "proposed" else bool((table["p"] <= 0.05).any())
    return fails / runs


def test_uniform_nulls_keep_the_family_wise_false_fail_rate():
    rng = np.random.default_rng(16)
    proposed = simulate_false_fail(1000, rng, "proposed")
    today = simulate_false_fail(200, rng, "today")
    assert proposed <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / 1000)
    assert today > 0.5  # every comparison at its own 5%: the whole gate cries wolf in most runs


def test_decision_rule_by_hand():
    rule = DecisionRule(alpha=0.05, family_size=10)
    both = rule.decide([0.001, 0.2], [True, True])
    assert (
        both.p == pytest.approx(0.002) and both.p_adjusted == pytest.approx(0.02) and both.failed and both.deciding == 0
    )
    small_effect = rule.decide([0.001, 0.2], [False, True])
    assert small_effect.p == pytest.approx(0.4) and not small_effect.failed and small_effect.deciding == 1
    assert not rule.decide([0.001, 0.2], [False, False]).relevant
    assert rule.decide([0.001, 0.2], [False, False], rule="significance").failed
    assert (
        rule.decide([0.9], [True], rule="magnitude").failed and not rule.decide([0.0], [False], rule="magnitude").failed
    )
    assert rule.decide([0.004], [True]).failed  # m p = 10 x 0.004 = 0.04 <= 0.05
    twenty = DecisionRule(alpha=0.05, family_size=20).decide([0.004], [True])
    assert twenty.p_adjusted == pytest.approx(0.08) and not twenty.failed
    assert DecisionRule(alpha=0.05, family_size=20, correction="none").decide([0.004], [True]).failed


def test_decision_rule_without_p_values_is_not_estimable():
    decision = DecisionRule(family_size=3).decide([None, float("nan")], [True, False], not_estimable_reason="constant")
    assert not decision.estimable and decision.reason == "constant" and not decision.failed and decision.p is None
    partial = DecisionRule(family_size=3).decide([None, 0.001], [True, True])
    assert partial.estimable and partial.p == pytest.approx(0.002) and partial.deciding == 1


@pytest.mark.parametrize("bad", [dict(alpha=0.0), dict(alpha=1.5), dict(family_size=0), dict(correction="holm")])
def test_decision_rule_rejects_bad_settings(bad):
    with pytest.raises(ValueError, match="DecisionRule"):
        DecisionRule(**bad)


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=40), st.integers(0, 2**32 - 1))
@settings(max_examples=8, deadline=None)
def test_decision_rule_keeps_the_family_wise_error_under_any_case_sizes(sizes, seed):
    """Independent uniform nulls: P(any of m cases fails) <= alpha (Bonferroni), checked by Monte Carlo."""
    rng = np.random.default_rng(seed)
    rule = DecisionRule(alpha=0.05, family_size=len(sizes))
    runs = 300
    fails = sum(any(rule.decide(rng.random(k), [True] * k).failed for k in sizes) for _ in range(runs))
    assert fails / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


@given(st.floats(-2.0, 2.0), st.floats(0.01, 1.5), st.sampled_from([4.0, 12.0, float("nan")]))
def test_ratio_p_value_agrees_with_the_interval(log_ratio, half_width, df):
    """A log-symmetric interval excludes 1 exactly when the p-value it implies is below 1 - level."""
    row = {
        "ratio": np.exp(log_ratio),
        "ci_low": np.exp(log_ratio - half_width),
        "ci_high": np.exp(log_ratio + half_width),
        "df": df,
        "converged": True,
    }
    p = ratio_p_value(row, level=0.95)
    excludes_one = row["ci_low"] > 1 or row["ci_high"] < 1
    if abs(abs(log_ratio) - half_width) > 1e-9:
        assert (p < 0.05) == excludes_one
    assert np.isnan(ratio_p_value(row | {"converged": False}))
