"""Reports from results files (lalm-fairness-report) and the trend over a series of nights."""

import json
import random
import re
import shutil
import subprocess
import sys

import pytest

from harness.gate.series import load_series, neighbour_comparisons
from harness.report.trend import trend_view
from harness.results import parse_results

from support.series import night_results, write_series

MODELS = ("sim:a", "sim:b", "sim:c")
DIMENSIONS = ("age", "gender")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INJECTED = ("sim:b-age", 10)
CHANGES = {
    **{night: {"absent": ["sim:c-age"]} for night in range(5)},
    **{night: {"absent": ["sim:b-gender"]} for night in range(13, 16)},
    2: {"absent": ["sim:c-age"], "unmeasured": ["sim:a-age"]},
}


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """16 nightly results files, shuffled: one injected regression, a case appearing, one disappearing, one unmeasured night."""
    paths = write_series(
        tmp_path_factory.mktemp("nights"), 16, MODELS, DIMENSIONS, regression=INJECTED, changes=CHANGES
    )
    random.Random(7).shuffle(paths)
    return paths


@pytest.fixture(scope="module")
def series_report(nights, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.report.cli",
            *map(str, nights),
            "-o",
            str(out / "trend.html"),
            "--summary-md",
            str(out / "summary.md"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return out


def test_series_is_ordered_by_recorded_time_or_as_given(nights):
    assert [run.label for run in load_series(nights)] == [f"night-{night:02d}" for night in range(16)]
    assert [run.label for run in load_series(nights, order="given")] == [path.stem for path in nights]


def test_runs_are_labelled_by_their_run_not_by_the_generic_file_name(tmp_path):
    """Issue 59, item 8: every run of ``runs/<name>/results.json`` was labelled "results" in the trend."""
    paths = []
    for night, name in enumerate(["1.2", "1.3"]):
        path = tmp_path / "runs" / name / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(night_results(night, MODELS, DIMENSIONS)))
        paths.append(path)
    assert [run.label for run in load_series(paths, order="given")] == ["1.2", "1.3"]
    for side in ("a", "b"):
        (tmp_path / side / "nightly").mkdir(parents=True)
        (tmp_path / side / "nightly" / "results.json").write_bytes(paths[0].read_bytes())
    twins = [tmp_path / side / "nightly" / "results.json" for side in ("a", "b")]
    assert [run.label for run in load_series(twins, order="given")] == ["a/nightly", "b/nightly"]


def test_a_file_without_recorded_time_is_named_when_ordering_by_time(tmp_path):
    undated = night_results(0, MODELS, DIMENSIONS)
    del undated["metadata"]["created"]
    (tmp_path / "old.json").write_text(json.dumps(undated))
    (tmp_path / "new.json").write_text(json.dumps(night_results(1, MODELS, DIMENSIONS)))
    with pytest.raises(ValueError, match=r"old\.json: records no creation time .* as given"):
        load_series([tmp_path / "new.json", tmp_path / "old.json"])
    assert len(load_series([tmp_path / "old.json", tmp_path / "new.json"], order="given")) == 2


@pytest.fixture(scope="module")
def compared(nights):
    """The series loaded and each night compared with the one before, once for the tests that read both."""
    runs = load_series(nights)
    return runs, neighbour_comparisons(runs)


def test_neighbour_comparisons_flag_only_the_injected_regression(compared):
    runs, comparisons = compared
    regressed = [
        (runs[index].label, key) for (index, key), comparison in comparisons.items() if comparison["regressed"]
    ]
    assert regressed == [("night-10", ("classification", "sim:b", "basis-synthetic", None, "age"))]
    assert all(comparison["status"] == "compared" for comparison in comparisons.values())
    assert (
        3,
        ("classification", "sim:a", "basis-synthetic", None, "age"),
    ) not in comparisons  # night 2 was unmeasured: nothing to pair with


def test_trend_orders_regressed_then_failing_then_changed_and_folds_the_rest(compared):
    runs, comparisons = compared
    view = trend_view([run.label for run in runs], [run.results for run in runs], comparisons)
    shown = [(item["id"], item["appeared"], item["disappeared"], item["latest"]) for item in view["shown"]]
    assert shown[0] == ("sim:b-age", None, None, "passed")
    assert set(shown[1:]) == {
        ("sim:a-age", None, None, "passed"),
        ("sim:b-gender", None, "night-13", "absent"),
        ("sim:c-age", "night-05", None, "passed"),
    }
    assert [item["label"] for item in view["shown"][0]["regressions"]] == ["night-10"]
    unmeasured = next(item for item in view["shown"] if item["id"] == "sim:a-age")
    assert len(unmeasured["chart"]["unmeasured"]) == 1 and unmeasured["check"] == "classification"
    assert [(block["model"], [item["id"] for item in block["panels"]]) for block in view["folded"]] == [
        ("sim:a", ["sim:a-gender"]),
        ("sim:c", ["sim:c-gender"]),
    ]
    assert all(
        dot["title"] is None for block in view["folded"] for item in block["panels"] for dot in item["chart"]["dots"]
    )
    assert view["counts"] == {"cases": 6, "regressed": 1, "failing": 0, "changed": 3}


def test_a_case_never_measured_takes_the_check_its_test_names():
    runs = [parse_results(night_results(night, ["m"], ["age"], unmeasured=["m-age"])) for night in range(2)]
    view = trend_view(["n0", "n1"], runs, {})
    assert [(item["check"], item["id"], item["latest"]) for item in view["shown"]] == [
        ("classification", "m-age", "unmeasured")
    ]


def test_threshold_line_steps_where_the_thresholds_changed():
    runs = [night_results(night, ["m"], ["age"]) for night in range(3)]
    runs[2]["cases"][0]["threshold"]["min_accuracy"] = 70.0
    view = trend_view(["n0", "n1", "n2"], [parse_results(run) for run in runs], {})
    (item,) = view["shown"] + [panel for block in view["folded"] for panel in block["panels"]]
    (line,) = item["chart"]["thresholds"]
    heights = [float(point.split(",")[1]) for point in line["points"].split()]
    assert heights[0] == heights[1] > heights[2]


def test_one_file_renders_its_report_and_a_bad_file_is_named(tmp_path, nights):
    from harness.report.cli import main

    assert main([str(nights[0]), "-o", str(tmp_path / "one.html")]) == 0
    html = (tmp_path / "one.html").read_text()
    assert "<title>lalm-fairness report: PASS</title>" in html and 'id="trend"' not in html
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit):
        main([])
    assert main([str(tmp_path / "bad.json"), str(nights[0]), "-o", str(tmp_path / "x.html")]) == 4
    assert not (tmp_path / "x.html").exists()


def test_series_report_is_self_contained_with_the_summary_of_the_last_night(series_report, nights):
    html = (series_report / "trend.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "Trend over 16 runs" in html and len(re.findall(r'class="panel[ "]', html)) == 6
    summary = (series_report / "summary.md").read_text()
    assert "night-15.json" in summary and "**PASS**" in summary


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_trend_in_chromium_marks_the_injected_regression_first(series_report, tmp_path):
    from support.browser import chromium

    page = (series_report / "trend.html").as_uri()
    screenshot = tmp_path / "trend.png"
    run = chromium(f"--screenshot={screenshot}", "--window-size=1200,1600", page)
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    assert "CONSOLE" not in run.stderr
    dom = chromium("--dump-dom", page).stdout
    panels = re.findall(r'<div class="panel[^"]*" data-case="([^"]+)">(.*?)</svg>', dom, flags=re.S)
    assert panels[0][0] == "classification:sim:b-age"
    assert panels[0][1].count('class="regression"') == 2  # the ring and the mark above it
    assert all('class="regression"' not in body for _, body in panels[1:])
    assert 'panel regressed" data-case="classification:sim:b-age"' in dom and "night-10: vs baseline" in dom


def test_memo_reuses_neighbour_comparisons_and_drops_stale_ones(nights, tmp_path, monkeypatch):
    import harness.gate.series as series

    runs = load_series(nights)[5:9]  # four ordinary nights: the memo's rule is the same for every length
    memo = {"stale": {"regressed": True}}
    first = neighbour_comparisons(runs[:-1], memo=memo)
    assert "stale" not in memo and len(memo) == len(first)
    calls = []
    monkeypatch.setattr(
        series, "compare_records", lambda *args: calls.append(args) or {"status": "compared", "regressed": False}
    )
    second = neighbour_comparisons(runs, memo=memo)
    assert len(calls) == len(second) - len(first) == len(runs[-1].results.cases)
    (tmp_path / "memo.json").write_text("[")
    with pytest.raises(ValueError, match=r"memo\.json: not a comparison memo"):
        series.read_memo(tmp_path / "memo.json")


def test_a_series_of_checkpoints_with_changing_specs_follows_the_one_model(tmp_path):
    """Issue 23: checkpoints hf:/ckpts/1.2 -> 1.3 -> 1.4, a regression injected in 1.4's age case. Paired on check,
    corpus, variant and dimension, the trend finds it and only it; paired by spec, nothing would pair."""
    from harness.gate.series import follow_models
    from harness.report.cli import main

    paths = []
    for night, version in enumerate(("1.2", "1.3", "1.4")):
        model = f"hf:/ckpts/{version}"
        results = night_results(night, [model], DIMENSIONS, regression=(f"{model}-age", 2))
        paths.append(tmp_path / f"ckpt-{version}.json")
        paths[-1].write_text(json.dumps(results))
    runs = load_series(paths, order="given")
    assert neighbour_comparisons(follow_models(runs, "spec")) == {}
    followed = follow_models(runs)
    comparisons = neighbour_comparisons(followed)
    assert sorted(comparisons) == [
        (1, ("classification", "checkpoint", "basis-synthetic", None, "age")),
        (1, ("classification", "checkpoint", "basis-synthetic", None, "gender")),
        (2, ("classification", "checkpoint", "basis-synthetic", None, "age")),
        (2, ("classification", "checkpoint", "basis-synthetic", None, "gender")),
    ]
    assert [key for key, comparison in comparisons.items() if comparison["regressed"]] == [
        (2, ("classification", "checkpoint", "basis-synthetic", None, "age"))
    ]
    assert [case.model for case in followed[2].results.cases] == ["hf:/ckpts/1.4"] * 2
    assert main([*map(str, paths), "--order", "given", "-o", str(tmp_path / "trend.html")]) == 0
    html = (tmp_path / "trend.html").read_text()
    assert 'panel regressed" data-case="classification:checkpoint-age"' in html


def test_following_by_position_needs_one_model_per_run(tmp_path):
    from harness.gate.series import follow_models

    (tmp_path / "two.json").write_text(json.dumps(night_results(0, ["sim:a", "sim:b"], DIMENSIONS)))
    (tmp_path / "one.json").write_text(json.dumps(night_results(1, ["sim:c"], DIMENSIONS)))
    runs = load_series([tmp_path / "two.json", tmp_path / "one.json"], order="given")
    assert follow_models(runs) == runs
    with pytest.raises(ValueError, match=r"two\.json: holds models \['sim:a', 'sim:b'\]"):
        follow_models(runs, "position")
