"""The release ratchet on constructed baselines (issue 37): against a baseline, a case fails on a new failure
(it fails its criterion, the baseline's case did not) or a significant regression; a case failing in both runs
without a regression is a known failure, which passes and is listed; every record's fields agree."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.checks.base import Verdict
from harness.gate import Gate, GateConfig, release_outcome
from harness.gate.release_thresholds import recorded_layers
from harness.report.summary import first_screen
from harness.results import RunMetadata, RunResults, Summary, parse_results
from harness.results.metadata import ThresholdsEntry, ThresholdsLayer
from harness.run_decision import decide_run

REPO = Path(__file__).resolve().parents[2]
TASK = "advisory"
MARGINS = Path(__file__).with_name("release_margins.yaml")
"""The built-in thresholds with an nTVD release margin of 10 points: the demo's 16 speakers per group detect a
worsening of about 13 (issue 57), so at the built-in margin of 2 every comparison is underpowered (unmeasured, never
'no regression'); at 10 the four outcomes can be told apart."""


def gate(tmp: Path, model: str, baseline: Path | None = None, seed: int = 1) -> Gate:
    return Gate(
        GateConfig(
            models=(model,),
            model_options={model: {"decoding": {"seed": seed}}},
            cache_dir=str(tmp / "cache"),
            thresholds_path=str(MARGINS),
            permutations=9_999,
            tasks=(TASK,),
            progress=False,
            baseline_path=None if baseline is None else str(baseline),
        )
    )


def run(tmp: Path, model: str, baseline: Path | None = None, seed: int = 1) -> dict:
    """The ntvd cases of ``model`` on the advisory task as a results.json (with ``baseline``, judged against it), a
    fresh draw of the model for each decoding ``seed``."""
    runner = gate(tmp, model, baseline, seed)
    records = []
    for case in runner.cases("ntvd"):
        outcome = runner.outcome(case)
        nodeid = f"test_vibe.py::test_ntvd[{case.id}]"
        records.append(
            dataclasses.replace(outcome.record, nodeid=nodeid)
            if isinstance(outcome, Verdict)
            else outcome.record(nodeid)
        )
    records = tuple(records)
    layers = [ThresholdsLayer(**layer) for layer in recorded_layers(runner.thresholds)]
    metadata = RunMetadata(thresholds=ThresholdsEntry(source=str(MARGINS), hash="margins", layers=layers))
    return RunResults(decide_run(records), Summary.of(records), metadata, records).to_json()


def write(tmp: Path, name: str, results: dict) -> Path:
    path = tmp / name
    path.write_text(json.dumps(results))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("release")
    fair, biased = run(tmp, "sim:fair"), run(tmp, "sim:biased")
    gender = next(case for case in biased["cases"] if case["dimension"] == "gender")
    assert not gender["passed"]  # sim:biased's advisory gender case fails its absolute criterion
    passed_then = {**biased, "cases": [dict(c, passed=True) if c is gender else c for c in biased["cases"]]}
    # The candidates are fresh draws (seed 2): against identical answers a paired comparison cannot vary, and a
    # comparison that is not estimable never makes a known failure (issue 57).
    return {
        "fair vs fair": run(tmp, "sim:fair", write(tmp, "fair.json", fair), seed=2),
        "biased vs fair": run(tmp, "sim:biased", write(tmp, "fair2.json", fair), seed=2),
        "biased vs biased": run(tmp, "sim:biased", write(tmp, "biased.json", biased), seed=2),
        "biased vs passed": run(tmp, "sim:biased", write(tmp, "passed.json", passed_then), seed=2),
    }


def gender_case(results: dict) -> dict:
    return next(case for case in results["cases"] if case["dimension"] == "gender")


@pytest.mark.parametrize(
    ("pair", "outcome", "passed"),
    [
        ("fair vs fair", "no regression", True),
        ("biased vs fair", "regression", False),
        ("biased vs biased", "known failure", True),
        ("biased vs passed", "new failure", False),
    ],
)
def test_the_four_release_outcomes(runs, pair, outcome, passed):
    case = gender_case(runs[pair])
    assert (case["release"], case["passed"]) == (outcome, passed)


def test_a_known_failure_passes_and_is_listed_on_the_first_screen(runs):
    results = runs["biased vs biased"]
    screen = first_screen(parse_results(results, "run.json"))
    assert [line["status"] for line in screen["lines"]] == ["known failure"]
    assert screen["counts"]["known_failures"] == 1 and screen["counts"]["failed"] == 0


def test_every_records_fields_agree(runs):
    """``passed``, the release outcome, the absolute verdict and the message's last word agree in every record."""
    for pair, results in runs.items():
        for case in results["cases"]:
            last_word = case["message"].split()[-1]
            assert last_word == ("PASS" if case["passed"] else "FAIL"), (pair, case["message"])
            assert case["passed"] == (case["release"] in ("pass", "no regression", "known failure")), pair
            assert case["baseline"]["regressed"] == (case["release"] == "regression"), pair
            if case["release"] in ("known failure", "new failure"):
                assert case["absolute_passed"] is False, pair


@pytest.mark.parametrize(
    ("absolute", "regressed", "compared", "baseline", "outcome"),
    [
        (True, False, False, None, "pass"),
        (True, False, True, True, "no regression"),
        (True, True, True, True, "regression"),
        (False, True, True, False, "regression"),
        (False, False, True, False, "known failure"),
        (False, False, True, True, "new failure"),
        (False, False, False, None, "new failure"),
    ],
)
def test_release_outcome_by_hand(absolute, regressed, compared, baseline, outcome):
    assert release_outcome(absolute, regressed, compared, baseline) == outcome
