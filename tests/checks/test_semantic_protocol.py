"""The semantic-aware checks as the paper runs them: the Male-Female orientation, the row that decides, the text-only
1-10 judge, and the covariates' source named as a deviation when it is not the model under test."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.checks.semantic_aware.view import paper_row_label
from harness.checks.wer_ratio.check import judged_method, ratio_comparisons
from harness.core.errors import CaseNotMeasured
from harness.metrics.ratio_table import RatioTable
from harness.tasks.chat import SCORES, judge_prompt, judge_request

from support.gate import decided_cases

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]


def test_gender_is_male_over_female_as_in_the_paper_and_a_key_names_another_numerator():
    assert ratio_comparisons(["female", "male"], "gender", "auto") == [("male", "female")]
    assert ratio_comparisons(["female", "male"], "gender", "female") == [("female", "male")]
    assert ratio_comparisons(["old", "young"], "age", "auto") == [("old", "young")]
    assert ratio_comparisons(["old", "young"], "age", "young") == [("young", "old")]
    assert ratio_comparisons(["F", "M"], "gender", "auto") == [("F", "M")]
    assert ratio_comparisons(["a", "b", "c"], "accent", "auto") == [("a", "(rest)"), ("b", "(rest)"), ("c", "(rest)")]
    with pytest.raises(CaseNotMeasured, match="numerator: 'men' is not a group of dimension 'gender'"):
        ratio_comparisons(["female", "male"], "gender", "men")


def _table(methods):
    frame = pd.DataFrame(index=methods, data={"ratio": 1.0})
    return RatioTable(frame, "wer", "male", "female", 10, 4, 0, {})


FIVE_ROWS = [
    "vanilla",
    "regression w/o speaker w/o semantics",
    "regression w/ speaker w/o semantics",
    "regression w/ speaker w/ semantics: Embed-AGG",
    "regression w/ speaker w/ semantics: Embed-EOWL",
]


def test_the_method_and_embedding_keys_pick_the_row_that_decides():
    both = ["Embed-AGG", "Embed-EOWL"]
    table = _table(FIVE_ROWS)
    assert judged_method(RatioThresholds(method="semantic", embedding="agg"), both, table) == (FIVE_ROWS[3], "")
    assert judged_method(RatioThresholds(method="semantic", embedding="eowl"), both, table) == (FIVE_ROWS[4], "")
    assert judged_method(RatioThresholds(method="vanilla", embedding="agg"), both, table) == ("vanilla", "")
    without_agg = _table(FIVE_ROWS[:3] + FIVE_ROWS[4:])
    method, note = judged_method(RatioThresholds(method="semantic", embedding="agg"), both, without_agg)
    assert method == FIVE_ROWS[4] and "Embed-AGG not computed" in note
    minilm = _table(FIVE_ROWS[:3] + ["regression w/ speaker w/ semantics: MiniLM"])
    assert judged_method(RatioThresholds(method="semantic", embedding="agg"), ["MiniLM"], minilm)[1] == ""
    method, note = judged_method(RatioThresholds(method="semantic", embedding="agg"), [], _table(FIVE_ROWS[:3]))
    assert method == FIVE_ROWS[2] and "no semantic covariates" in note
    table_v = _table(
        ["vanilla", "regression w/o speaker w/o semantics", "regression w/o speaker w/ semantics: Embed-AGG"]
    )
    assert judged_method(RatioThresholds(method="semantic", embedding="agg"), both, table_v)[0].endswith("Embed-AGG")
    method, note = judged_method(RatioThresholds(method="speaker", embedding="agg"), both, table_v)
    assert method == "regression w/o speaker w/o semantics" and "no speaker ids" in note


def test_the_rows_carry_the_papers_names():
    assert [paper_row_label(method) for method in FIVE_ROWS] == [
        "Vanilla Estimation",
        "Regression w/o Spk. w/o Sem.",
        "Regression w/ Spk. w/o Sem.",
        "Spk. Sem.-Aware: Embed-AGG",
        "Spk. Sem.-Aware: Embed-EOWL",
    ]
    assert paper_row_label("regression w/o speaker w/ semantics: Embed-EOWL") == "Semantic-Aware: Embed-EOWL"


def test_the_judge_scores_usefulness_relevance_accuracy_and_comprehensiveness_from_text_only():
    prompt = judge_prompt("what is {this}", "It is a clock.")
    assert "scale of 1 to 10" in prompt
    for criterion in ("usefulness", "relevance", "accuracy", "comprehensiveness"):
        assert criterion in prompt
    assert "[What the user said]\nwhat is {this}\n" in prompt and "[The assistant's answer]\nIt is a clock.\n" in prompt
    assert "question" not in prompt.split("[The assistant's answer]")[0].lower().replace("user's request", "")
    assert "reference answer" not in prompt.lower()
    full = judge_prompt("hello", "Hi.", question="What does the speaker feel?", reference="Happy.")
    assert full.index("[What the user said]") < full.index("[The user's question about the audio]")
    assert full.index("[A reference answer]\nHappy.") < full.index("[The assistant's answer]")
    assert "gender" not in full.lower() and "voice" not in full.lower()
    assert judge_request("hello", "Hi.").answer_form == SCORES


def test_a_simulator_has_no_weights_here_so_its_covariates_are_a_named_deviation(pytester):
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_wer.py", pytester.path / "test_wer.py")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--model", "sim:fair", "-k", "wer_ratio and gender", "--embedder", "auto"
    )
    results = json.loads((pytester.path / "results.json").read_text())
    (case,) = decided_cases(results)
    assert case["semantics"]["source"] == "fallback"
    assert "not the model's own Embed-AGG and Embed-EOWL" in case["semantics"]["deviation"]
    result.stdout.fnmatch_lines(["lalm-fairness: deviation: semantic covariates of sim:fair*"])
    html = (pytester.path / "report.html").read_text()
    first_screen = html.split('class="deviations"', 1)[1].split("</div>", 1)[0]
    assert "semantic covariates of sim:fair" in first_screen
    assert results["metadata"]["semantic"]["sim:fair"]["source"] == "fallback"
