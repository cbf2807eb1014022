"""The two command-line tools: plain-text help, a cache folder that does not exist refused, a report moved aside."""

import json

import pytest

from harness.cache import main as cache_main
from harness.report.cli import PREVIOUS_SUFFIX
from harness.report.cli import main as report_main

from support.records import case
from support.records import results_json as results_of


@pytest.mark.parametrize("main", [cache_main, report_main])
def test_help_is_plain_text_and_every_option_has_help(main, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text and ":mod:" not in text
    assert "--cache-dir DIR       the cache folder" in text or "-o FILE, --output FILE" in text


@pytest.mark.parametrize("command", [["stats"], ["export", "--file", "out.jsonl.gz"]])
def test_the_cache_command_refuses_a_cache_folder_that_does_not_exist(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cache_main([*command, "--cache-dir", "typo"]) == 2
    assert capsys.readouterr().err.startswith(f"lalm-fairness-cache: {command[0]}: cache folder typo does not exist")
    assert not (tmp_path / "typo").exists() and not (tmp_path / "out.jsonl.gz").exists()


def test_import_creates_the_cache_folder_and_stats_then_reads_it(tmp_path, capsys):
    assert cache_main(["stats", "--cache-dir", str(tmp_path / "cache")]) == 2
    (tmp_path / "cache").mkdir()
    assert cache_main(["stats", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert ": 0 entries" in capsys.readouterr().out


def test_the_report_command_moves_an_existing_report_aside_as_the_gate_does(tmp_path, capsys):
    from harness.plugin import PREVIOUS_SUFFIX as GATE_SUFFIX

    assert PREVIOUS_SUFFIX == GATE_SUFFIX
    results = tmp_path / "results.json"
    results.write_text(json.dumps(results_of([case()])))
    report = tmp_path / "report.html"
    report.write_text("the earlier report")
    assert report_main([str(results), "-o", str(report)]) == 0
    assert (tmp_path / f"report.html{PREVIOUS_SUFFIX}").read_text() == "the earlier report"
    assert report.read_text().startswith("<!DOCTYPE html>")
    assert f"the earlier report moved to {report}{PREVIOUS_SUFFIX}" in capsys.readouterr().out
