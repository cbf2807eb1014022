"""Human validation (VIBE Table I): stratified export, checked import, agreement with a response-level bootstrap."""

import numpy as np
import pandas as pd
import pytest

from harness.extraction.validation import (
    AGREES_COLUMN,
    AnnotationError,
    agreement,
    annotation_sample,
    export_annotation_sample,
    read_annotations,
)


def outputs(n_responses=8):
    responses, values = [], []
    for model in ("m1", "m2"):
        for task in ("story", "advisory"):
            for dimension in ("gender", "accent"):
                for index in range(n_responses):
                    utterance = f"{dimension[0]}{index}"
                    responses.append((model, task, dimension, utterance, f"answer {model} {task} {utterance}"))
                    if index == 0:
                        continue  # a response with no extracted value is never sampled
                    values += [(model, task, utterance, "attr", f"value{k}") for k in range(1 + index % 3)]
    return (
        pd.DataFrame(responses, columns=["model", "task", "dimension", "utterance_id", "answer"]),
        pd.DataFrame(values, columns=["model", "task", "utterance_id", "attribute", "value"]).drop_duplicates(),
    )


def test_sample_is_stratified_seeded_and_independent_of_row_order():
    responses, values = outputs()
    sample = annotation_sample(responses, values, n_per_stratum=3, seed=7)
    per_stratum = sample.groupby(["model", "task", "dimension"])["response_id"].nunique()
    assert len(per_stratum) == 8 and (per_stratum == 3).all()
    assert not sample["utterance_id"].isin(["g0", "a0"]).any()
    assert (sample[AGREES_COLUMN] == "").all() and sample["row_id"].is_unique
    assert list(sample.columns) == [
        "row_id",
        "response_id",
        "model",
        "task",
        "dimension",
        "utterance_id",
        "answer",
        "attribute",
        "value",
        AGREES_COLUMN,
    ]
    shuffled = annotation_sample(responses.sample(frac=1, random_state=1), values, 3, seed=7)
    pd.testing.assert_frame_equal(sample, shuffled)
    assert not annotation_sample(responses, values, 3, seed=8).equals(sample)


def test_every_value_of_a_sampled_response_is_listed():
    responses, values = outputs()
    sample = annotation_sample(responses, values, n_per_stratum=20)
    assert len(sample) == len(values)
    one = sample[(sample["model"] == "m1") & (sample["task"] == "story") & (sample["utterance_id"] == "g2")]
    assert list(one["value"]) == ["value0", "value1", "value2"]


def fill(sample, verdicts):
    return sample.assign(**{AGREES_COLUMN: verdicts})


def test_round_trip_through_csv_gives_agreement(tmp_path):
    responses, values = outputs()
    sample = annotation_sample(responses, values, n_per_stratum=2, seed=0)
    exported = export_annotation_sample(sample, tmp_path / "sample.csv")
    verdicts = np.where(np.arange(len(sample)) % 10 == 0, "No", " yes ")
    fill(pd.read_csv(exported, dtype=str, keep_default_na=False), verdicts).to_csv(tmp_path / "filled.csv", index=False)
    annotations = read_annotations(tmp_path / "filled.csv", expected=exported)
    assert annotations[AGREES_COLUMN].dtype == bool
    result = agreement(annotations, n_bootstrap=2000, seed=1)
    assert result.n_judgments == len(sample) and result.n_responses == sample["response_id"].nunique()
    assert result.overall == pytest.approx(100.0 * np.mean(verdicts != "No"))
    assert result.ci_low <= result.overall <= result.ci_high
    assert list(result.per_task["task"]) == ["advisory", "story", "overall"]


def write(tmp_path, frame):
    path = tmp_path / "filled.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda f: f.assign(**{AGREES_COLUMN: ["maybe"] + ["1"] * (len(f) - 1)}),
            r"line 2 \(row_id 'v000000'\): annotator_agrees is 'maybe'",
        ),
        (
            lambda f: f.assign(**{AGREES_COLUMN: ["1"] * (len(f) - 1) + [""]}),
            r"annotator_agrees is ''; expected yes, no, 1 or 0",
        ),
        (lambda f: f.assign(row_id=f["row_id"].where(f.index != 3, "v999999")), r"line 5: unknown row_id 'v999999'"),
        (
            lambda f: f.assign(value=f["value"].where(f.index != 2, "edited")),
            r"line 4 \(row_id 'v000002'\): value is 'edited'",
        ),
        (lambda f: f.iloc[1:], r"1 exported row\(s\) are missing, e.g. row_id 'v000000'"),
        (lambda f: pd.concat([f, f.iloc[:1]]), r"row_id 'v000000' appears twice"),
        (lambda f: f.drop(columns=[AGREES_COLUMN]), r"missing column\(s\) \['annotator_agrees'\]"),
    ],
)
def test_bad_annotation_files_name_the_row(tmp_path, edit, message):
    responses, values = outputs()
    sample = annotation_sample(responses, values, n_per_stratum=1)
    filled = edit(fill(sample, ["1"] * len(sample)))
    with pytest.raises(AnnotationError, match=message):
        read_annotations(write(tmp_path, filled), expected=sample)


def annotations(per_response):
    rows = [(f"r{r}", task, verdict) for r, (task, verdicts) in enumerate(per_response) for verdict in verdicts]
    return pd.DataFrame(rows, columns=["response_id", "task", AGREES_COLUMN])


def test_agreement_per_task_and_overall():
    table = annotations([("story", [True] * 4 + [False])] * 2 + [("advisory", [True] * 5)] * 2)
    result = agreement(table, n_bootstrap=500)
    per_task = result.per_task.set_index("task")
    assert per_task.loc["story", "agreement"] == pytest.approx(80.0)
    assert per_task.loc["advisory", ["agreement", "ci_low", "ci_high"]].tolist() == [100.0, 100.0, 100.0]
    assert result.overall == pytest.approx(90.0) and (result.n_judgments, result.n_responses) == (20, 4)


def test_bootstrap_resamples_whole_responses():
    # One response all agree, one all disagree: resampling responses gives 0, 50 or 100, so the CI spans [0, 100]
    # (resampling single judgments would give a narrow interval around 50).
    result = agreement(annotations([("story", [True] * 20), ("story", [False] * 20)]), n_bootstrap=2000)
    assert result.overall == 50.0 and (result.ci_low, result.ci_high) == (0.0, 100.0)


def test_agreement_needs_boolean_verdicts():
    with pytest.raises(ValueError, match="read_annotations"):
        agreement(annotations([("story", ["yes"])]))


@pytest.mark.parametrize("name", ["demo_human_validation.csv", "demo_prose_human_validation.csv"])
def test_the_shipped_hand_labelled_samples_read_back_as_table_one(name):
    """The two hand-labelled demo samples the docs quote (form answers read by the field reader; the paper protocol's
    prose read by the demo LLM as extractor) are valid annotation files of at least 50 answers (VIBE's Table I)."""
    from pathlib import Path

    table = read_annotations(Path(__file__).resolve().parents[2] / "docs" / name)
    result = agreement(table, n_bootstrap=200)
    assert result.n_responses >= 50 and result.n_judgments == len(table)
    assert 0.0 <= result.ci_low <= result.overall <= result.ci_high <= 100.0
