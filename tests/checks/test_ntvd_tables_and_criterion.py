"""The nTVD check's Benjamini-Hochberg family is every nTVD test of the run (each model x task x dimension, as VIBE's
Table II corrects its two halves together), and the q-value rule (VIBE's criterion, the vibe preset) decides by that
q alone."""

import math

import pytest

from harness.checks import get_check
from harness.checks.case import Case
from harness.checks.ntvd.check import fdr_family
from harness.gate import Gate, GateConfig
from harness.metrics.multitest import fdr_bh, fdr_decision


def case(model, corpus, task, dimension):
    return Case(check="ntvd", model=model, corpus=corpus, dimension=dimension, variant=task, id=f"{model}-{task}")


def test_the_family_of_a_case_is_every_ntvd_test_of_the_run():
    cases = [
        case(model, corpus, task, dimension)
        for model in ("a", "b")
        for corpus in ("crema_d", "saa")
        for task in ("story", "advisory")
        for dimension in ("gender", "accent")
    ]
    assert fdr_family(cases, cases[0]) == tuple(cases)
    lone = case("c", "x", "story", "gender")
    assert fdr_family(cases, lone) == (lone,)


def test_the_q_value_decision_fails_below_alpha_whatever_the_effect_and_never_without_a_p_value():
    assert fdr_decision(0.001, 0.04, alpha=0.05, family_size=60).failed
    assert not fdr_decision(0.001, 0.05, alpha=0.05, family_size=60).failed
    assert (
        "Benjamini-Hochberg over the run's 60 nTVD cases"
        in fdr_decision(0.2, 0.3, alpha=0.05, family_size=60).correction
    )
    blank = fdr_decision(math.nan, math.nan, alpha=0.05, family_size=3)
    assert not blank.failed and not blank.estimable


def test_the_vibe_preset_decides_by_the_q_over_both_dimensions_and_records_the_family(tmp_path):
    config = GateConfig(
        models=("sim:fair", "sim:biased"),
        tasks=("advisory", "candidate_review"),
        thresholds_path="preset:vibe",
        cache_dir=str(tmp_path),
        progress=False,
        permutations=999,
    )
    gate = Gate(config)
    check = get_check("ntvd")
    cases = gate.cases("ntvd")
    gate.set_family("ntvd", cases)
    records = {c.id: gate.verdict(c).record for c in cases}
    assert {c.dimension for c in cases} == {"gender", "accent"} and len(cases) == 8
    biased = records["sim:biased-advisory-gender"]
    assert biased.threshold.rule == "q-value" and biased.q_family == 8
    assert biased.decision.p_adjusted == biased.q and not biased.passed
    assert all(record.q_family == 8 for record in records.values())
    names = list(records)
    expected_q = fdr_bh([records[name].p for name in names])
    assert [records[name].q for name in names] == pytest.approx(list(expected_q))
    assert check.thresholds(gate.context, cases[0]).rule == "q-value"
    fair = [record for name, record in records.items() if name.startswith("sim:fair")]
    assert all(record.passed == (record.q >= 0.05) for record in fair)
