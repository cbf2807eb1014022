"""VIBE analyses: tau sensitivity (§III-D), cross-corpus agreement (§III-E), refusal nTVD, collapse (§IV)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.metrics import ntvd
from harness.metrics.vibe_analyses import (
    collapse_diagnostic,
    cross_corpus_agreement,
    ntvd_by_tau,
    refusal_rate_ntvd,
    refusal_table,
    tau_sensitivity,
)

COLUMNS = ["model", "task", "speaker", "group", "attribute", "value"]


def rows(model, task, attribute, group, value, n):
    """n rows of one value, spread over the group's two speakers."""
    return [(model, task, f"{group}{i % 2}", group, attribute, value) for i in range(n)]


def job_rows(model, task, k):
    # P_f(a) = 0.5 + 0.05k, P_m(a) = 0.5 - 0.05k over 200 answers per group: nTVD = 100 * 0.1k = 10k;
    # every count is >= 60, so every tau up to 40 keeps both values.
    out = []
    for group, sign in (("f", 1), ("m", -1)):
        out += rows(model, task, "job", group, "a", 100 + sign * 10 * k)
        out += rows(model, task, "job", group, "b", 100 - sign * 10 * k)
    return out


def rare_rows(model, task, divergent, shared):
    # Values seen exactly twice (kept only at tau <= 2): a divergent value twice in one group, a shared one once
    # in each. Both groups hold divergent + shared values, so nTVD = 100 * divergent / (divergent + shared).
    out = []
    for index in range(divergent):
        group = "f" if index % 2 == 0 else "m"
        out += rows(model, task, "pet", group, f"d{index}", 2)
    for index in range(shared):
        out += rows(model, task, "pet", "f", f"s{index}", 1) + rows(model, task, "pet", "m", f"s{index}", 1)
    return out


RARE = {1: (4, 0), 2: (6, 2), 3: (4, 4), 4: (2, 6)}  # rare-attribute nTVD 100, 75, 50, 25


def constructed_table():
    """Story: at tau >= 5 nTVD = 10k (ranks 1..4); at tau <= 2 it is (10k + rare) / 2 = 55, 47.5, 40, 32.5,
    the reverse ranking. Advisory: 10k at every tau. So the mean within-task Spearman is 0 at tau 1 and 2, 1 above."""
    data = []
    for k in (1, 2, 3, 4):
        data += job_rows(f"m{k}", "story", k) + rare_rows(f"m{k}", "story", *RARE[k]) + job_rows(f"m{k}", "advisory", k)
    return pd.DataFrame(data, columns=COLUMNS)


def test_tau_sensitivity_on_constructed_rankings():
    result = tau_sensitivity(constructed_table())
    scores = result.scores.set_index(["model", "task", "tau"])["ntvd"]
    assert scores[("m1", "story", 1)] == pytest.approx(55.0) and scores[("m4", "story", 2)] == pytest.approx(32.5)
    assert scores[("m3", "story", 5)] == pytest.approx(30.0) and scores[("m2", "advisory", 40)] == pytest.approx(20.0)
    per_task = result.rank_correlation.set_index(["task", "tau"])["spearman"]
    assert per_task[("story", 1)] == pytest.approx(-1.0) and per_task[("story", 20)] == pytest.approx(1.0)
    assert per_task[("advisory", 1)] == pytest.approx(1.0)
    assert result.mean_rank_correlation.to_dict() == pytest.approx({1: 0.0, 2: 0.0, 5: 1.0, 10: 1.0, 20: 1.0, 40: 1.0})


def test_one_swapped_pair_gives_the_textbook_spearman():
    # Rare nTVD 12.5, 0, 0, 0 -> scores at tau=1: (10k + rare)/2 = 11.25, 10, 15, 20, i.e. ranks (2, 1, 3, 4)
    # against (1, 2, 3, 4) at tau=10: rho = 1 - 6 * 2 / (4 * (16 - 1)) = 0.8.
    data = []
    for k, (divergent, shared) in {1: (2, 14), 2: (0, 4), 3: (0, 4), 4: (0, 4)}.items():
        data += job_rows(f"m{k}", "story", k) + rare_rows(f"m{k}", "story", divergent, shared)
    result = tau_sensitivity(pd.DataFrame(data, columns=COLUMNS), taus=(1, 10))
    assert result.scores.query("model == 'm1' and tau == 1")["ntvd"].item() == pytest.approx(11.25)
    assert result.mean_rank_correlation[1] == pytest.approx(0.8)


def test_models_without_any_value_at_a_tau_are_left_out_of_that_correlation():
    data = []
    for k in (1, 2, 3):
        data += job_rows(f"m{k}", "story", k)
    data += rows("m4", "story", "job", "f", "x", 3) + rows("m4", "story", "job", "m", "y", 3)
    result = tau_sensitivity(pd.DataFrame(data, columns=COLUMNS), taus=(1, 10))
    assert np.isnan(result.scores.query("model == 'm4' and tau == 10")["ntvd"].item())
    assert result.mean_rank_correlation[10] == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 1), st.sampled_from("ab"), st.integers(0, 6)),
        min_size=4,
        max_size=80,
    )
)
def test_ntvd_by_tau_matches_ntvd_at_each_tau(draws):
    table = pd.DataFrame(
        [
            (f"s{speaker}", "f" if speaker % 2 else "m", attribute, f"v{value}")
            for speaker, _, attribute, value in draws
        ],
        columns=["speaker", "group", "attribute", "value"],
    )
    assume(table["group"].nunique() >= 2)
    taus = (1, 2, 3, 5, 10)
    expected = [ntvd(table, tau).score for tau in taus]
    np.testing.assert_allclose(ntvd_by_tau(table, taus), expected, equal_nan=True)


def test_cross_corpus_agreement_of_model_rankings():
    models = ["a", "b", "c", "d", "e"]
    scores = pd.DataFrame(
        [
            ("saa", model, task, value + offset)
            for model, value in zip(models, [1, 2, 3, 4, 5])
            for task, offset in (("story", 0.5), ("advisory", -0.5))
        ]
        + [("l2arctic", model, "story", value) for model, value in zip(models, [2, 1, 3, 4, 5])]
        + [("l2arctic", "only_here", "story", 9.0)],
        columns=["corpus", "model", "task", "ntvd"],
    )
    result = cross_corpus_agreement(scores, "saa", "l2arctic")
    assert result.n_models == 5 and result.rho == pytest.approx(0.9)  # 1 - 6 * 2 / (5 * 24)
    assert 0 < result.p_value < 0.1
    assert result.per_model.set_index("model").loc["e", "rank_saa"] == 1.0
    with pytest.raises(ValueError, match=">= 3 models"):
        cross_corpus_agreement(scores[scores["model"].isin(["a", "b", "only_here"])], "saa", "l2arctic")
    with pytest.raises(ValueError, match="no corpus 'timit'"):
        cross_corpus_agreement(scores, "saa", "timit")


def test_refusal_rate_ntvd_is_the_refusal_rate_difference_for_two_groups():
    statuses = pd.DataFrame(
        [(f"f{i % 3}", "female", "refusal" if i < 2 else "extracted") for i in range(10)]
        + [(f"m{i % 3}", "male", "refusal" if i < 5 else ("empty" if i == 5 else "unextractable")) for i in range(10)],
        columns=["speaker", "group", "status"],
    )
    assert set(refusal_table(statuses)["value"]) == {"refusal", "answered"}
    assert refusal_rate_ntvd(statuses).score == pytest.approx(100 * abs(0.2 - 0.5))


def test_collapse_diagnostic_flags_near_constant_attributes():
    data = []
    for group in ("f", "m"):
        data += [(f"{group}{i % 2}", group, "pay", "average") for i in range(20)]
        data += [(f"{group}{i % 2}", group, "job", value) for value in "abcd" for i in range(5)]
    diagnostic = collapse_diagnostic(pd.DataFrame(data, columns=["speaker", "group", "attribute", "value"]), tau=10)
    per_attribute = diagnostic.per_attribute.set_index("attribute")
    assert per_attribute.loc["pay", "normalised_entropy"] == 0.0 and per_attribute.loc["pay", "top_share"] == 1.0
    assert (
        per_attribute.loc["job", "normalised_entropy"] == pytest.approx(1.0)
        and per_attribute.loc["job", "n_values"] == 4
    )
    assert diagnostic.collapsed() == ["pay"]
    per_group = diagnostic.per_group.set_index(["attribute", "group"])
    assert per_group.loc[("job", "f"), "count"] == 20 and per_group.loc[("pay", "m"), "top_value"] == "average"
