"""Thresholds and baselines (issue 13, part 7): duplicate YAML keys, ``lower > upper``, files that are not
UTF-8, overrides of dimensions the session lacks (reported, not fatal), unknown dimensions (an error) and
malformed baselines, each one clear error naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checks.ntvd.check import NtvdCheck
from harness.checks.wer_ratio.check import WerRatioCheck
from harness.tasks import TASKS
from harness.thresholds import ThresholdsError, known_dimensions, load_thresholds

from support.gate import gate_project as make_gate_project

pytest_plugins = ["pytester"]
SCHEMAS = {"ntvd": NtvdCheck.schema, "wer_ratio": WerRatioCheck.schema}
VARIANTS = {"ntvd": sorted(TASKS), "wer_ratio": []}


def validated(tmp_path, text, dimensions=("gender", "accent")):
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    thresholds = load_thresholds(path)
    thresholds.validate(SCHEMAS, VARIANTS, dimensions)
    return thresholds


@pytest.mark.parametrize("text, message", [
    ("ntvd:\n  defaults: {max_ntvd: 20.0}\nntvd:\n  defaults: {max_ntvd: 5.0}\n", "duplicate key 'ntvd' (first on line 1)"),
    ("ntvd:\n  defaults:\n    alpha: 0.05\n    max_ntvd: 20.0\n    max_ntvd: 40.0\n", "duplicate key 'max_ntvd' (first on line 4)"),
    ("ntvd:\n  dimensions: {gender: {}, gender: {max_ntvd: 1.0}}\n", "duplicate key 'gender'"),
])  # fmt: skip
def test_a_key_given_twice_is_refused_with_the_file_and_both_lines(tmp_path, text, message):
    with pytest.raises(ThresholdsError) as error:
        validated(tmp_path, text)
    assert str(tmp_path / "thresholds.yaml") in str(error.value) and message in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("wer_ratio:\n  defaults: {lower: 0.95, upper: 1.0, rule: bounds}\n", None),
    ("wer_ratio:\n  defaults: {lower: 1.2, upper: 1.1}\n", "wer_ratio.defaults: lower = 1.2 exceeds upper = 1.1"),
    ("wer_ratio:\n  dimensions: {accent: {lower: 1.5, upper: 1.4}}\n", "wer_ratio.dimensions.accent: lower = 1.5 exceeds upper = 1.4"),
    # each layer is fine alone; the merged gender case is not
    ("wer_ratio:\n  defaults: {upper: 1.3}\n  dimensions: {gender: {lower: 1.4}}\n",
     "wer_ratio: lower = 1.4 exceeds upper = 1.3 once the layers are merged (gender)"),
])  # fmt: skip
def test_lower_above_upper_is_refused_in_a_layer_and_once_merged(tmp_path, text, message):
    if message is None:
        validated(tmp_path, text)
        return
    with pytest.raises(ThresholdsError) as error:
        validated(tmp_path, text)
    assert str(tmp_path / "thresholds.yaml") in str(error.value) and message in str(error.value)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("# seuils de l'équipe\nntvd:\n  defaults: {max_ntvd: 20.0}\n".encode("latin-1"))
    with pytest.raises(ThresholdsError) as error:
        load_thresholds(path)
    assert str(error.value).startswith(f"{path}: not UTF-8 text (byte 14: b'\\xe9')")


def test_an_override_of_a_dimension_the_session_lacks_is_reported_not_fatal(tmp_path):
    text = "ntvd:\n  dimensions:\n    accent: {max_ntvd: 30.0}\n  tasks:\n    story:\n      dimensions: {race: {max_ntvd: 5.0}}\n"
    with pytest.warns(UserWarning, match="ntvd.dimensions.accent is unused"):
        thresholds = validated(tmp_path, text, dimensions=("gender", "age_group"))
    assert thresholds.notes == [
        "ntvd.dimensions.accent is unused: no corpus or suite of this session has dimension 'accent' (it has age_group, gender)",
        "ntvd.tasks.story.dimensions.race is unused: no corpus or suite of this session has dimension 'race' (it has age_group, gender)",
    ]
    assert validated(tmp_path, text, dimensions=("gender", "accent", "race")).notes == []


def test_known_dimensions_are_the_loaders_and_the_shipped_demo_data():
    assert known_dimensions() == {
        "gender",
        "accent",
        "age",
        "age_group",
        "race",
        "ethnicity",
        "first_language",
        "socioeconomic",
    }


# ---------------------------------------------------------------------------------------------------------
# Through the real plugin


@pytest.fixture
def gate_project(pytester):
    return make_gate_project(pytester, "test_vibe.py")


def run(project, *args, selection=("-k", "story and gender")):
    # 999 permutations: with 99 the smallest p (0.01) cannot reach the corrected alpha of a full run (0.005), so
    # candidate review's significance-rule cases would be unmeasured (issue 45: testability per contrast)
    return project.runpytest_subprocess("-p", "no:cacheprovider", "--permutations", "999", "--model", "sim:fair",
                                        "--cache-dir", str(project.path / "cache"), *selection, *args)  # fmt: skip


def test_gate_runs_with_an_override_for_a_missing_dimension_and_says_so(gate_project):
    (gate_project.path / "shared.yaml").write_text(
        "ntvd:\n  dimensions:\n    age_group: {max_ntvd: 25.0}\n    accent: {max_ntvd: 30.0}\n"
    )
    result = run(gate_project, "--thresholds", "shared.yaml", "--corpus", "demo")
    result.assert_outcomes(passed=1)
    notes = json.loads((gate_project.path / "results.json").read_text())["metadata"]["thresholds"]["notes"]
    assert notes == ["ntvd.dimensions.age_group is unused: no corpus or suite of this session has dimension 'age_group' "
                     "(it has accent, age, gender)"]  # fmt: skip
    assert "ntvd.dimensions.age_group is unused" in result.stdout.str()


def test_gate_refuses_a_dimension_of_no_known_kind_and_a_duplicate_key(gate_project):
    (gate_project.path / "typo.yaml").write_text("ntvd:\n  dimensions:\n    gendre: {max_ntvd: 25.0}\n")
    result = run(gate_project, "--thresholds", "typo.yaml")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)  # a setup problem, never a verdict
    output = result.stdout.str() + result.stderr.str()
    assert (
        "typo.yaml: ntvd.dimensions: unknown dimension 'gendre'; valid: accent, age, age_group, ethnicity, first_language, gender, race, socioeconomic"
        in output
    )
    (gate_project.path / "twice.yaml").write_text("ntvd:\n  defaults: {max_ntvd: 20.0}\n  defaults: {max_ntvd: 90.0}\n")
    result = run(gate_project, "--thresholds", "twice.yaml")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)  # a setup problem, never a verdict
    assert "duplicate key 'defaults' (first on line 2)" in result.stdout.str() + result.stderr.str()


_RELEASED: dict[str, str] = {}


def released_vibe_run(project) -> dict:
    """A full VIBE run's results.json, run once per test process: every damage below is made to a copy of it."""
    if "results" not in _RELEASED:
        run(project, "--results-json", "released.json", selection=()).assert_outcomes(passed=10)
        _RELEASED["results"] = (project.path / "released.json").read_text()
    return json.loads(_RELEASED["results"])


@pytest.mark.parametrize("damage, message", [
    (lambda cases: cases[0].pop("model"), "damaged.json, case 0 (sim:fair-advisory-accent): ntvd record lacks key(s) ['model']"),
    (lambda cases: cases[0].update(paired_data="speaker,count"), "damaged.json, case 0 (sim:fair-advisory-accent): key 'paired_data' must be dict or null, got 'speaker,count'"),
    (lambda cases: cases[0].update(paired_data={"speaker": ["a", "b"], "count": 3}), "damaged.json: not a usable baseline: case 0 (sim:fair-advisory-accent): 'paired_data.count' is a int, expected a list"),
])  # fmt: skip
def test_a_malformed_baseline_is_one_error_naming_the_file_and_the_first_bad_case(gate_project, damage, message):
    released = released_vibe_run(gate_project)
    damage(released["cases"])
    (gate_project.path / "damaged.json").write_text(json.dumps(released))
    result = run(gate_project, "--baseline", "damaged.json")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)  # a setup problem, never a verdict
    output = result.stdout.str() + result.stderr.str()
    assert message in output  # the reader names file, case and key; the baseline check the per-speaker table
    assert "KeyError" not in output and "DataFrame constructor" not in output


@pytest.mark.parametrize("args, message", [
    (("--permutations", "0"), "--permutations 0: the permutation tests need at least 1 permutation"),
    (("--permutations", "-5"), "--permutations -5: the permutation tests need at least 1 permutation"),
    (("--fairness-seed", "-1"), "--fairness-seed -1: a seed is a whole number >= 0"),
    (("--baseline-model", "sim:fair"), "--baseline-model sim:fair: names a model of a --baseline file, and no --baseline was given"),
])  # fmt: skip
def test_bad_run_settings_are_one_setup_error_before_any_case(gate_project, args, message):
    result = run(gate_project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert f"ERROR: lalm-fairness: {message}" in output and "not measured" not in output


def test_yaml_1_2_floats_without_a_dot_are_numbers(tmp_path):
    thresholds = validated(tmp_path, "ntvd:\n  defaults: {alpha: 1e-3}\n  dimensions:\n    accent: {alpha: 5E-2}\n")
    assert thresholds.values("ntvd", NtvdCheck.schema, "story", "gender")["alpha"] == 0.001
    assert thresholds.values("ntvd", NtvdCheck.schema, "story", "accent")["alpha"] == 0.05


def test_a_baseline_of_several_models_is_read_for_the_candidate_it_holds(gate_project):
    run(gate_project, "--model", "sim:biased", "--results-json", "released.json", selection=())
    released = json.loads((gate_project.path / "released.json").read_text())
    assert {case["model"] for case in released["cases"]} == {"sim:fair", "sim:biased"}
    result = run(gate_project, "--baseline", "released.json")
    assert result.ret in (0, 7)  # read for sim:fair: passed, or unmeasured where its release test is underpowered
    assert json.loads((gate_project.path / "results.json").read_text())["metadata"]["baseline"]["model"] == "sim:fair"


def test_a_manifest_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    from harness.data import CorpusError, load_corpus

    (tmp_path / "manifest.csv").write_bytes(
        "utterance_id,audio,speaker_id,transcript,gender\nu1,a.wav,s1,caf\xe9 au lait,female\n".encode("latin-1")
    )
    with pytest.raises(CorpusError, match=r"manifest.csv: line 2, column 16: byte 0xe9 is not UTF-8"):
        load_corpus(tmp_path / "manifest.csv")


def test_run_from_a_subfolder_says_which_thresholds_apply_and_names_an_unused_one_above(pytester, monkeypatch):
    """Issue 23: a team's thresholds.yaml one folder above pytest's rootdir (no ini file) is not silently ignored:
    the header names the file in force (the built-in defaults) and the one above that is not used. Outputs default
    to the rootdir, as the thresholds file and the cache do."""
    import shutil

    from harness.thresholds import PACKAGED

    (pytester.path / "thresholds.yaml").write_text("ntvd:\n  defaults: {max_ntvd: 12.0}\n")
    (pytester.path / ".git").mkdir()
    sub = pytester.path / "gate"
    sub.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "fairness_tests" / "test_vibe.py", sub / "test_vibe.py")
    (sub / "conftest.py").write_text('pytest_plugins = ["harness.plugin"]\n')
    monkeypatch.chdir(sub)
    result = pytester.runpytest_subprocess("--model", "sim:fair", "-k", "advisory-gender", "-p", "no:cacheprovider")
    output = result.stdout.str()
    assert (
        f"lalm-fairness: thresholds {PACKAGED} (the built-in defaults: no thresholds.yaml in the rootdir {sub}"
        in output
    )
    assert f"lalm-fairness: WARNING: {pytester.path / 'thresholds.yaml'} is not used: the rootdir is {sub}" in output
    assert f"outputs {sub / 'results.json'}, {sub / 'report.html'}" in output
    assert (sub / "results.json").is_file() and (sub / ".lalm_cache").is_dir()
    results = json.loads((sub / "results.json").read_text())
    assert results["metadata"]["thresholds"]["source"] == f"<built-in defaults: {PACKAGED}>"
    assert results["metadata"]["cache_dir"] == ".lalm_cache"  # relative to the folder pytest ran in


def test_a_checkpoint_path_that_does_not_exist_stops_the_run_before_any_case(pytester):
    """Issue 23: ``hf:/nonexistent/path`` gave 33 unmeasured cases in 149 lines (exit 7); now one ERROR line, exit 4.
    With --offline (re-scoring a cache made elsewhere) the path is not needed and is not checked."""
    make_gate_project(pytester, "test_vibe.py")
    result = pytester.runpytest_subprocess("--model", "hf:/nonexistent/path", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: lalm-fairness: model hf:/nonexistent/path: checkpoint folder /nonexistent/path does not exist"]
    )
    assert "PASSED" not in result.stdout.str() and "FAILED" not in result.stdout.str()


def test_the_hf_backend_without_torch_says_what_to_install(monkeypatch):
    import importlib.util

    from harness.models import build_backend

    backend = build_backend("hf:Qwen/Qwen2-Audio-7B-Instruct")
    assert backend.unavailable() is None
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "torch" else real(name, *args))
    assert backend.unavailable() == (
        "torch is not installed: the hf: backend needs the [hf] extra (pip install 'lalm-fairness[hf]' torch==2.13.0)"
    )


def tiny_corpus(folder: Path, takes: int = 6) -> Path:
    """3 speakers per gender, ``takes`` recordings each (a tone of its own pitch), its manifest's path."""
    from support.corpora import write_tone

    (folder / "tiny" / "audio").mkdir(parents=True)
    rows = []
    for position, (speaker, gender) in enumerate(
        [("f1", "female"), ("f2", "female"), ("f3", "female"), ("m1", "male"), ("m2", "male"), ("m3", "male")]
    ):
        for take in range(takes):
            write_tone(
                folder / "tiny" / "audio" / f"{speaker}_{take}.wav",
                seconds=1.0,
                hz=(240.0 if gender == "female" else 110.0) + position + 0.3 * take,
            )
            rows.append(
                f"{speaker}_{take},audio/{speaker}_{take}.wav,{speaker},c{take},the cat sat on the mat number {take},{gender}"
            )
    manifest = folder / "tiny" / "manifest.csv"
    manifest.write_text("utterance_id,audio,speaker_id,content_id,transcript,gender\n" + "\n".join(rows) + "\n")
    return manifest


def test_a_small_corpus_whose_attributes_tau_drops_is_unmeasured_not_passed(pytester):
    """Issue 23: with 3 speakers per gender, tau = 10 drops most Story attributes; the case used to report
    nTVD = 0.00 and pass a strongly biased model. It is unmeasured now, naming the attributes."""
    make_gate_project(pytester, "test_vibe.py")
    manifest = tiny_corpus(pytester.path)
    result = pytester.runpytest_subprocess(
        "--model",
        "sim:biased",
        "--corpus",
        f"tiny={manifest}",
        "-k",
        "story",
        "-p",
        "no:cacheprovider",
        "--permutations",
        "99",
    )
    (case,) = [
        case
        for case in json.loads((pytester.path / "results.json").read_text())["cases"]
        if case["id"].endswith("story-gender")
    ]
    assert (
        case.get("status") == "unmeasured"
        and "tau = 10 removes most answers of" in case["message"]
        and "of the task's 6 attributes" in case["message"]
    )
    assert result.ret == 7


def test_the_simulators_transcribe_any_corpus(pytester):
    """Issue 23: on a corpus other than the demo the simulators returned empty transcripts, so every WER case was
    "every trial is an event". They read the manifest's text now, with their pitch-driven errors."""
    make_gate_project(pytester, "test_wer.py")
    manifest = tiny_corpus(pytester.path)
    pytester.runpytest_subprocess(
        "--model", "sim:biased", "--corpus", f"tiny={manifest}", "-k", "wer_ratio", "-p", "no:cacheprovider"
    )
    (case,) = json.loads((pytester.path / "results.json").read_text())["cases"]
    assert case["check"] == "wer_ratio" and "every trial is an event" not in case["message"]
    # male / female (the paper's orientation): sim:biased mis-hears the higher female voices more
    assert case["value"] is not None and case["value"] < 1, case["message"]


def test_a_baseline_from_another_corpus_is_said_not_silent(pytester):
    """Issue 23: a baseline measured on another corpus made the cases silently "new"; the run now says which
    corpus cannot be paired, in the terminal and in results.json."""
    make_gate_project(pytester, "test_vibe.py")
    manifest = tiny_corpus(pytester.path, takes=12)
    pytester.runpytest_subprocess(
        "--model",
        "sim:fair",
        "--corpus",
        f"tiny={manifest}",
        "-p",
        "no:cacheprovider",
        "--permutations",
        "99",
        "--results-json",
        "tiny.json",
    )
    result = pytester.runpytest_subprocess(
        "--model",
        "sim:fair",
        "-k",
        "advisory-gender",
        "-p",
        "no:cacheprovider",
        "--permutations",
        "99",
        "--baseline",
        "tiny.json",
    )
    note = "corpus 'demo' is not in the baseline tiny.json (it measured tiny): its cases are new, judged by their absolute thresholds"
    assert f"lalm-fairness: warning: {note}" in result.stdout.str()
    results = json.loads((pytester.path / "results.json").read_text())
    assert results["metadata"]["baseline"]["notes"] == [note]
    measured = [case for case in results["cases"] if case.get("status") != "unmeasured"]
    assert [case["baseline"]["status"] for case in measured] == ["new"]
    # issue 45: the baseline's cases on its corpus are not in this run's gate, each an unmeasured case naming it
    missing = [case for case in results["cases"] if case.get("status") == "unmeasured"]
    baseline_cases = json.loads((pytester.path / "tiny.json").read_text())["cases"]
    assert len(missing) == len(baseline_cases) == 5 and all(case["corpus"] == "tiny" for case in missing)
    assert all("this run has no corpus or BASIS item set 'tiny'" in case["message"] for case in missing)


def test_a_model_config_without_a_models_mapping_is_one_setup_error(pytester):
    """A --model-config that is not a ``models:`` mapping gave one setup error per gate module; now one ERROR line, exit 4."""
    make_gate_project(pytester, "test_vibe.py", "test_wer.py")
    (pytester.path / "models.yaml").write_text("sim:fair:\n  decoding: {seed: 1}\n")
    result = pytester.runpytest_subprocess(
        "--model", "sim:fair", "--model-config", "models.yaml", "-p", "no:cacheprovider"
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: --model-config models.yaml: expected a 'models' mapping of spec -> option block"]
    )
    assert "ERROR at setup" not in result.stdout.str()
