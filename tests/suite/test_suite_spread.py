"""Issue 61, item 3: the builder states how each dimension's groups are spread over banks and voices, refuses a
dimension whose bank determines its group (exit 1, naming the cells) unless ``--allow-engine-confound``, which every
surface of a gate run on the suite then names, and warns where a group has too few voices for a permutation over
voices to reach the gate's alpha."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.data.provenance import provenance_summary
from harness.gate.run import run_lines
from harness.report import write_report
from harness.report.ci_summary import render_summary
from harness.results import read_results
from harness.results.metadata import CorpusEntry, SuiteProvenance
from harness.suite.banks import VOICE_BANKS
from harness.suite.cli import main as suite_main
from harness.suite.spread import DimensionSpread, GroupSpread, dimension_spreads, voice_warnings
from harness.suite.voices import read_voices

from support.suite_inputs import write_items

BANKS = ("tone-a", "tone-b", "tone-c")
FILTERS_OFF = ["--no-wer-filter", "--no-perceived-filter", "--no-outliers", "--no-progress"]
DEMO_RESULTS = "harness/data/demo_outputs/voice-blind/results.json"


@pytest.fixture
def tone_banks():
    for name in BANKS:
        VOICE_BANKS.register(name, f"support.suite_inputs:TONE_{name[-1].upper()}")
    yield
    for name in BANKS:
        VOICE_BANKS.pop(name, None)


def accent_voices(banks_of: dict[str, list[str]]) -> str:
    """Per accent, one female and one male voice per bank listed, as a --voices argument."""
    return ",".join(
        f"{bank}:{100 * (place + 1) + 10 * number + (gender == 'male')}@accent={accent}@gender={gender}"
        for place, (accent, banks) in enumerate(banks_of.items())
        for number, bank in enumerate(banks)
        for gender in ("female", "male")
    )


def build(tmp_path, voices: str, *extra: str) -> int:
    return suite_main(["build", "--items", str(write_items(tmp_path, 2)), "--voices", voices,
                       "--out", str(tmp_path / "suite"), *FILTERS_OFF, *extra])  # fmt: skip


def test_the_builder_refuses_an_engine_confounded_accent_suite_naming_the_cells(tmp_path, tone_banks, capsys):
    voices = accent_voices({"us": ["tone-a", "tone-a"], "de": ["tone-b", "tone-b"]})
    assert build(tmp_path, voices) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("ERROR: lalm-fairness-suite: --voices: engine confound")
    assert "accent=us: tone-a (spk01, spk02, spk03, spk04); accent=de: tone-b (spk05, spk06, spk07, spk08)" in error[0]
    assert "--allow-engine-confound" in error[0] and not (tmp_path / "suite").exists()


def test_disjoint_banks_confound_a_dimension_and_a_shared_or_single_bank_does_not():
    def spread(*groups: tuple[str, ...]) -> DimensionSpread:
        return DimensionSpread("accent", tuple(GroupSpread(f"g{n}", {b: ("s",) for b in banks})
                                               for n, banks in enumerate(groups)))  # fmt: skip

    assert spread(("rhvoice",), ("mbrola",)).engine_confounded
    assert spread(("rhvoice", "festival"), ("mbrola", "espeak-ng")).engine_confounded
    assert not spread(("rhvoice", "mbrola"), ("mbrola",)).engine_confounded
    assert not spread(("espeak-ng",), ("espeak-ng",)).engine_confounded
    assert not spread(("espeak-ng",)).engine_confounded


def test_the_report_and_provenance_spread_each_group_over_banks_and_warn_of_few_voices(tmp_path, tone_banks, capsys):
    voices = accent_voices({"us": ["tone-a", "tone-b"], "de": ["tone-b", "tone-c"]})
    assert build(tmp_path, voices) == 0
    provenance = json.loads((tmp_path / "suite" / "provenance.json").read_text())
    assert provenance["spread"]["accent"] == {
        "us": {"voices": 4, "banks": {"tone-a": ["spk01", "spk02"], "tone-b": ["spk03", "spk04"]}},
        "de": {"voices": 4, "banks": {"tone-b": ["spk05", "spk06"], "tone-c": ["spk07", "spk08"]}},
    }
    assert provenance["engine_confound"] == {"allowed": False, "dimensions": []}
    report = (tmp_path / "suite" / "build-report.txt").read_text()
    assert "  accent over banks: us 2 bank(s) / 4 voice(s) (tone-a 2, tone-b 2); de 2 bank(s) / 4 voice(s)" in report
    # 2 genders x 2 groups of 4 voices: a permutation over 4 + 4 voices reaches 2 4! 4! / 8! = 0.029 <= 0.05
    assert "WARNING" not in report
    # 2 voices per group: 2 2! 2! / 4! = 0.33, 3 per group 0.1: the permutation needs 4
    short = voice_warnings(dimension_spreads(read_voices(accent_voices({"us": ["tone-a"], "de": ["tone-a"]}))), 0.05)
    assert short[0].startswith("accent=us: 2 voice(s), fewer than the 4 per group a permutation over voices across "
                               "2 groups needs to reach p <= 0.05")  # fmt: skip
    assert len(short) == 4  # us, de, female, male


def test_an_allowed_engine_confound_is_named_on_every_surface_of_a_gate_run(tmp_path, tone_banks, capsys):
    voices = accent_voices({"us": ["tone-a", "tone-a"], "de": ["tone-b", "tone-b"]})
    assert build(tmp_path, voices, "--allow-engine-confound") == 0
    suite = tmp_path / "suite"
    assert "ENGINE CONFOUND (built with --allow-engine-confound): accent: the bank determines the group" in (
        suite / "build-report.txt").read_text()  # fmt: skip
    assert json.loads((suite / "provenance.json").read_text())["engine_confound"]["allowed"] is True
    record = SuiteProvenance(**provenance_summary(suite))
    assert record.engine_confound == [
        "accent: the bank determines the group (accent=us: tone-a (spk01, spk02, spk03, spk04); "
        "accent=de: tone-b (spk05, spk06, spk07, spk08))"
    ]
    results = read_results(DEMO_RESULTS)
    corpora = {"built": CorpusEntry(path=str(suite / "manifest.csv"), provenance=record)}
    results = dataclasses.replace(results, metadata=dataclasses.replace(results.metadata, corpora=corpora))
    named = "corpus built was built with --allow-engine-confound: accent: the bank determines the group"
    assert any(named in line for line in run_lines(results))  # the terminal
    assert results.to_json()["metadata"]["corpora"]["built"]["provenance"]["engine_confound"] == record.engine_confound
    assert named in write_report(results, tmp_path / "report.html").read_text()  # the report's deviations
    assert named in render_summary(results)  # the CI summary


def test_filters_that_leave_each_accent_on_banks_of_its_own_make_the_build_exit_1(tmp_path, tone_banks, capsys):
    # tone-b reads both accents as declared; voice:praat hears its two us voices as the other gender and drops them,
    # so that the admitted us voices are all tone-a's and the de voices tone-b's and tone-c's
    voices = ",".join([
        "tone-a:220@accent=us@gender=female", "tone-a:110@accent=us@gender=male",
        "tone-b:120@accent=us@gender=female", "tone-b:230@accent=us@gender=male",
        "tone-b:235@accent=de@gender=female", "tone-c:225@accent=de@gender=female", "tone-c:115@accent=de@gender=male",
    ])  # fmt: skip
    status = suite_main(["build", "--items", str(write_items(tmp_path, 2)), "--voices", voices, "--out",
                         str(tmp_path / "suite"), "--no-wer-filter", "--no-outliers", "--no-progress"])  # fmt: skip
    assert status == 1, capsys.readouterr()
    provenance = json.loads((tmp_path / "suite" / "provenance.json").read_text())
    assert provenance["filters"]["perceived_group"]["dropped_voices"] == ["spk03", "spk04"]
    assert provenance["problems"] == [
        "after the filters, accent: the bank determines the group (accent=us: tone-a (spk01, spk02); "
        "accent=de: tone-b (spk05), tone-c (spk06, spk07))"
    ]
    assert not (tmp_path / "suite" / "manifest.csv").exists()
