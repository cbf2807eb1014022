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
from tests.support.gate import decided_record


def case(model, corpus, task, dimension):
    return Case(check="ntvd", model=model, corpus=corpus, dimension=dimension, variant=task, id=f"{model}-{task}")


def test_the_family_of_a_case_is_its_models_ntvd_tests_and_the_run_s_only_for_a_replay():
    """Issue 57: one model's verdict is its own; ``fdr_family: run`` pools every model, as Table II does."""
    cases = [
        case(model, corpus, task, dimension)
        for model in ("a", "b")
        for corpus in ("crema_d", "saa")
        for task in ("story", "advisory")
        for dimension in ("gender", "accent")
    ]
    assert fdr_family(cases, cases[0]) == tuple(c for c in cases if c.model == "a") and len(cases) == 16
    assert fdr_family(cases, cases[0], "run") == tuple(cases)
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
    records = {c.id: decided_record(gate.outcome(c)) for c in cases}
    assert {c.dimension for c in cases} == {"gender", "accent"} and len(cases) == 8
    biased = records["sim:biased-advisory-gender"]
    assert biased.threshold.rule == "q-value" and biased.q_family == 4  # the model's own four tests (issue 57)
    assert biased.decision.p_adjusted == biased.q and not biased.passed
    assert all(record.q_family == 4 for record in records.values())
    for model in ("sim:fair", "sim:biased"):
        names = [name for name in records if name.startswith(model)]
        expected_q = fdr_bh([records[name].p for name in names])
        assert [records[name].q for name in names] == pytest.approx(list(expected_q))
    assert check.thresholds(gate.context, cases[0]).rule == "q-value"
    fair = [record for name, record in records.items() if name.startswith("sim:fair")]
    assert all(record.passed == (record.q >= 0.05) for record in fair)


def test_a_models_verdict_under_the_vibe_preset_does_not_depend_on_the_others_in_the_run(tmp_path):
    """Issue 57: sim:fair alone and beside sim:biased gets identical nTVD records (q, family, verdict); before, its
    story-gender case failed beside sim:biased (q 0.047) and not alone (q 0.12)."""

    def fair_records(models):
        gate = Gate(GateConfig(models=models, tasks=("story", "advisory"), thresholds_path="preset:vibe",
                               cache_dir=str(tmp_path / "cache"), progress=False, permutations=999))  # fmt: skip
        cases = gate.cases("ntvd")
        gate.set_family("ntvd", cases)
        return {c.id: decided_record(gate.outcome(c)) for c in cases if c.model == "sim:fair"}

    alone, beside = fair_records(("sim:fair",)), fair_records(("sim:fair", "sim:biased"))
    assert alone.keys() == beside.keys() and len(alone) == 4
    for name in alone:
        first, second = alone[name], beside[name]
        assert (first.q, first.q_family, first.passed) == (second.q, second.q_family, second.passed), name
        assert first.decision == second.decision
