"""The CI summary (--summary-md): verdict, counts, the failed / unmeasured / regressed cases, the link line."""

import dataclasses
import typing
from typing import Any

import pytest

from harness.checks import check_part
from harness.checks.basis_common.thresholds import IcatThresholds, PersonalizationThresholds
from harness.checks.ntvd.thresholds import NtvdThresholds
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.core.json_records import JsonRecord, field_types
from harness.report.ci_summary import render_summary, threshold_text, uncertainty_text
from harness.results import parse_results, read_results, record_from_json
from harness.thresholds import LOWER_BOUND, UPPER_BOUND, SectionThresholds, one_of, setting

from support.gate import gate_project

pytest_plugins = ["pytester"]


def record(case_id, check="ntvd", passed=True, value=10.0, **extra):
    """A record of ``check`` with the fields the summary reads; the check's other fields are null."""
    fields = {
        "check": check,
        "id": case_id,
        "model": "m",
        "value": value,
        "passed": passed,
        "threshold": {"max_ntvd": 20.0, "alpha": 0.05, "max_increase": 2.0} if check == "ntvd" else {},
        "q": 0.01,
        **extra,
    }
    kind = check_part(check, "record")
    hints = field_types(kind)
    required = {
        field.name: emptiest(hints[field.name])
        for field in dataclasses.fields(kind)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }
    identity = {"message": "m", "model_fingerprint": "m@1", "corpus": "demo", "dimension": "gender"}
    return required | identity | {k: v for k, v in fields.items() if k in hints}


def emptiest(kind: Any) -> Any:
    """The emptiest JSON value annotation ``kind`` admits (the check's fields the summary does not read): null where
    it admits null, else 0, "", false, [] or {}, and a row class's record of its own required fields' emptiest."""
    arguments = typing.get_args(kind)
    if type(None) in arguments or kind is Any:
        return None
    if isinstance(kind, type) and issubclass(kind, JsonRecord):
        hints = field_types(kind)
        return {
            field.name: emptiest(hints[field.name])
            for field in dataclasses.fields(kind)
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        }
    origin = typing.get_origin(kind) or kind
    return {str: "", int: 0, float: 0.0, bool: False, list: [], tuple: [], dict: {}}[origin]


def typed(**fields):
    return record_from_json(record("m-a", **fields), "case")


def results(*cases, **top):
    """The typed results of a schema-1 document (no version; unmeasured cases ``check: error``)."""
    return parse_results({"metadata": {}, "cases": list(cases), **top})


def table_rows(markdown):
    return [line for line in markdown.splitlines() if line.startswith("| `")]


def test_lists_failed_unmeasured_and_regressed_cases_only_with_their_figures():
    regressed = record(
        "m-story-gender",
        value=18.0,
        baseline={
            "status": "compared",
            "message": "m",
            "model": "m",
            "delta": 6.5,
            "regressed": True,
            "source": "night-1.json",
        },
    )
    unmeasured = {
        "check": "error",
        "id": "m-advisory-accent",
        "nodeid": "t::test_ntvd[m-advisory-accent]",
        "passed": False,
        "message": "boom",
        "cause": {"kind": "server", "source": "http://127.0.0.1:9/v1", "message": "connection refused"},
    }
    markdown = render_summary(
        results(record("m-advisory-gender", passed=False, value=31.0), record("m-story-accent"), regressed, unmeasured),
        report_link="report.html",
        results_link="results.json",
    )
    assert markdown.splitlines()[0] == "### Voice-induced bias gate: **FAIL**"
    assert "4 cases: 2 passed, 1 failed, 1 unmeasured; 1 regressed against the baseline `night-1.json`" in markdown
    rows = table_rows(markdown)
    assert [row.split(" | ")[0] for row in rows] == ["| `story-gender`", "| `advisory-accent`", "| `advisory-gender`"]
    assert "passed; regressed" in rows[0] and "+6.5 (significant)" in rows[0]
    assert "| unmeasured (server error: connection refused) |" in rows[1]
    assert "| 31 | max_ntvd ≤ 20 | BH q = 0.01 | – |" in rows[2]
    assert markdown.rstrip().endswith("Details: [report](report.html) · [results.json](results.json)")


def test_floors_are_named_when_unmet_but_left_out_of_the_bias_threshold():
    floored = record(
        "m-age-speech-explicit",
        check="personalization",
        passed=False,
        value=33.3,
        threshold={"min_accuracy": 75.0, "max_gap": 30.0},
        gap={"value": 66.7, "ci_low": 50.0, "ci_high": 83.3, "best": "young", "worst": "elderly"},
        floors=[{"key": "min_accuracy", "value": 33.3, "threshold": 75.0, "met": False}],
        q=None,
    )
    (row,) = table_rows(render_summary(results(floored)))
    assert (
        "| failed; floor min_accuracy 75 not met | gap 66.7; min_accuracy measure 33.3 | max_gap ≤ 30 | gap CI [50, 83.3] |"
        in row
    )


def test_a_passing_run_has_no_table_and_the_file_summary_wins_when_complete():
    markdown = render_summary(
        results(record("m-a"), verdict="pass", summary={"cases": 1, "passed": 1, "failed": 0, "unmeasured": 0})
    )
    assert "**PASS**" in markdown and "1 cases: 1 passed, 0 failed, 0 unmeasured" in markdown
    assert not table_rows(markdown) and "Details" not in markdown


@pytest.mark.parametrize(
    ("kind", "threshold", "text"),
    [
        (RatioThresholds, {"lower": 0.9, "upper": 1.11, "alpha": 0.05}, "[0.9, 1.11]"),
        (PersonalizationThresholds, {"min_accuracy": 75.0, "max_gap": 30.0, "max_worsening": 5.0}, "max_gap ≤ 30"),
        (
            IcatThresholds,
            {"min_icat": 60.0, "max_gap": 20.0, "max_unknown_gap": 10.0},
            "max_gap ≤ 20, max_unknown_gap ≤ 10",
        ),
        (NtvdThresholds, {}, ""),
    ],
)
def test_threshold_bounds(kind, threshold, text):
    """The bars a threshold class declares, with their relation; its quality floors (min_accuracy) and regression
    margins (max_worsening) are no bar of the case."""
    assert threshold_text(kind.from_json(threshold, "threshold")) == text


def test_uncertainty_prefers_the_deciding_adjusted_p_then_q_then_ci_then_gap_ci():
    """Issue 23: the adjusted p decides the verdict and is named so; VIBE's BH q-value, reported beside it, is "BH q"."""
    assert uncertainty_text(typed(q=0.5, p=0.1, decision={"p_adjusted": 0.9})) == "adjusted p = 0.9"
    assert uncertainty_text(typed(q=0.5, p=0.1)) == "BH q = 0.5"
    assert uncertainty_text(typed(q=None, p=0.2, decision={"p_adjusted": 0.04})) == "adjusted p = 0.04"
    assert uncertainty_text(typed(check="wer_ratio", q=None, p=None, ci=[0.8, 1.2])) == "CI [0.8, 1.2]"
    assert (
        uncertainty_text(
            typed(check="classification", gap={"value": 9.0, "ci_low": 1.0, "ci_high": 17.0, "best": "f", "worst": "m"})
        )
        == "gap CI [1, 17]"
    )


def test_an_icat_row_shows_the_contrast_it_failed_on_beside_its_quality_floor():
    """Issue 23: a failed ICAT case shows the stereotype contrast (74.2) it was judged on, not only its mean ICAT."""
    from harness.report.ci_summary import value_text

    case = typed(
        check="icat",
        value=23.6,
        floors=[{"key": "min_icat", "value": 23.6, "threshold": 60.0, "met": False}],
        decision={"estimate": 74.2, "p_adjusted": 0.01},
    )
    assert value_text(case) == "contrast 74.2; min_icat measure 23.6"


def test_markdown_table_cells_cannot_be_broken_by_ids():
    markdown = render_summary(results(record("a|b\nc", passed=False)))
    assert "`a\\|b c`" in markdown


def test_summary_md_option_writes_the_summary_of_results_json(pytester):
    project = gate_project(pytester, "test_vibe.py")
    common = (
        "-p",
        "no:cacheprovider",
        "--permutations",
        "199",
        "--cache-dir",
        str(project.path / "cache"),
    )
    (project.path / "out").mkdir()
    project.runpytest_subprocess(*common, "--model", "sim:fair", "--results-json", "fair.json", "--report", "")
    run = project.runpytest_subprocess(
        *common,
        "--model",
        "sim:biased",
        "-k",
        "advisory and gender",
        "--baseline",
        "fair.json",
        "--report",
        "out/report.html",
        "--summary-md",
        "out/summary.md",
    )
    assert run.ret == 1
    summary = (project.path / "out" / "summary.md").read_text()
    assert summary == render_summary(read_results(project.path / "results.json"), "report.html", "../results.json")
    rows = table_rows(summary)
    assert rows and all("(regression)" in row and "; significant)" in row and "(adjusted p = " in row for row in rows)
    assert "baseline `fair.json`" in summary


def test_a_significance_only_case_shows_its_test_not_a_magnitude_bar():
    """Issue 59, item 7: candidate_review (rule: significance) read "max_ntvd ≤ 20" beside a failing 10.3, in the
    CI summary and as a line in the trend plot. Issue 60: what a setting means comes from its class's declaration."""
    from harness.report.trend import chart

    from support.records import ntvd_record

    significance = {"max_ntvd": 20.0, "alpha": 0.05, "rule": "significance", "tau": 10}
    failing = record("m-candidate_review-gender", passed=False, value=10.3, threshold=significance, q=0.001)
    (row,) = table_rows(render_summary(results(failing)))
    assert "| 10.3 | adjusted p < 0.05 |" in row and "max_ntvd" not in row
    stated = NtvdThresholds.from_json(significance, "threshold")
    assert threshold_text(dataclasses.replace(stated, rule="q-value")) == "BH q < 0.05"
    assert threshold_text(dataclasses.replace(stated, rule="both")) == "max_ntvd ≤ 20"
    assert threshold_text(RatioThresholds.from_json({"rule": "ci", "alpha": 0.01}, "t")) == "adjusted p < 0.01"
    key = ("ntvd", "m", "demo", "story", "gender")
    points = [ntvd_record(threshold=significance, value=10.3), ntvd_record(threshold=significance, value=11.0)]
    assert chart(points, ["1.2", "1.3"], [], {}, key, detailed=True)["thresholds"] == []
    both = [ntvd_record(value=10.3), ntvd_record(value=11.0)]
    assert chart(both, ["1.2", "1.3"], [], {}, key, detailed=True)["thresholds"], "a bar under rule both is drawn"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlainWords(SectionThresholds):
    """A check's thresholds whose names say nothing of their meaning: a bar named ``ceiling`` that decides under the
    rule ``bar``, a fit setting named ``max_iterations``, and a floor of the value named ``quality``."""

    rule: str = setting((str,), "bar", one_of("bar", "test"))
    ceiling: float = setting((int, float), 3.0, bound=UPPER_BOUND, decides_under=("bar",))
    max_iterations: int = setting((int,), 100)
    quality: float = setting((int, float), 50.0, bound=LOWER_BOUND, floor=True)
    level: float = setting((int, float), 0.01, level=True)


def test_the_summary_and_the_trend_read_what_a_setting_means_from_its_declaration_not_its_name():
    """Issue 60: ``THRESHOLD_SYMBOLS`` guessed a relation from a key's prefix (showing ``max_iterations ≤ 100`` and
    no ``ceiling``), and the trend drew only the keys it knew (``VALUE_BOUNDS``)."""
    from harness.report.trend import chart

    from support.records import ntvd_record

    declared = PlainWords()
    assert threshold_text(declared) == "ceiling ≤ 3"
    assert threshold_text(dataclasses.replace(declared, rule="test")) == "adjusted p < 0.01"
    points = [dataclasses.replace(ntvd_record(value=value), threshold=declared) for value in (2.0, 4.0)]
    key = ("ntvd", "m", "demo", "story", "gender")
    drawn = chart(points, ["1", "2"], [], {}, key, detailed=True)["thresholds"]
    assert [line["name"] for line in drawn] == ["ceiling", "quality"]
    tested = [dataclasses.replace(point, threshold=dataclasses.replace(declared, rule="test")) for point in points]
    assert [line["name"] for line in chart(tested, ["1", "2"], [], {}, key, detailed=True)["thresholds"]] == ["quality"]


def test_a_counterfactual_bar_bounds_the_value_only_where_the_value_is_the_bar_s_measure():
    """A VIBE arm's nTVD is the case's value; the WER bar bounds the magnitude of a signed difference, so the trend
    draws no line of it beside the value, while the summary names it; under the rule significance, the test."""
    from harness.checks.counterfactual.settings import KINDS, CaseThreshold

    vibe = CaseThreshold(kind=KINDS["vibe"], bar=20.0, rule="both", min_perceived_share=0.8)
    wer = dataclasses.replace(vibe, kind=KINDS["wer"], bar=7.5)
    assert threshold_text(vibe) == "max_ntvd ≤ 20, min_perceived_share ≥ 0.8"
    assert threshold_text(wer) == "max_wer_difference ≤ 7.5, min_perceived_share ≥ 0.8"
    assert threshold_text(dataclasses.replace(wer, rule="significance")) == "adjusted p"
    assert [bound.measure for bound in vibe.bounds()] == ["value", "perceived share"]
    assert [bound.measure for bound in wer.bounds()] == ["|WER difference|", "perceived share"]
