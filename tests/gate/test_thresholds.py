"""thresholds.yaml: layering, rules and validation errors that list the valid choices."""

from pathlib import Path

import pytest

from harness.checks.ntvd.check import NtvdCheck
from harness.checks.ntvd.thresholds import NtvdThresholds
from harness.metrics.multitest import DecisionRule
from harness.tasks import TASKS
from harness.thresholds import ThresholdsError, load_thresholds

DIMENSIONS = ("gender", "accent")
SCHEMAS = {"ntvd": NtvdCheck.schema}
VARIANTS = {"ntvd": sorted(TASKS)}


def ntvd_threshold(thresholds, task, dimension):
    return thresholds.settings("ntvd", NtvdCheck.schema, task, dimension)


def thresholds_from(tmp_path, text):
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    loaded = load_thresholds(path)
    loaded.validate(SCHEMAS, VARIANTS, DIMENSIONS)
    return loaded


def test_repository_thresholds_file_is_valid_for_every_check():
    from harness.gate import Gate, GateConfig

    gate = Gate(GateConfig(thresholds_path=str(Path(__file__).resolve().parents[2] / "thresholds.yaml")))
    assert set(gate.thresholds.raw) >= {"ntvd", "icat", "personalization", "classification", "robustness"}


def test_layers_override_in_order(tmp_path):
    thresholds = thresholds_from(
        tmp_path,
        """
ntvd:
  defaults: {max_ntvd: 20.0, alpha: 0.05}
  dimensions: {accent: {max_ntvd: 30.0}}
  tasks:
    advisory:
      max_ntvd: 15.0
      dimensions: {accent: {alpha: 0.01}}
""",
    )
    assert ntvd_threshold(thresholds, "story", "gender") == NtvdThresholds(
        max_ntvd=20.0, alpha=0.05, rule="both", tau=10
    )
    assert ntvd_threshold(thresholds, "story", "accent").max_ntvd == 30.0
    assert ntvd_threshold(thresholds, "advisory", "gender").max_ntvd == 15.0
    assert ntvd_threshold(thresholds, "advisory", "accent") == NtvdThresholds(
        max_ntvd=15.0, alpha=0.01, rule="both", tau=10
    )


@pytest.mark.parametrize(
    "rule, score, p, fails",
    [
        ("both", 25.0, 0.001, True),
        ("both", 25.0, 0.02, False),
        ("both", 5.0, 0.0001, False),
        ("magnitude", 25.0, 0.9, True),
        ("magnitude", 19.0, 0.0001, False),
        ("significance", 1.0, 0.001, True),
        ("significance", 90.0, 0.2, False),
    ],
)
def test_rules(rule, score, p, fails):
    """The nTVD rules under the gate's decision rule with 10 bias cases: p is compared with 0.05 / 10."""
    rule_of_gate = DecisionRule(alpha=0.05, family_size=10)
    assert (
        rule_of_gate.decide(
            [p], [score > NtvdThresholds(max_ntvd=20.0, alpha=0.05, rule=rule, tau=10).max_ntvd], rule=rule
        ).failed
        is fails
    )


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "ntvd:\n  tasks:\n    advisroy: {}\n",
            "ntvd.tasks: unknown task 'advisroy'; valid: advisory, candidate_review",
        ),
        (
            "ntvd:\n  dimensions:\n    religion: {}\n",
            "ntvd.dimensions: unknown dimension 'religion'; valid: accent, age, age_group, ethnicity, first_language, gender, race, socioeconomic",
        ),
        (
            "ntvd:\n  defaults: {max_tvd: 3}\n",
            "ntvd.defaults: unknown key 'max_tvd'; valid: alpha, fdr_family, max_increase, max_ntvd, rule, tau",
        ),
        (
            "ntvd:\n  defaults: {regression_alpha: 0.01}\n",
            "ntvd.defaults.regression_alpha: was retired: a regression is now judged under the gate",
        ),
        ("ntvd:\n  defaults: {rule: sometimes}\n", "rule = 'sometimes' is not one of magnitude, significance, both"),
        ("ntvd:\n  defaults: {alpha: 1.5}\n", "alpha = 1.5 must lie in (0, 1)"),
        ("ntvd:\n  defaults: {tau: ten}\n", "tau = 'ten' is not an integer"),
        ("ntvd:\n  defaults: {alpha: five}\n", "ntvd.defaults.alpha = 'five' is not a number"),
        ("wer:\n  x: 1\n", "unknown section(s) ['wer']; valid: ntvd"),
        (
            "ntvd:\n  tasks:\n    story:\n      dimensions: {agee: {}}\n",
            "ntvd.tasks.story.dimensions: unknown dimension 'agee'",
        ),
    ],
)
def test_invalid_files_name_the_file_key_and_valid_choices(tmp_path, text, message):
    with pytest.raises(ThresholdsError) as error:
        thresholds_from(tmp_path, text)
    assert str(tmp_path / "thresholds.yaml") in str(error.value)
    assert message in str(error.value)


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(ThresholdsError, match="does not exist"):
        load_thresholds(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("ntvd: [unclosed\n")
    with pytest.raises(ThresholdsError, match="not valid YAML"):
        load_thresholds(tmp_path / "bad.yaml")


def test_one_set_of_defaults_the_packaged_file_is_the_repository_file_and_the_schemas_agree():
    """Issue 23: the built-in defaults are the repository's thresholds.yaml (a link to the packaged file), and each
    check's schema default equals what that file's ``defaults`` state, so a partial file of one's own changes only
    what it names."""
    from harness.checks import all_checks
    from harness.thresholds import GATE_SCHEMA, GATE_SECTION, PACKAGED, packaged_thresholds

    repository = Path(__file__).resolve().parents[2] / "thresholds.yaml"
    assert repository.resolve() == PACKAGED.resolve()
    packaged = packaged_thresholds()
    schemas = {check.name: check.schema for check in all_checks()} | {GATE_SECTION: GATE_SCHEMA}
    for name, schema in schemas.items():
        for key, value in ((packaged.raw.get(name) or {}).get("defaults") or {}).items():
            assert schema.keys[key].default == value, f"{name}.{key}: schema {schema.keys[key].default}, file {value}"
    assert load_thresholds(None).values("ntvd", NtvdCheck.schema, "candidate_review", "accent") == load_thresholds(
        repository
    ).values("ntvd", NtvdCheck.schema, "candidate_review", "accent")


def test_a_partial_file_of_ones_own_is_layered_over_the_built_in_defaults(tmp_path):
    own = thresholds_from(tmp_path, "ntvd:\n  defaults: {max_ntvd: 15.0}\n")
    assert own.values("ntvd", NtvdCheck.schema, "candidate_review", "gender") | {} == {
        **NtvdCheck.schema.defaults(),
        "max_ntvd": 15.0,
        "rule": "significance",
    }
    assert own.values("ntvd", NtvdCheck.schema, "candidate_review", "accent")["max_ntvd"] == 30.0  # built-in, specific
    assert own.values("ntvd", NtvdCheck.schema, "story", "gender")["rule"] == "both"


def test_a_teams_defaults_never_shadow_a_built_in_specific_value(tmp_path):
    """Issue 59, item 5: a team's ``defaults`` replaced the built-in ``dimensions.accent.max_ntvd: 30`` and dropped
    ``candidate_review: {rule: significance}``. A value replaces only the key it names; the specific key, written
    by the team, replaces the built-in one."""
    own = thresholds_from(tmp_path, "ntvd:\n  defaults: {max_ntvd: 25, rule: magnitude}\n")
    assert (ntvd_threshold(own, "story", "gender").max_ntvd, ntvd_threshold(own, "story", "gender").rule) == (
        25, "magnitude")  # fmt: skip
    assert ntvd_threshold(own, "story", "accent").max_ntvd == 30.0
    assert ntvd_threshold(own, "candidate_review", "gender").rule == "significance"
    assert ntvd_threshold(own, "candidate_review", "gender").max_ntvd == 25
    specific = thresholds_from(
        tmp_path,
        "ntvd:\n  defaults: {max_ntvd: 25}\n  dimensions: {accent: {max_ntvd: 40}}\n"
        "  tasks: {candidate_review: {rule: both}}\n",
    )
    assert ntvd_threshold(specific, "story", "accent").max_ntvd == 40
    assert ntvd_threshold(specific, "candidate_review", "gender").rule == "both"


def test_a_shipped_preset_is_a_whole_criterion_and_a_teams_file_over_it_is_layered_by_key(tmp_path):
    preset = load_thresholds("preset:vibe")
    assert ntvd_threshold(preset, "candidate_review", "gender").rule == "q-value"
    (tmp_path / "thresholds.yaml").write_text("preset: vibe\nntvd:\n  defaults: {max_ntvd: 25}\n")
    own = load_thresholds(tmp_path / "thresholds.yaml")
    assert ntvd_threshold(own, "candidate_review", "accent").rule == "q-value"
    assert ntvd_threshold(own, "story", "accent").max_ntvd == 30.0


def test_the_clones_link_to_the_built_in_file_is_not_a_file_of_ones_own():
    """The repository's top-level thresholds.yaml links to the built-in file: its dimension blocks are the
    defaults', not overrides, so a session without accent gets no "unused" note (issue 59, item 5)."""
    from harness.checks import all_checks
    from harness.extraction.vibe_protocol import VIBE_SCHEMA
    from harness.gate import Gate, GateConfig
    from harness.gate.audio_floor import AUDIO_FLOOR_SCHEMA
    from harness.thresholds import GATE_SCHEMA

    path = Path(__file__).resolve().parents[2] / "thresholds.yaml"
    gate = Gate(GateConfig(thresholds_path=str(path)))
    schemas = {check.name: check.gate_schema() for check in all_checks()}
    schemas |= {"gate": GATE_SCHEMA, "vibe": VIBE_SCHEMA, "audio_floor": AUDIO_FLOOR_SCHEMA}
    linked = load_thresholds(path)
    linked.validate(schemas, {check.name: check.variants(gate.context) for check in all_checks()}, ("gender",))
    assert path.is_symlink() and linked.packaged and linked.notes == []


def test_the_gates_own_sections_are_typed_like_a_checks(tmp_path):
    """Issue 60 item 3: ``gate`` and ``audio_floor`` parse into their settings classes (attributes, never keys); a
    file's values lie over the built-in ones, and a bad value names the file and the key."""
    from harness.gate.audio_floor import AudioFloorSettings
    from harness.thresholds import GateSettings, packaged_thresholds

    built_in = packaged_thresholds()
    assert built_in.gate() == GateSettings(alpha=0.05, correction="bonferroni")
    assert AudioFloorSettings.from_thresholds(built_in) == AudioFloorSettings(
        probe_requests_per_task=24, audio_blind_share=0.9, alpha=0.01
    )
    path = tmp_path / "thresholds.yaml"
    path.write_text("gate:\n  defaults: {alpha: 0.01, correction: none}\naudio_floor:\n  defaults: {alpha: 0.05}\n")
    own = load_thresholds(path)
    assert own.gate() == GateSettings(alpha=0.01, correction="none")
    assert isinstance(own.gate().alpha, float)
    floor = AudioFloorSettings.from_thresholds(own)
    assert (floor.alpha, floor.probe_requests_per_task) == (0.05, 24)
    path.write_text("gate:\n  defaults: {correction: holm}\n")
    with pytest.raises(ThresholdsError, match=rf"{path}: gate.correction = 'holm' is not one of bonferroni, none"):
        load_thresholds(path).gate()


def test_every_shipped_check_is_parametrized_by_its_thresholds_class():
    """``Check.thresholds()`` returns the check's own settings class (``Check[NtvdThresholds]``), not ``Any``."""
    import typing

    from harness.checks import all_checks
    from harness.checks.base import Check, SettingsT

    assert typing.get_type_hints(Check.thresholds)["return"] is SettingsT
    assert SettingsT.__bound__.__name__ == "SectionThresholds"
    unparametrized = []
    for check in all_checks():
        declared = [
            typing.get_args(base)[0]
            for klass in type(check).__mro__
            for base in getattr(klass, "__orig_bases__", ())
            if typing.get_origin(base) is Check
        ]
        if not declared:
            unparametrized.append(check.name)
            continue
        assert declared[0] is check.schema.settings, check.name
    print("checks not yet parametrized by their thresholds class:", unparametrized)
    assert set(unparametrized) <= {"counterfactual"}  # edited in parallel (issue 60); may only shrink
