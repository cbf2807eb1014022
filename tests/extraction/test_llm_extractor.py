"""LLM extractor: strict JSON parsing, one repair retry, refusals, caching; the model faked at the backend."""

import dataclasses
import json

import pandas as pd
import pytest

from harness.cache import OutputCache
from harness.extraction import fields
from harness.extraction.fields import EMPTY, EXTRACTED, REFUSAL, UNEXTRACTABLE
from harness.extraction.llm import (
    REFUSAL_KEY,
    LLMExtractor,
    ReplyError,
    attribute_schema,
    extraction_prompt,
    parse_reply,
    repair_prompt,
)
from harness.models import BACKENDS, register_backend
from harness.models.base import Backend
from harness.tasks import TASKS

STORY, ADVISORY = TASKS["story"], TASKS["advisory"]
STORY_NULLS = {name: None for name in STORY.attribute_names}


def story_json(refusal=False, **values):
    return json.dumps({**STORY_NULLS, **values, REFUSAL_KEY: refusal})


# Recorded-style replies of an extraction model: (first reply, reply to the repair prompt).
SCRIPT = {
    "A nurse story.": (story_json(occupation="Registered Nurses", personality="caring"), None),
    "A fenced story.": ("```json\n" + story_json(occupation="Mechanic", education="**High school**") + "\n```", None),
    "A chatty story.": (
        "Sure! Here is the JSON:\n" + story_json(occupation="teacher"),
        story_json(occupation="teacher"),
    ),
    "A truncated story.": ('{"occupation": "pilot", "economic_situat', '{"occupation": "pilot", "econ'),
    "A prose story.": ("The occupation is chef and she is kind.", "Occupation: chef"),
    "A markdown story.": (
        "**Occupation:** baker\n- Personality: shy",
        story_json(occupation="baker", personality="shy"),
    ),
    "A listed story.": (story_json(occupation=["nurse", "doctor"]), story_json(occupation="nurse")),
    "I'm sorry, but I can't make assumptions about a person based on their voice.": (story_json(), None),
    "I would rather not write that.": (story_json(refusal=True), None),
    "Once upon a time.": (story_json(occupation="Not specified", family_status="N/A"), None),
    "Activities galore.": (
        json.dumps({"activity": ["Hiking", "hiking", "Yoga classes", ""], REFUSAL_KEY: False}),
        None,
    ),
    "Activities as text.": (
        json.dumps({"activity": "hiking, chess", REFUSAL_KEY: False}),
        json.dumps({"activity": ["hiking", "chess"], REFUSAL_KEY: False}),
    ),
    "A thinking story.": ("<think>The user wants JSON.</think>\n" + story_json(occupation="farmer"), None),
}


class FakeExtractionBackend(Backend):
    """Answers extraction prompts from SCRIPT by the response text the prompt embeds; records every prompt."""

    loads = 0
    prompts: list[str] = []

    def __init__(self, spec, target, options):
        self.spec, self.target = spec, target

    def fingerprint(self):
        return f"fake-extractor:{self.target}"

    def load(self):
        type(self).loads += 1
        return self

    def generate(self, requests, params):
        replies = []
        for request in requests:
            assert request.audio is None
            type(self).prompts.append(request.prompt)
            answer = request.prompt.split("<<<RESPONSE\n", 1)[1].split("\nRESPONSE>>>", 1)[0]
            first, repaired = SCRIPT[answer]
            is_repair = "Your previous reply could not be used" in request.prompt
            replies.append(repaired if is_repair and repaired is not None else first)
        return replies


@pytest.fixture(autouse=True)
def fake_backend():
    register_backend("fakex", f"{__name__}:FakeExtractionBackend")
    FakeExtractionBackend.loads = 0
    FakeExtractionBackend.prompts = []
    yield
    BACKENDS.pop("fakex")


def extractor(tmp_path, target="v1"):
    return LLMExtractor.from_spec(f"fakex:{target}", OutputCache(tmp_path))


def extract_one(tmp_path, answer, task=STORY):
    return extractor(tmp_path).extract_many([answer], task)[0]


def test_schema_lists_every_attribute_and_the_refusal_flag():
    schema = attribute_schema(ADVISORY)
    assert schema["properties"]["activity"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"][REFUSAL_KEY] == {"type": "boolean"}
    assert schema["required"] == ["activity", REFUSAL_KEY] and schema["additionalProperties"] is False
    assert attribute_schema(STORY)["properties"]["occupation"] == {"type": ["string", "null"]}
    prompt = extraction_prompt(STORY, "Some answer")
    assert "Some answer" in prompt and '"field_of_study"' in prompt and "the character's job or occupation" in prompt


def test_clean_json_is_normalised(tmp_path):
    result = extract_one(tmp_path, "A nurse story.")
    assert result.extraction.status == EXTRACTED and result.attempts == 1
    assert result.extraction.values == {"occupation": ("registered nurse",), "personality": ("caring",)}
    assert "education" in result.extraction.missing


@pytest.mark.parametrize(
    "answer, values",
    [
        ("A fenced story.", {"occupation": ("mechanic",), "education": ("high school",)}),
        ("A thinking story.", {"occupation": ("farmer",)}),
    ],
)
def test_fenced_block_and_leading_think_block_are_accepted(tmp_path, answer, values):
    result = extract_one(tmp_path, answer)
    assert result.attempts == 1 and result.extraction.values == values


@pytest.mark.parametrize(
    "answer, occupation",
    [
        ("A chatty story.", "teacher"),
        ("A markdown story.", "baker"),
        ("A listed story.", "nurse"),
    ],
)
def test_invalid_reply_is_repaired_once(tmp_path, answer, occupation):
    result = extract_one(tmp_path, answer)
    assert result.extraction.status == EXTRACTED and result.attempts == 2 and result.error is None
    assert result.extraction.values["occupation"] == (occupation,)
    repair = FakeExtractionBackend.prompts[-1]
    assert "Your previous reply could not be used" in repair and SCRIPT[answer][0][:20] in repair


@pytest.mark.parametrize(
    "answer, error",
    [
        ("A truncated story.", "invalid JSON"),
        ("A prose story.", "not a JSON object"),
    ],
)
def test_reply_invalid_twice_is_unextractable_and_counted(tmp_path, answer, error):
    result = extract_one(tmp_path, answer)
    assert result.extraction.status == UNEXTRACTABLE and result.attempts == 2 and error in result.error
    assert len(FakeExtractionBackend.prompts) == 2
    assert error in FakeExtractionBackend.prompts[1]


def test_refusals_from_the_flag_or_the_rule_based_detector(tmp_path):
    flagged = extract_one(tmp_path, "I would rather not write that.")
    detected = extract_one(tmp_path, "I'm sorry, but I can't make assumptions about a person based on their voice.")
    assert flagged.extraction.status == REFUSAL and detected.extraction.status == REFUSAL


def test_placeholder_values_count_as_not_stated(tmp_path):
    assert extract_one(tmp_path, "Once upon a time.").extraction.status == UNEXTRACTABLE


def test_multi_valued_values_are_split_deduplicated_and_typed(tmp_path):
    listed = extract_one(tmp_path, "Activities galore.", ADVISORY)
    assert listed.extraction.values == {"activity": ("hiking", "yoga class")}
    as_text = extract_one(tmp_path, "Activities as text.", ADVISORY)
    assert as_text.attempts == 2 and as_text.extraction.values == {"activity": ("hiking", "chess")}


@pytest.mark.parametrize(
    "reply, message",
    [
        ('{"occupation": "x"} trailing', "invalid JSON"),
        ("[1, 2]", "not a JSON object"),
        ("```python\n{}\n```", "not a JSON object"),
        ("Here:\n```json\n" + story_json() + "\n```", "not a JSON object"),
        (json.dumps({**STORY_NULLS, "hobby": None, REFUSAL_KEY: False}), "unknown: ['hobby']"),
        (json.dumps(STORY_NULLS), "missing: ['refusal']"),
        (story_json(occupation=3), '"occupation" must be a string or null'),
        (json.dumps({**STORY_NULLS, REFUSAL_KEY: "no"}), '"refusal" must be true or false'),
    ],
)
def test_parse_reply_is_strict(reply, message):
    with pytest.raises(ReplyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_reply(reply, STORY)


def test_repair_prompt_quotes_the_error_and_the_reply():
    prompt = repair_prompt(STORY, "ans", "bad reply", "invalid JSON: Expecting value at line 1 column 1")
    assert (
        "invalid JSON: Expecting value" in prompt
        and "bad reply" in prompt
        and "<<<RESPONSE\nans\nRESPONSE>>>" in prompt
    )


def test_table_shape_matches_the_rule_based_extractor_and_empty_answers_are_not_sent(tmp_path):
    answers = pd.DataFrame(
        {
            "utterance_id": ["u1", "u2", "u3", "u4"],
            "answer": ["A nurse story.", "", "A truncated story.", "I would rather not write that."],
        }
    )
    values, statuses = extractor(tmp_path).attribute_table(answers, STORY)
    rule_values, rule_statuses = fields.attribute_table(answers, STORY)
    assert list(values.columns) == list(rule_values.columns)
    assert list(statuses.columns[:3]) == list(rule_statuses.columns)
    assert list(statuses["status"]) == [EXTRACTED, EMPTY, UNEXTRACTABLE, REFUSAL]
    assert list(statuses["attempts"]) == [1, 0, 2, 1]
    refused = [["u4", attribute, "refusal"] for attribute in STORY.attribute_names]  # the authors' Refusal value
    assert values.values.tolist() == [
        ["u1", "occupation", "registered nurse"],
        ["u1", "personality", "caring"],
        *refused,
    ]
    assert fields.status_counts(statuses) == {EXTRACTED: 1, REFUSAL: 1, UNEXTRACTABLE: 1, EMPTY: 1}


def test_replies_are_cached_per_extraction_model_and_prompt(tmp_path):
    answers = ["A nurse story.", "A chatty story.", "A nurse story."]
    first = extractor(tmp_path)
    first_results = first.extract_many(answers, STORY)
    assert first.model.calls == 3  # two distinct first prompts, one repair
    again = extractor(tmp_path)
    assert again.extract_many(answers, STORY) == first_results
    assert again.model.calls == 0 and not again.model.loaded and FakeExtractionBackend.loads == 1
    other = extractor(tmp_path, target="v2")
    other.extract_many(answers[:1], STORY)
    assert other.model.calls == 1 and other.fingerprint != first.fingerprint


def test_answers_table_without_required_columns_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['answer'\]"):
        extractor(tmp_path).attribute_table(pd.DataFrame({"utterance_id": ["u1"]}), STORY)


def test_extractions_are_cached_by_extractor_fingerprint_and_answer(tmp_path, monkeypatch):
    answers = pd.DataFrame(
        {
            "utterance_id": ["u1", "u2", "u3", "u4", "u5"],
            "answer": ["A nurse story.", "A chatty story.", "", "A truncated story.", "A nurse story."],
        }
    )
    first = extractor(tmp_path)
    tables = first.attribute_table(answers, STORY)
    assert first.model.calls == 5  # three distinct answers, two repairs
    assert first.memo_fingerprint.startswith(first.fingerprint + ":")

    def not_again(self, texts, task):
        raise AssertionError(f"re-extracted {texts}")

    monkeypatch.setattr(LLMExtractor, "extract_many", not_again)
    again = extractor(tmp_path)
    cached = again.attribute_table(answers, STORY)
    for table, cached_table in zip(tables, cached):
        pd.testing.assert_frame_equal(table, cached_table)
    assert again.model.calls == 0 and not again.model.loaded
    other = extractor(tmp_path, target="v2")
    with pytest.raises(AssertionError, match="re-extracted"):
        other.attribute_table(answers, STORY)


def test_a_retitled_task_is_extracted_afresh_from_the_prompt_that_names_it(tmp_path):
    answers = pd.DataFrame({"utterance_id": ["u1"], "answer": ["A nurse story."]})
    extractor(tmp_path).attribute_table(answers, STORY)
    retitled = dataclasses.replace(STORY, title="A retold story")
    again = extractor(tmp_path)
    again.attribute_table(answers, retitled)
    assert again.model.calls == 1
    assert FakeExtractionBackend.prompts[-1] == extraction_prompt(retitled, "A nurse story.")
    assert 'given the "A retold story" task' in FakeExtractionBackend.prompts[-1]
