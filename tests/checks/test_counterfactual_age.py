"""The counterfactual check's age cases (issue 61): off in the packaged thresholds (the shipped demo keeps its
cases), on for every age-labelled source once a thresholds file gives the ``age`` dimension the ``age_shift``
transform, and then unmeasured with its cause under voice:praat, which names no age."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.checks.counterfactual.check import UNHEARD_REASON, perceiver_cannot_hear
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.gate import Gate, GateConfig, Unmeasured
from tests.support.gate import decided_record

import support.hearing  # noqa: F401  (registers oracle:)

pytest.importorskip("parselmouth")

BASIS_DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "basis_demo"
AGE_ON = "counterfactual:\n  dimensions:\n    age: {transform: age_shift}\n"
AGE_CASE = "sim:fair-stereoset-age-age-counterfactual"


def gate_for(tmp_path, thresholds: str | None, **settings) -> Gate:
    if thresholds is not None:
        path = tmp_path / "thresholds.yaml"
        path.write_text(thresholds)
        settings["thresholds_path"] = str(path)
    config = GateConfig(cache_dir=str(tmp_path / "cache"), bundled_exports={}, progress=False, models=("sim:fair",),
                        tasks=("story",), **settings)  # fmt: skip
    return Gate(config)


def test_the_packaged_thresholds_make_no_age_case_though_the_basis_demo_has_age_labels(tmp_path):
    gate = gate_for(tmp_path, None)
    ids = [case.id for case in gate.cases("counterfactual")]
    assert "stereoset-age" in [item_set.name for item_set in gate.context.basis.of_kind("stereotype", "age")]
    assert ids and all(case.endswith("-gender-counterfactual") for case in ids)


def test_age_cases_on_are_unmeasured_under_voice_praat_naming_why(tmp_path):
    gate = gate_for(tmp_path, AGE_ON, perceiver="voice:praat")
    cases = {case.id: case for case in gate.cases("counterfactual")}
    gender = [case for case in cases if case.endswith("-gender-counterfactual")]
    assert AGE_CASE in cases and len(cases) == len(gender) + 1  # the demo corpus has no age labels
    assert gate.thresholds.settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender").transform == "gender_swap"
    outcome = gate.outcome(cases[AGE_CASE])
    assert isinstance(outcome, Unmeasured)
    assert UNHEARD_REASON in outcome.cause.message and "cannot tell whether an arm sounds elderly or young" in outcome.cause.message  # fmt: skip


def test_voice_praat_hears_gender_and_a_child_and_a_backend_perceiver_is_asked_any_group():
    assert perceiver_cannot_hear("voice:praat", ["female", "male", "child"]) is None
    assert "cannot tell whether an arm sounds elderly" in perceiver_cannot_hear("voice:praat", ["elderly", "male"])
    assert perceiver_cannot_hear("hf:some/judge", ["elderly", "young"]) is None


@pytest.fixture(scope="module")
def tiny_age_suite(tmp_path_factory) -> Path:
    """The BASIS demo's age stereotype set cut to its first item, read by two young and two elderly voices."""
    folder = tmp_path_factory.mktemp("age-suite")
    (folder / "stereoset" / "speech").mkdir(parents=True)
    table = pd.read_csv(BASIS_DEMO / "stereoset" / "age.csv")
    table[table["id"] == 1].to_csv(folder / "stereoset" / "age.csv", index=False)
    shutil.copytree(BASIS_DEMO / "stereoset" / "speech" / "age", folder / "stereoset" / "speech" / "age",
                    ignore=lambda _, names: [name for name in names if int(name[:5]) > 1])  # fmt: skip
    (folder / "suite.yaml").write_text(
        "name: age-tiny\nsets:\n  - {name: stereoset-age, kind: stereotype, dimension: age, labels: [elderly, young],"
        " metadata: stereoset/age.csv}\n"
    )
    return folder


def test_a_perceiver_that_hears_age_measures_the_case_with_its_manipulation_checks(tmp_path, tiny_age_suite):
    pytest.importorskip("pyworld")
    gate = gate_for(tmp_path, AGE_ON, basis_suite=str(tiny_age_suite), perceiver="oracle:age")
    [case] = [case for case in gate.cases("counterfactual") if case.dimension == "age"]
    outcome = gate.outcome(case)
    record = decided_record(outcome)  # measured; its 2 speakers per direction could not have failed it
    assert record.transform == "age_shift" and record.resynthesiser.startswith("pyworld-prebuilt ")
    assert set(record.transform_source) == {"age_shift", "world_identity"}
    assert [row.share for row in record.perceived] == [1.0, 1.0]
    directions = {(row.source_group, row.target_group): row for row in record.manipulation}
    assert set(directions) == {("elderly", "young"), ("young", "elderly")}
    assert all(row.clips == 2 and row.admitted == 2 for row in directions.values())
    assert directions["young", "elderly"].swap_formant_ratio < 0.98 < 1.02 < directions["elderly", "young"].swap_formant_ratio  # fmt: skip


def test_the_gender_arms_and_labels_keep_the_shipped_baselines_identity():
    """Adding the age arms changes nothing that names the gender arms or the default perceiver's labels, so the shipped
    voice-blind baseline's counterfactual cases still compare (another identity makes them unsupported)."""
    import json

    from harness.checks.counterfactual.check import model_free_fingerprint
    from harness.data.voice_transforms import get_transform, resynthesiser_version
    from harness.perception import DEFAULT_PERCEIVER

    shipped = json.loads((BASIS_DEMO.parent / "demo_outputs" / "voice-blind" / "results.json").read_text())
    records = [case.get("measured") or case for case in shipped["cases"]]
    records = [record for record in records if str(record.get("id", "")).endswith("-gender-counterfactual")]
    assert records
    for record in records:
        assert record["perceiver"] == DEFAULT_PERCEIVER
        assert record["perceiver_fingerprint"] == model_free_fingerprint(DEFAULT_PERCEIVER)
        assert record["transform_source"] == {name: get_transform(name).source_hash() for name in ("gender_swap", "identity")}  # fmt: skip
        assert record["resynthesiser"] == resynthesiser_version()
