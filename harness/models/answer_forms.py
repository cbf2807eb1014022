"""What form-constrained decoding needs beyond the form types (:class:`harness.core.answers.FieldsForm`,
:class:`~harness.core.answers.ChoiceForm`, :class:`~harness.core.answers.JsonForm`), which every request carries as
declared by the task that wrote its prompt (no prompt text is parsed for it).

A small text LLM (SmolLM2-135M) asked for a story and then a ``Label: ...`` block loops or copies the
placeholders; asked for "the letter of one option" it writes a paragraph. The demo cascade's LLM stage
therefore decodes *inside the request's form* (see :class:`~harness.models.text_llm.FormFiller`): every
token of every value is still the model's greedy choice, but only among tokens the form allows: a closed
value one of the listed options, an open one a few words (a list of ``items``) never starting with a
filler word, a JSON object's keys in order, each string value a few words, each boolean ``true`` or
``false``.
"""

from __future__ import annotations

from harness.core.answers import JSON_KINDS, ChoiceForm, Field, FieldsForm, JsonForm

# Words an open value may not start with: they begin a sentence ("A person who ..."), not a value.
FILLER_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "i",
        "my",
        "me",
        "we",
        "our",
        "you",
        "your",
        "this",
        "that",
        "these",
        "those",
        "it",
        "he",
        "she",
        "they",
        "his",
        "her",
        "their",
        "is",
        "are",
        "was",
        "be",
        "to",
        "of",
        "and",
        "or",
        "as",
        "person",
        "someone",
        "speaker",
        "user",
        "customer",
        "candidate",
        "actor",
        "character",
        "individual",
    }
)

__all__ = ["FILLER_WORDS", "JSON_KINDS", "ChoiceForm", "Field", "FieldsForm", "JsonForm"]
