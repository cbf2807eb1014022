"""Form-constrained decoding: whatever the model's scores, the answer has the form its request declares;
and every prompt writer declares the form its prompt asks for."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.answers import ChoiceForm, JsonForm
from harness.extraction.fields import EXTRACTED, extract_fields
from harness.extraction.llm import extraction_form, parse_reply
from harness.models.answer_forms import FILLER_WORDS
from harness.tasks import TASKS

torch = pytest.importorskip("torch")
from harness.models.text_llm import FormFiller, TextLLM, vocabulary_masks  # noqa: E402

VOCABULARY = [
    "<|im_end|>",
    "\n",
    ",",
    ".",
    " the",
    " A",
    " I",
    " teacher",
    " nurse",
    " high",
    " low",
    " medium",
    " below",
    " market",
    " at",
    " above",
    " poor",
    " fair",
    " good",
    " excellent",
    " lead",
    " supporting",
    " background",
    " survives",
    " dies",
    " moderate",
    " luxury",
    " hiking",
    " reading",
    "ing",
    " calm",
    "-",
    "Competency:",
    "Interaction style:",
    "Cultural fit:",
    "Compensation:",
    "Billing:",
    "Character function:",
    "Romantic appeal:",
    "Survival:",
    "Department:",
    "Budget:",
    "Buying trigger:",
    "Vibe:",
    "Occupation:",
    "Economic situation:",
    "Education:",
    "Field of study:",
    "Family status:",
    "Personality:",
    "Activities:",
    "A",
    "B",
    "C",
    "female",
    "male",
    "\n\n",
    " x",
    "y",
    "(",
    " and",
    '"',
    "[",
    "]",
    "{",
    "}",
    ' "',
    ":",
    " ",
    "true",
    "false",
    "_",
    " h",
    " m",
    "y-",
    *"abcdefghijklmnopqrstuvwxyz",
    *"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]


class WordTokenizer:
    """Greedy longest-match tokenisation over :data:`VOCABULARY` (a stand-in for SmolLM2's BPE)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids, position = [], 0
        while position < len(text):
            match = max(
                (i for i, token in enumerate(VOCABULARY) if text.startswith(token, position)),
                key=lambda i: len(VOCABULARY[i]),
            )
            ids.append(match)
            position += len(VOCABULARY[match])
        return ids

    def decode(self, ids) -> str:
        return "".join(VOCABULARY[int(i)] for i in ids if int(i) != 0)


def fake_llm(cap: int = 4):
    """The attributes of a loaded :class:`TextLLM` that the form code reads, over the toy vocabulary."""
    llm = types.SimpleNamespace(
        tokenizer=WordTokenizer(),
        eos_id=0,
        newline_id=1,
        comma_ids=[2],
        backend=types.SimpleNamespace(max_field_tokens=cap),
        quote_id=VOCABULARY.index('"'),
        close_bracket_id=VOCABULARY.index("]"),
        space_quote_ids=(VOCABULARY.index(' "'),),
        **vocabulary_masks(VOCABULARY, {0}),
    )
    llm._json_program = types.MethodType(TextLLM._json_program, llm)
    llm.program = types.MethodType(TextLLM.program, llm)
    return llm


def decode_under_form(llm, programs, seed: int, keys=None, max_steps: int = 80) -> list[str]:
    """Greedy decoding of random scores through the :class:`FormFiller`; row ``i`` draws its scores from
    its own generator seeded by ``(seed, keys[i])``."""
    rngs = [np.random.default_rng([seed, key]) for key in (keys or range(len(programs)))]
    prompt = torch.zeros((len(programs), 3), dtype=torch.long)
    filler = FormFiller(llm, programs, prompt.shape[1])
    ids = prompt
    for _ in range(max_steps):
        raw = np.stack([rng.normal(size=len(VOCABULARY)) for rng in rngs])
        scores = filler(ids, torch.tensor(raw, dtype=torch.float32))
        ids = torch.cat([ids, scores.argmax(-1, keepdim=True)], dim=1)
        constrained = torch.tensor([program is not None for program in programs])
        if bool((ids[:, 3:] == 0).any(dim=1)[constrained].all()):
            break
    texts = []
    for program, row in zip(programs, ids[:, 3:]):
        if program is None:
            texts.append(None)
            continue
        ended = (row == 0).nonzero()
        assert len(ended), "a row never ended its turn"
        texts.append(llm.tokenizer.decode(row[: int(ended[0])]))
    return texts


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), task=st.sampled_from(sorted(TASKS)), cap=st.integers(1, 5))
def test_every_task_answer_is_its_label_block_with_values_of_the_allowed_kind(seed, task, cap):
    llm = fake_llm(cap)
    form = TASKS[task].answer_form
    text = f"{form.fields[0].label}:" + decode_under_form(llm, [llm.program(form)], seed)[0]
    lines = text.split("\n")
    assert [line.split(":")[0] for line in lines] == list(form.labels)
    for field, line in zip(form.fields, lines):
        value = line.split(":", 1)[1]
        assert value.startswith(" ") and value.strip()
        if field.options:
            assert value.strip() in field.options
            continue
        items = value.split(",")
        assert 1 <= len(items) <= field.items
        for item in items:
            words = item.strip().split()
            assert words and words[0].lower() not in FILLER_WORDS
            assert len(llm.tokenizer.encode(item)) <= cap
    assert extract_fields(text, TASKS[task]).status == EXTRACTED


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_a_choice_answer_is_one_of_the_options_and_rows_do_not_interfere(seed):
    llm = fake_llm()
    letters = llm.program(ChoiceForm(("A", "B", "C")))
    words = llm.program(ChoiceForm(("female", "male")))
    story = llm.program(TASKS["hollywood_casting"].answer_form)
    texts = decode_under_form(llm, [letters, words, None, story], seed)
    assert texts[0] in {"A", "B", "C"} and texts[1] in {"female", "male"}
    assert texts[3].count("\n") == 3
    assert decode_under_form(llm, [story], seed, keys=[3]) == texts[3:]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), task=st.sampled_from(sorted(TASKS)), cap=st.integers(1, 4))
def test_an_extraction_reply_is_a_json_object_the_strict_parser_accepts(seed, task, cap):
    llm = fake_llm(cap)
    form = extraction_form(TASKS[task])
    assert isinstance(form, JsonForm) and form.properties[-1] == ("refusal", "boolean")
    text = decode_under_form(llm, [llm.program(form)], seed, max_steps=600)[0]
    parsed = parse_reply(text, TASKS[task])
    assert list(json.loads(text)) == [key for key, _ in form.properties]
    for name, values in parsed.values.items():
        closed = TASKS[task].attributes[TASKS[task].attribute_names.index(name)].categories
        for value in values:
            if closed:
                assert value in (*closed, "Refusal"), f"{name}: {value!r} is not one of its categories"
                assert json.loads(text)[name] == value
                continue
            assert value.split()[0].lower() not in FILLER_WORDS and len(llm.tokenizer.encode(value)) <= cap
