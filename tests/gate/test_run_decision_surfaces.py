"""One decision per run and per model, made once by the gate and read by every surface (issue 47, item 1).

Real gate runs of the VIBE module (``sim:fair`` passes every case, ``sim:biased`` fails four) write results.json,
report.html and summary.md; each surface (the terminal's last lines, the report's "Per model", the CI summary's
list and the trend section) must show the per-model verdicts that results.json's ``decision`` holds, for a full
run, a run stopped by ``-x`` and a ``-k`` spot check. Then the decision is swapped for a sentinel: the surfaces
show the sentinel, so none derives a verdict of its own.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from harness.gate.run import terminal_lines
from harness.report import render_report
from harness.report.ci_summary import render_summary
from harness.report.trend import trend_view
from harness.results import RunResults, parse_results, read_results
from harness.run_decision import ModelDecision, RunDecision

from support.gate import gate_project
from support.records import case, results, results_json

MODELS = ("sim:fair", "sim:biased")

pytest_plugins = ["pytester"]


@pytest.fixture
def vibe_project(pytester: pytest.Pytester) -> pytest.Pytester:
    return gate_project(pytester, "test_vibe.py")


def run_both_models(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, Path]:
    """Run the VIBE gate on both simulators with every output of the run; its result and run folder."""
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--permutations", "999", "--model", MODELS[0], "--model", MODELS[1],
        "--cache-dir", str(project.path / "cache"), "--summary-md", "summary.md", *args,
    )  # fmt: skip
    return result, project.path


def terminal_verdicts(output: str) -> dict[str, str]:
    return dict(re.findall(r"^lalm-fairness: model (\S+): ([A-Z-]+) \(", output, flags=re.MULTILINE))


def report_verdicts(html: str) -> dict[str, str]:
    per_model = re.search(r'<p class="model-verdicts">Per model: (.*?)</p>', html)
    assert per_model, "the report has no per-model verdicts"
    return dict(re.findall(r"<code>([^<]+)</code> <span class=\"[a-z-]+\"[^>]*>([A-Z-]+)</span>", per_model.group(1)))


def summary_verdicts(markdown: str) -> dict[str, str]:
    return dict(re.findall(r"^- `([^`]+)`: \*\*([A-Z-]+)\*\*", markdown, flags=re.MULTILINE))


def trend_verdicts(results: RunResults) -> dict[str, str]:
    """The per-model verdicts of the last run in the trend section of a two-run series (the run twice)."""
    view = trend_view(["1.2", "1.3"], [results, results], {})
    html = render_report(results, trend=view)
    table = re.search(r'<table class="run-verdicts">(.*?)</table>', html, flags=re.DOTALL)
    assert table, "the trend section lists no run verdicts"
    last_row = table.group(1).strip().splitlines()[-1]
    assert {model["model"]: model["verdict"] for model in view["runs"][-1]["models"]} == {
        model.model: model.verdict for model in results.decision.models
    }
    return dict(re.findall(r"<code>([^<]+)</code> <span class=\"[a-z-]+\">([A-Z-]+)</span>", last_row))


def assert_every_surface_agrees(result: pytest.RunResult, folder: Path) -> dict[str, ModelDecision]:
    """Every surface shows the per-model verdicts of results.json's decision; that decision, by model."""
    results = read_results(folder / "results.json")
    stored = {model.model: model.verdict.upper() for model in results.decision.models}
    assert set(stored) == set(MODELS)
    output = result.stdout.str()
    assert terminal_verdicts(output) == stored, output[-3000:]
    plugin_lines = [line for line in output.splitlines() if line.startswith("lalm-fairness: ")]
    last = [line.split(": ", 2)[1] for line in plugin_lines[-len(MODELS) :]]
    assert last == [f"model {model.model}" for model in results.decision.models]  # the last lines: per model
    assert report_verdicts((folder / "report.html").read_text()) == stored
    assert summary_verdicts((folder / "summary.md").read_text()) == stored
    assert trend_verdicts(results) == stored
    return {model.model: model for model in results.decision.models}


@pytest.mark.slow
def test_a_full_run_gives_one_failing_and_one_passing_model_on_every_surface(vibe_project):
    result, folder = run_both_models(vibe_project)
    assert result.ret == 1
    models = assert_every_surface_agrees(result, folder)
    assert models["sim:fair"].verdict == "pass" and models["sim:biased"].verdict == "fail"
    assert (models["sim:fair"].passed, models["sim:biased"].failed) == (10, 4)


@pytest.mark.slow
def test_a_stopped_run_makes_a_model_with_cases_that_did_not_run_incomplete_on_every_surface(vibe_project):
    result, folder = run_both_models(vibe_project, "-x")
    assert result.ret == 2
    models = assert_every_surface_agrees(result, folder)
    assert read_results(folder / "results.json").verdict == "incomplete"
    assert any(model.not_run for model in models.values())
    for model in models.values():
        assert model.verdict == "incomplete" if model.not_run else model.verdict != "incomplete"
        assert model.verdict != "pass" or model.not_run == 0


@pytest.mark.slow
def test_a_spot_check_gives_spot_check_per_model_on_every_surface(vibe_project):
    result, folder = run_both_models(vibe_project, "-k", "advisory")
    assert result.ret == 1  # sim:biased's advisory gender case fails
    models = assert_every_surface_agrees(result, folder)
    assert {model.verdict for model in models.values()} == {"spot-check"}
    assert all(model.left_out == 8 and model.ran == 2 for model in models.values())


def sentinel(results: RunResults) -> RunResults:
    """``results`` with a decision no rule would give its cases: each model's verdict swapped for another."""
    swapped = {"pass": "unmeasured", "fail": "pass", "unmeasured": "fail", "incomplete": "pass", "spot-check": "fail"}
    models = tuple(dataclasses.replace(model, verdict=swapped[model.verdict]) for model in results.decision.models)
    return dataclasses.replace(results, decision=RunDecision("unmeasured", models))


def test_no_surface_derives_a_verdict_of_its_own():
    """With the stored decision replaced by a sentinel, the terminal, report, CI summary and trend show the
    sentinel: they read the decision, they do not derive one from the cases."""
    original = results([case(model="a", passed=True), case(model="b", passed=False)])
    assert {model.model: model.verdict for model in original.decision.models} == {"a": "pass", "b": "fail"}
    forged = sentinel(original)
    expected = {"a": "UNMEASURED", "b": "PASS"}
    assert terminal_verdicts("\n".join(terminal_lines(forged))) == expected
    assert terminal_lines(forged)[0].startswith("lalm-fairness: verdict unmeasured:")
    html = render_report(forged)
    assert report_verdicts(html) == expected and "<title>lalm-fairness report: UNMEASURED</title>" in html
    markdown = render_summary(forged)
    assert summary_verdicts(markdown) == expected and markdown.startswith("### Voice-induced bias gate: **UNMEASURED**")
    assert trend_verdicts(forged) == expected


def test_a_stored_decision_is_read_back_and_a_bad_one_is_refused_by_name(tmp_path):
    """results.json keeps the decision; the loader reads it as written (never re-derived) and refuses one that
    does not fit, naming the file and the key; a file without one gets it derived at load."""
    document = results_json([case(model="a", passed=True), case(model="b", passed=False)])
    derived = parse_results(document, "old.json").decision
    assert derived == RunDecision("fail", (ModelDecision("a", "pass", passed=1), ModelDecision("b", "fail", failed=1)))
    stored = {"verdict": "fail", "models": [{"model": "a", "verdict": "incomplete", "not_run": 3}]}
    assert parse_results(document | {"decision": stored}).decision.models == (
        ModelDecision("a", "incomplete", not_run=3),
    )
    bad = [
        ({"verdict": "pass", "models": []}, "key 'verdict' is 'fail' but its decision's verdict is 'pass'"),
        (
            {"verdict": "fail", "models": [{"model": "a", "verdict": "maybe"}]},
            r"models\[0\]: key 'verdict' must be one of",
        ),
        (
            {"verdict": "fail", "models": [{"model": "a", "verdict": "pass", "passed": -1}]},
            "key 'passed' must be a whole",
        ),
        ({"verdict": "fail", "models": {}}, "key 'models' must be a list"),
        ({"verdict": "fail", "extra": 1}, r"unknown key\(s\) \['extra'\]"),
    ]
    for decision, message in bad:
        path = tmp_path / "results.json"
        path.write_text(json.dumps(document | {"decision": decision}))
        with pytest.raises(ValueError, match=rf"{re.escape(str(path))}(, decision)?.*{message}"):
            read_results(path)
