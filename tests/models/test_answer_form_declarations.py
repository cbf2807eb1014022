"""Every prompt writer declares the form of answer its prompt asks for, and the form travels with the
request (to the cascade's LLM stage too) without entering the cache key."""

import numpy as np
import pytest

from harness.checks.basis_common.requests import choice_requests, classification_requests, open_requests
from harness.core.answers import ChoiceForm, Field, FieldsForm
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.data.basis_suite import resolve_suite
from harness.extraction.llm import extraction_form
from harness.models.cascade import Cascade
from harness.tasks import TASKS
from harness.tasks.chat import judge_request


def test_a_field_is_asked_for_as_its_placeholder_line():
    assert Field("Competency", ("low", "medium", "high")).placeholder() == "Competency: (low, medium or high)"
    assert Field("Survival", ("survives", "dies")).placeholder() == "Survival: (survives or dies)"
    assert Field("Activities", (), 3).placeholder() == "Activities: ..., ..., ..."
    assert Field("Vibe").placeholder() == "Vibe: ..."


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_self_report_prompt_ends_with_the_block_of_its_declared_form(name):
    task = TASKS[name]
    assert isinstance(task.answer_form, FieldsForm) and len(task.answer_form.fields) == len(task.attributes)
    assert task.render("", protocol="self-report").endswith("\n" + task.answer_form.block())
    request = task.request("hello", None, protocol="self-report")
    assert request.answer_form == task.answer_form and request.prompt == task.render("hello", protocol="self-report")
    assert task.request("hello", None).answer_form is None  # the paper protocol: a free answer


def test_the_form_travels_with_the_request_but_not_into_its_cache_key():
    from harness.core.requests import GenerationRequest

    plain, constrained = (
        GenerationRequest("Pick one."),
        GenerationRequest("Pick one.", answer_form=ChoiceForm(("A", "B"))),
    )
    assert plain.cache_identity() == constrained.cache_identity() and plain != constrained


def test_the_vibe_tasks_declare_their_fields():
    forms = {name: task.answer_form for name, task in TASKS.items()}
    assert forms["story"].labels == (
        "Occupation",
        "Economic situation",
        "Education",
        "Field of study",
        "Family status",
        "Personality",
    )
    assert forms["advisory"] == FieldsForm((Field("Activities", (), 3),))
    assert forms["candidate_review"].fields[3] == Field("Compensation", ("below market", "at market", "above market"))
    assert forms["hollywood_casting"].fields[3] == Field("Survival", ("survives", "dies"))


def test_the_basis_and_judge_prompts_declare_their_choices():
    suite = resolve_suite()
    stereotype = suite.of_kind("stereotype")[0]
    for request in choice_requests(stereotype, "speech-implicit").requests[:6]:
        assert (
            request.answer_form == ChoiceForm(("A", "B", "C"))
            and "Answer with the letter of one option." in request.prompt
        )
    classification = classification_requests(stereotype).requests[0]
    assert classification.answer_form == ChoiceForm(tuple(stereotype.labels))
    open_set = next(s for s in suite.of_kind("personalization") if s.answer == "open")
    assert open_requests(open_set, "text-explicit").requests[0].answer_form is None
    assert judge_request("hi", "hello").answer_form == ChoiceForm(tuple(str(score) for score in range(1, 11)))


class Recorder:
    def __init__(self, answer):
        self.answer, self.requests = answer, []

    def generate(self, requests, label=""):
        self.requests.extend(requests)
        return [self.answer for _ in requests]


def test_the_cascade_passes_the_form_to_its_llm_stage():
    asr, llm = Recorder("the words"), Recorder("Vibe: calm")
    cascade = Cascade("cascade:x+y", asr, lambda params: llm)
    form = TASKS["personal_shopper"].answer_form
    audio = Audio(np.zeros(160, dtype=np.float32))
    cascade.generate(
        [GenerationRequest("Profile them.", audio=audio, answer_form=form), GenerationRequest("Text only.")],
        DecodingParams(),
    )
    assert [request.answer_form for request in llm.requests] == [form, None]
    assert asr.requests[0].answer_form is None


def test_the_extraction_form_follows_the_schema_the_prompt_quotes():
    from harness.extraction.llm import attribute_schema

    for task in TASKS.values():
        form = extraction_form(task)
        assert [key for key, _ in form.properties] == list(attribute_schema(task)["properties"])
        assert dict(form.properties) == {
            **{a.name: "array" if a.multi_valued else "string" for a in task.attributes},
            "refusal": "boolean",
        }
