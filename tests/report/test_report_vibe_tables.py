"""The report's VIBE section in the layout of Tables I and II: the Mean row, per-column highest and lowest marks,
stars from the corpus table's q, the protocol deviations on the first screen, and Table I from a filled
annotation file given to the report command."""

import json

import pandas as pd

from harness.checks.ntvd.view import table_two
from harness.report import render_report
from harness.report.cli import main
from harness.results import parse_results
from tests.support.records import case, results, results_json, typed


def test_table_two_has_a_mean_row_and_marks_each_columns_highest_and_lowest():
    cases = typed(
        case(model="a", task="advisory", value=40.0, q=0.001),
        case(model="b", task="advisory", value=10.0, q=0.03),
        case(model="c", task="advisory", value=25.0, q=0.2, passed=True),
        case(model="a", task="story", value=5.0, q=0.5, passed=True),
    )
    (table,) = table_two(cases)
    assert table["tasks"] == ["Story", "Advisory"] and table["means"] == [5.0, 25.0]
    advisory = [row["cells"][1] for row in table["rows"]]
    assert [cell["extreme"] for cell in advisory] == ["highest", "lowest", ""]
    assert [cell["stars"] for cell in advisory] == ["**", "*", ""]
    assert "extreme" not in table["rows"][0]["cells"][0]  # one model in the column: nothing to mark


def test_the_first_screen_names_each_deviation_from_the_papers_protocol():
    data = results_json([case()])
    data["metadata"]["vibe"] = {"deviations": ["VIBE extractor smollm2:135m-instruct instead of Qwen3-8B"]}
    html = render_report(parse_results(data))
    assert 'class="deviations"' in html and "VIBE extractor smollm2:135m-instruct instead of Qwen3-8B" in html
    assert 'class="deviations"' not in render_report(results([case()]))


def test_the_report_command_adds_table_one_from_a_filled_annotation_file(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(results_json([case()])))
    rows = [
        ("r0", "resp1", "story", "occupation", "nurse", "yes"),
        ("r1", "resp1", "story", "personality", "kind", "no"),
        ("r2", "resp2", "advisory", "activity", "yoga", "yes"),
    ]
    annotations = pd.DataFrame(
        rows, columns=["row_id", "response_id", "task", "attribute", "value", "annotator_agrees"]
    )
    annotations.to_csv(tmp_path / "a.csv", index=False)
    assert (
        main([str(tmp_path / "r.json"), "-o", str(tmp_path / "r.html"), "--human-validation", str(tmp_path / "a.csv")])
        == 0
    )
    html = (tmp_path / "r.html").read_text()
    assert "VIBE Table I layout" in html and "3 judgments in 2 responses" in html and ">66.7<" in html
    annotations.loc[1, "annotator_agrees"] = "maybe"
    annotations.to_csv(tmp_path / "bad.csv", index=False)
    assert (
        main(
            [str(tmp_path / "r.json"), "-o", str(tmp_path / "x.html"), "--human-validation", str(tmp_path / "bad.csv")]
        )
        == 4
    )
    assert not (tmp_path / "x.html").exists()
