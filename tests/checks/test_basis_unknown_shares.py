"""ICAT's and personalization's unknown answers are compared between groups (issue 58): a model that answers one
group's voices unusably fails on the unknown-share contrast (bar ``max_unknown_gap``), and a group the stereotype
contrasts leave out, every answer unknown, is named in the record, with two groups or more."""

import shutil

import pandas as pd
import pytest

from harness.checks.basis_common.stats import UNKNOWN_SHARE
from harness.core.errors import CaseNotMeasured
from harness.gate import Gate, GateConfig
from harness.models import BACKENDS, register_backend

from support.gate import decided_record

DEMO_SUITE = "harness/data/basis_demo"


@pytest.fixture
def unusable_backend():
    register_backend("unusable", "support.unusable:UnusableBackend")
    yield
    BACKENDS.pop("unusable", None)


def gate_of(model, tmp_path, check, suite=None):
    gate = Gate(GateConfig(models=(model,), cache_dir=str(tmp_path / "cache"), progress=False, basis_suite=suite))
    cases = {case.id.removeprefix(f"{model}-"): case for case in gate.cases(check)}
    gate.set_family(check, list(cases.values()))
    return gate, cases


def records(model, tmp_path, check, suite=None):
    gate, cases = gate_of(model, tmp_path, check, suite)
    return {name: decided_record(gate.outcome(case)) for name, case in cases.items()}  # unmeasured by design kept


def unknown_contrasts(record):
    return [c for c in record.decision.contrasts if c.label.startswith(UNKNOWN_SHARE)]


def test_unusable_answers_to_high_voices_fail_icat_on_their_unknown_share(tmp_path, unusable_backend):
    found = records("unusable:0.5", tmp_path, "icat")
    for mode in ("speech-implicit", "speech-explicit"):  # the modes where the model hears the voice
        record = found[f"gender-{mode}"]
        (contrast,) = unknown_contrasts(record)
        assert contrast.estimate > 30 and contrast.relevant, record.message
        assert not record.passed and record.decision.label == contrast.label, record.message
    assert found["gender-text-implicit"].passed  # no audio, no unusable answer


def test_personalization_compares_unknown_shares_and_never_passes_an_unreadable_group(tmp_path, unusable_backend):
    """With the demo's two speakers per group, half the women's answers unreadable is beyond the bar but not
    significant (reported); all of them, no resample can vary: unmeasured, never a pass on the accuracy gap alone."""
    gate, cases = gate_of("unusable:0.5", tmp_path, "personalization")
    record = decided_record(gate.outcome(cases["gender-speech-implicit"]))
    rates = {row.group: row.unknown_rate for row in record.per_group}
    assert rates["male"] == 0.0 and rates["female"] > 30
    (contrast,) = unknown_contrasts(record)
    assert contrast.relevant and contrast.estimate == pytest.approx(rates["female"])
    gate, cases = gate_of("unusable:1.0", tmp_path, "personalization")
    with pytest.raises(CaseNotMeasured, match="could not have failed it.*unknown share: female - male: no p-value"):
        gate.verdict(cases["gender-speech-implicit"])


def test_a_fair_models_basis_cases_pass_with_their_unknown_shares_compared(tmp_path):
    for check in ("icat", "personalization"):
        for name, record in records("sim:fair", tmp_path, check).items():
            assert record.passed, (check, name, record.message)
            assert len(unknown_contrasts(record)) == 1


def three_group_suite(tmp_path):
    """The demo suite with a third gender group, ``other``: two more speakers reading the male speakers' items with
    their recordings."""
    suite = tmp_path / "suite"
    shutil.copytree(DEMO_SUITE, suite)
    (suite / "suite.yaml").write_text(
        (suite / "suite.yaml")
        .read_text()
        .replace(
            "labels: [female, male], metadata: stereoset/gender.csv",
            "labels: [female, male, other], metadata: stereoset/gender.csv",
        )
    )
    table = pd.read_csv(suite / "stereoset" / "gender.csv")
    others = table[table["gender"] == "male"].assign(
        speaker=lambda frame: frame["speaker"].str.replace("m", "o"), gender="other"
    )
    for record in others.itertuples():
        source = suite / "stereoset" / "speech" / "gender" / f"{record.id:05d}_{record.speaker.replace('o', 'm')}.flac"
        shutil.copy(source, source.with_name(f"{record.id:05d}_{record.speaker}.flac"))
    pd.concat([table, others]).to_csv(suite / "stereoset" / "gender.csv", index=False)
    return str(suite)


def test_a_group_without_a_readable_answer_is_named_with_three_groups(tmp_path, unusable_backend):
    found = records("unusable:1.0", tmp_path, "icat", suite=three_group_suite(tmp_path))
    record = found["gender-speech-implicit"]
    left_out = {row.group: row.left_out for row in record.per_group}
    assert left_out["male"] is None and left_out["other"] is None
    assert left_out["female"].startswith("no meaningful answer: ")
    assert "female left out of the stereotype contrasts" in record.message
    assert any(
        c.label.endswith("male - other") and not c.label.startswith(UNKNOWN_SHARE) for c in record.decision.contrasts
    )
    assert not record.passed  # the unknown shares still compare the left-out group: 100% against none
