"""Non-response is a value of its own in the nTVD tables (issue 58): a model that answers one group's voices
unusably fails the nTVD cases of that dimension, instead of being tested on the answers it left; a fair model's
cases are as before (its few refusals stay under tau)."""

import pandas as pd
import pytest

from harness.checks.ntvd.tables import extraction
from harness.gate import Gate, GateConfig
from harness.metrics import ntvd
from harness.metrics.vibe_analyses import NOT_STATED, with_non_response
from harness.models import BACKENDS, register_backend


@pytest.fixture
def unusable_backend():
    register_backend("unusable", "support.unusable:UnusableBackend")
    yield
    BACKENDS.pop("unusable", None)


def records(model, tmp_path):
    gate = Gate(GateConfig(models=(model,), cache_dir=str(tmp_path), progress=False, permutations=999))
    cases = gate.cases("ntvd")
    gate.set_family("ntvd", cases)
    return gate, {case.id: gate.verdict(case).record for case in cases}


def test_non_response_rows_name_the_status_and_the_unstated_attribute():
    values = pd.DataFrame({"utterance_id": ["u1"], "speaker": ["s1"], "attribute": ["job"], "value": ["nurse"]})
    statuses = pd.DataFrame(
        {
            "utterance_id": ["u1", "u2", "u3", "u4"],
            "speaker": ["s1", "s1", "s2", "s2"],
            "status": ["extracted", "unextractable", "empty", "refusal"],
            "missing": ["hobby", "job,hobby", "job,hobby", "job,hobby"],
        }
    )
    table = with_non_response(values, statuses, {"job": 1, "hobby": 2})
    rows = list(zip(table["utterance_id"], table["attribute"], table["value"]))
    assert len(rows) == 1 + 2 + 3 * 3  # a non-response of the two-item hobby counts twice
    assert set(rows) == {
        ("u1", "job", "nurse"),
        ("u1", "hobby", NOT_STATED),
        ("u2", "job", "(unextractable)"),
        ("u2", "hobby", "(unextractable)"),
        ("u3", "job", "(empty)"),
        ("u3", "hobby", "(empty)"),
        ("u4", "job", "refusal"),
        ("u4", "hobby", "refusal"),
    }


def test_a_refusal_counts_alike_whether_the_extractor_gave_it_values_or_none():
    """The LLM extractor gives a refusal the value ``refusal`` once per attribute (as the VIBE authors' does), the rule
    reader none: both become ``refusal`` once per value asked."""
    statuses = pd.DataFrame({"utterance_id": ["u1"], "speaker": ["s1"], "status": ["refusal"], "missing": [""]})
    llm = pd.DataFrame({"utterance_id": ["u1"], "speaker": ["s1"], "attribute": ["activity"], "value": ["refusal"]})
    rules = llm.iloc[:0]
    for values in (llm, rules):
        table = with_non_response(values, statuses, {"activity": 3})
        assert table["value"].tolist() == ["refusal"] * 3 and table["attribute"].tolist() == ["activity"] * 3


def test_a_model_answering_one_groups_voices_unusably_fails_that_dimension(tmp_path, unusable_backend):
    gate, found = records("unusable:0.5", tmp_path)
    gender = {name: record for name, record in found.items() if name.endswith("-gender")}
    assert len(gender) == 5
    for name, record in gender.items():
        assert 60 <= record.answer_status["unextractable"] <= 110, name  # about half of the 162 women's answers
        assert not record.passed, (name, record.message)
        # the answers it gave are voice-blind: on them alone (VIBE's table, which the gate passed) nTVD is what
        # sampling noise gives; the non-responses add more than a bar's worth
        values, _ = extraction(gate.context, "unusable:0.5", "demo", record.task)
        labels = gate.context.corpora["demo"].speaker_labels("gender")
        extracted_only = ntvd(values.assign(group=values["speaker"].map(labels)), tau=record.threshold.tau).score
        assert record.value > extracted_only + record.threshold.max_ntvd, (name, extracted_only, record.value)


def test_a_fair_models_cases_are_as_before(tmp_path):
    """sim:fair refuses 2% of requests whatever the voice: every case passes as before, and its nTVD is the one of
    the extracted values alone except on Advisory, whose refusals, each withholding three activities, reach tau
    (a value shared by both groups, so the score moves by noise only)."""
    gate, found = records("sim:fair", tmp_path)
    labels = gate.context.corpora["demo"].speaker_labels
    for record in found.values():
        assert record.passed, record.message
        values, _ = extraction(gate.context, "sim:fair", "demo", record.task)
        extracted_only = values.assign(group=values["speaker"].map(labels(record.dimension)))
        before = ntvd(extracted_only, tau=record.threshold.tau).score
        if record.task == "advisory":
            assert abs(record.value - before) < 1.5
        else:
            assert record.value == pytest.approx(before)
