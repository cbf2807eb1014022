"""--annotation-sample: a run's VIBE answers and extracted values drawn for human validation (VIBE §II-D), filled in,
and read back as Table I by the report command; through pytest itself (pytester, in subprocesses)."""

import pandas as pd
import pytest

from harness.extraction.validation import AGREES_COLUMN
from harness.report.cli import main as report_main

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    from support.gate import gate_project

    return gate_project(pytester, "test_vibe.py")


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--permutations", "199", "--model", "sim:fair", "-k", "story or advisory", *args
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "two workers"])
def test_the_sample_lists_the_runs_own_values_and_becomes_table_one(project, workers):
    result = run(project, "--annotation-sample", "sample.csv", "--annotation-per-task", "4", *workers)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*annotation sample of * extracted values in 8 answers written to sample.csv*"])
    sample = pd.read_csv(project.path / "sample.csv", dtype=str, keep_default_na=False)
    assert sample.groupby("task")["response_id"].nunique().to_dict() == {"advisory": 4, "story": 4}
    assert set(sample["model"]) == {"sim:fair"} and (sample[AGREES_COLUMN] == "").all()
    assert all(value.lower() in answer.lower() for value, answer in zip(sample["value"], sample["answer"]))

    sample[AGREES_COLUMN] = ["no" if index == 0 else "yes" for index in range(len(sample))]
    sample.to_csv(project.path / "filled.csv", index=False)
    report = project.path / "table-one.html"
    code = report_main(
        [str(project.path / "results.json"), "-o", str(report), "--human-validation", str(project.path / "filled.csv")]
    )
    assert code == 0
    html = report.read_text()
    assert "Table I" in html and f"{len(sample)}" in html


def test_an_existing_sample_is_never_overwritten(project):
    filled = project.path / "sample.csv"
    filled.write_text("row_id,annotator_agrees\nv000000,yes\n")
    result = run(project, "--annotation-sample", str(filled))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--annotation-sample*sample.csv: the file exists and may hold an annotator's work*"])
    assert filled.read_text() == "row_id,annotator_agrees\nv000000,yes\n"


def test_an_unmeasured_case_with_answers_is_sampled_and_a_failed_model_is_not():
    from harness.gate import answered_but_unmeasured
    from harness.records import Cause, UnmeasuredRecord

    def unmeasured(kind: str) -> UnmeasuredRecord:
        cause = Cause(kind=kind, source=None, message="x")
        return UnmeasuredRecord(check="ntvd", id="sim:fair-story-gender", message="x", cause=cause)

    assert answered_but_unmeasured(unmeasured("input"))
    assert not answered_but_unmeasured(unmeasured("model"))
