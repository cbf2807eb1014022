"""BASIS's LLM judges (Appendix B.3, Table 16; ``--basis-judge SPEC``): their prompts and parsers, the tables that
ask them, their name in every record and on the first screen, and an unreachable judge making the case unmeasured."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.checks.basis_common.judges import (
    SQA_VERDICTS,
    STYLE_CHOICES,
    listener,
    parse_sqa_verdict,
    parse_style_verdict,
    sqa_judge_request,
    style_judge_request,
)
from harness.data.basis_suite import load_suite
from harness.records import RULE_JUDGES_DEVIATION

from support.gate import decided_cases

REPO = Path(__file__).resolve().parents[2]
DEMO_SUITE = REPO / "harness" / "data" / "basis_demo" / "suite.yaml"
pytest_plugins = ["pytester"]


def test_the_sqa_judge_sees_question_gold_and_answer_as_text_and_answers_yes_or_no():
    request = sqa_judge_request(" What colour is the sky? ", "blue", "It is blue, mostly.")
    assert request.audio is None and request.answer_form == SQA_VERDICTS == type(SQA_VERDICTS)(("Yes", "No"))
    assert "[Question]\nWhat colour is the sky?\n" in request.prompt
    assert (
        "[Reference answer]\nblue\n" in request.prompt and "[Candidate answer]\nIt is blue, mostly.\n" in request.prompt
    )
    assert "style do not matter" in request.prompt


@pytest.mark.parametrize(
    ("text", "verdict"),
    [("Yes", True), ("no.", False), (" YES, it is correct", True), ("No - wrong colour", False)]
    + [("", None), ("I'm sorry, I can't judge that.", None), ("Correct", None), ("42", None), (None, None)],
)
def test_the_sqa_verdict_is_the_first_word_and_anything_else_abstains(text, verdict):
    assert parse_sqa_verdict(text) is verdict


def test_the_style_judge_offers_both_profiles_in_a_fixed_order_and_warns_against_word_overlap():
    references = {"child": "Rain bends light like magic!", "adult": "Refraction separates wavelengths."}
    request = style_judge_request("How do rainbows form?", references, ("child", "adult"), "Light bends in drops.")
    prompt = request.prompt
    assert request.answer_form == STYLE_CHOICES and request.audio is None
    assert prompt.index("[A response suited to a child]") < prompt.index("[A response suited to an adult]")
    assert "Rain bends light like magic!" in prompt and "Refraction separates wavelengths." in prompt
    assert "not from the words it shares with either example" in prompt
    assert "A for a child, B for an adult" in prompt
    assert [listener(label) for label in ("child", "adult", "elderly", "young")] == [
        "a child",
        "an adult",
        "an elderly",
        "a young person",
    ]


@pytest.mark.parametrize(
    ("text", "label"),
    [("A", "child"), ("B", "adult"), ("(B)", "adult"), ("Answer: A", "child"), ("A. The first one", "child")]
    + [("", None), ("Both", None), ("I cannot tell.", None), ("a", None), ("C", None)],
)
def test_the_style_verdict_is_a_leading_letter_and_anything_else_abstains(text, label):
    assert parse_style_verdict(text, ("child", "adult")) == label


class FakeContext:
    """Enough of a run context for the BASIS tables: the demo suite, the model's answers, a scripted judge."""

    def __init__(self, answers, verdict):
        self.basis = load_suite(DEMO_SUITE)
        self.basis_judge = "judge:x"
        self.answers, self.verdict, self.judged = answers, verdict, []

    def memo(self, key, compute):
        return compute()

    def outputs(self, model, requests, label):
        return pd.DataFrame({"answer": [self.answers(index) for index in range(len(requests))]})

    def transcriber(self, model):
        raise AssertionError("not asked")

    def model(self, spec):
        assert spec == "judge:x"
        context = self

        class Judge:
            def generate(self, requests, label=""):
                context.judged.extend(requests)
                return [context.verdict(request) for request in requests]

        return Judge()


def test_the_qa_table_asks_the_llm_judge_for_every_non_empty_answer():
    from harness.checks.robustness.tables import qa_table

    context = FakeContext(
        lambda index: "" if index == 0 else f"answer {index}", lambda r: "Yes" if "1" in r.prompt else "No"
    )
    set_name = context.basis.of_kind("qa")[0].name
    table = qa_table(context, "model", set_name)
    assert len(context.judged) == len(table) - 1 and all(r.answer_form == SQA_VERDICTS for r in context.judged)
    assert not table["judged"].iloc[0] and not table["correct"].iloc[0]
    expected = ["1" in f"answer {i}" for i in range(1, len(table))]
    assert table["correct"].iloc[1:].tolist() == expected and table["judged"].iloc[1:].all()


def test_the_open_personalization_table_maps_the_judges_letter_to_a_profile():
    from harness.checks.basis_common.tables import open_personalization_table

    context = FakeContext(lambda index: f"answer {index}", lambda r: "A" if "answer 0" in r.prompt else "nonsense")
    item_set = next(s for s in context.basis.of_kind("personalization") if s.answer == "open")
    table = open_personalization_table(context, "model", item_set.name, "speech-implicit")
    assert len(context.judged) == len(table)
    assert table["judged"].iloc[0] == item_set.labels[0]
    assert set(table["judged"].iloc[1:]) == {"unknown"}
    assert table["correct"].tolist() == [j == g for j, g in zip(table["judged"], table["group"])]


def _project(pytester):
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_basis.py", pytester.path / "test_basis.py")
    return pytester


def test_the_rule_judges_are_named_in_each_record_and_as_a_deviation(pytester):
    project = _project(pytester)
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "sim:fair", "-k", "robustness and sqa")
    results = json.loads((project.path / "results.json").read_text())
    assert {case["judge"] for case in decided_cases(results)} == {"rules"}
    assert results["metadata"]["basis_judge"] == "rules"
    result.stdout.fnmatch_lines([f"lalm-fairness: deviation: {RULE_JUDGES_DEVIATION[:60]}*"])
    assert RULE_JUDGES_DEVIATION.split(" (")[0] in (project.path / "report.html").read_text()


def test_an_unreachable_judge_makes_the_case_unmeasured_not_passed(pytester):
    project = _project(pytester)
    judge = "openai:http://127.0.0.1:9/v1#judge"
    (project.path / "models.yaml").write_text(
        f'models:\n  "{judge}": {{max_retries: 0, timeout_s: 2, breaker_failures: 1}}\n'
    )
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--model", "sim:fair", "--basis-judge", judge, "--model-config", "models.yaml",
        "-k", "robustness and sqa",
    )  # fmt: skip
    results = json.loads((project.path / "results.json").read_text())
    assert results["summary"]["unmeasured"] == results["summary"]["cases"] >= 1, result.stdout.str()[-3000:]
    assert all(case.get("status") == "unmeasured" for case in results["cases"])
    assert results["verdict"] != "pass"
