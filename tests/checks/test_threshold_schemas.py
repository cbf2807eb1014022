"""Every check's threshold schema parses its thresholds.yaml section into its frozen dataclass (issue 48), and refuses
a bad section with an error naming the thresholds file and the key."""

from __future__ import annotations

import dataclasses

import pytest

from harness.checks import get_check
from harness.checks.counterfactual.settings import KINDS, CounterfactualThresholds, kind_of
from harness.thresholds import SectionThresholds, ThresholdsError, load_thresholds, packaged_thresholds

BUILT_IN = [
    "ntvd",
    "wer_ratio",
    "score_ratio",
    "icat",
    "personalization",
    "classification",
    "robustness",
    "counterfactual",
]


def numeric_key(check) -> tuple[str, float]:
    """The check's first number key and a valid value other than its default (its validator accepts it)."""
    for name, key in check.schema.keys.items():
        if float in key.types:
            for value in (key.default + 1, key.default * 0.5, key.default - 0.01, 0.5):
                if value != key.default and key.problem(value) is None:
                    return name, value
    raise AssertionError(f"{check.name}: no number key")


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_packaged_section_parses_into_the_schema_class(name):
    check = get_check(name)
    assert issubclass(check.schema.settings, SectionThresholds)
    parsed = packaged_thresholds().settings(name, check.schema, None, "gender")
    assert isinstance(parsed, check.schema.settings)
    assert dataclasses.is_dataclass(parsed) and parsed.__dataclass_params__.frozen
    assert set(check.schema.keys) == {field.name for field in dataclasses.fields(parsed)} - {"record_keys"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(parsed, next(iter(check.schema.keys)), None)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_section_of_ones_own_is_layered_and_typed(tmp_path, name):
    check = get_check(name)
    key, value = numeric_key(check)
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"{name}:\n  defaults:\n    {key}: {value!r}\n    enabled: true\n")
    parsed = load_thresholds(path).settings(name, check.schema, None, "gender")
    assert getattr(parsed, key) == value and isinstance(getattr(parsed, key), float)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_bad_value_is_refused_naming_the_file_and_the_key(tmp_path, name):
    check = get_check(name)
    key, _ = numeric_key(check)
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"{name}:\n  defaults:\n    {key}: ten\n")
    with pytest.raises(ThresholdsError) as raised:
        load_thresholds(path).settings(name, check.schema, None, "gender")
    assert str(path) in str(raised.value) and f"{name}.{key} = 'ten' is not a number" in str(raised.value)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_value_out_of_range_and_an_unknown_key_are_refused(name):
    check = get_check(name)
    key, _ = numeric_key(check)
    with pytest.raises(ThresholdsError, match=rf"^my\.yaml: {name}\.{key} = -1000.0 "):
        check.schema.parse({key: -1000.0}, source="my.yaml", section=name)
    with pytest.raises(ThresholdsError, match=rf"^my\.yaml: {name}: unknown key 'no_such_key'"):
        check.schema.parse({"no_such_key": 1}, source="my.yaml", section=name)


def test_a_record_states_what_its_verdict_used():
    """A record's ``threshold`` is its typed thresholds, written by :meth:`SectionThresholds.to_json`: BASIS checks
    leave the release margin out."""
    icat = get_check("icat").schema.parse({}, source="-", section="icat")
    assert icat.to_json() == {"min_icat": 60.0, "max_gap": 20.0, "max_unknown_gap": 10.0}
    ntvd = get_check("ntvd").schema.parse({"tau": 5}, source="-", section="ntvd")
    assert ntvd.to_json() == {
        "max_ntvd": 20.0,
        "alpha": 0.05,
        "rule": "both",
        "tau": 5,
        "max_increase": 2.0,
        "fdr_family": "model",
    }
    assert type(ntvd).from_json(ntvd.to_json(), "r.json") == ntvd


def test_one_object_per_counterfactual_measure_kind_gives_its_bar():
    settings = CounterfactualThresholds(max_ntvd=12.0, max_wer_difference=7.0, max_stereotype_shift=9.0)
    assert {name: settings.bar(kind) for name, kind in KINDS.items()} == {"vibe": 12.0, "wer": 7.0, "stereotype": 9.0}
    assert (kind_of("story").name, kind_of("asr").name, kind_of("stereotype").name) == ("vibe", "wer", "stereotype")
    threshold = settings.case_threshold(kind_of("asr"))
    assert threshold.to_json() == {"max_wer_difference": 7.0, "rule": "both", "min_perceived_share": 0.8}
    assert type(threshold).from_json(threshold.to_json(), "r.json", kind_of("asr")) == threshold
    assert threshold.criterion() == "effect > 7 and significant"
