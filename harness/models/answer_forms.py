"""The form of answer a prompt asks for, read from the prompt itself (no torch needed).

A small text LLM (SmolLM2-135M) asked for a story and then a ``Label: ...`` block loops or copies the
placeholders; asked for "the letter of one option" it writes a paragraph. The demo cascade's LLM stage
therefore decodes *inside the form the prompt states* (see :class:`~harness.models.text_llm.FormFiller`):
every token of every value is still the model's greedy choice, but only among tokens the form allows.
This module reads the form:

* :class:`FieldsForm` - the prompt holds a block of ``Label: ...`` / ``Label: (a, b or c)`` /
  ``Label: ..., ..., ...`` lines (the VIBE task prompts): the answer is that block, each value the
  model's, a closed value one of the listed options, an open one a few words (a list of ``n`` items for
  ``..., ..., ...``), never starting with a filler word (``a``, ``the``, ``I`` ...);
* :class:`ChoiceForm` - the prompt lists options ``A. ...`` and asks for "the letter", asks to
  "answer with exactly one of: x, y", or asks for a rating "from 1 ... to 10" and "the number only": the
  answer is one of those;
* :class:`JsonForm` - the prompt asks for "one JSON object that matches this JSON schema" and gives an
  object schema (the LLM extractor's prompt): the answer is that object, its keys in the schema's order,
  each string value a few words of the model's, each array a list of such strings, each boolean the
  model's ``true`` or ``false`` (a value the model leaves unstated comes out as a word such as
  ``unknown``, which the extractor reads as absent);
* ``None`` - anything else is answered freely.
"""

from __future__ import annotations

import dataclasses
import json
import re

_PLACEHOLDER_LINE = re.compile(r"^(?P<label>[A-Z][A-Za-z /'&-]{0,40}):\s*(?P<slot>\.\.\.(?:,\s*\.\.\.)*|\((?P<options>[^()]+)\))\s*$")
_LETTER_OPTION = re.compile(r"^(?P<letter>[A-Z])\.\s+\S")
_ASKS_FOR_LETTER = re.compile(r"\bthe letter of one option\b", re.IGNORECASE)
_ONE_OF = re.compile(r"\banswer with exactly one of:\s*(?P<options>[^.\n]+)", re.IGNORECASE)
_NUMBER_ONLY = re.compile(r"\banswer with the number only\b", re.IGNORECASE)
_RANGE = re.compile(r"\bfrom (?P<low>\d{1,3})\b[^.\n]*?\bto (?P<high>\d{1,3})\b", re.IGNORECASE)
_JSON_REQUEST = re.compile(r"\bone JSON object that matches this JSON schema\b[^:\n]*:[ \t]*\n", re.IGNORECASE)
JSON_KINDS = ("string", "array", "boolean")
_OPTION_SPLIT = re.compile(r",\s*(?:or\s+)?|\s+or\s+")
# Words an open value may not start with: they begin a sentence ("A person who ..."), not a value.
FILLER_WORDS = frozenset({
    "a", "an", "the", "i", "my", "me", "we", "our", "you", "your", "this", "that", "these", "those", "it",
    "he", "she", "they", "his", "her", "their", "is", "are", "was", "be", "to", "of", "and", "or", "as",
    "person", "someone", "speaker", "user", "customer", "candidate", "actor", "character", "individual",
})


@dataclasses.dataclass(frozen=True)
class Field:
    """One ``Label: ...`` line: ``options`` for a closed value, else an open value of ``items`` phrases."""

    label: str
    options: tuple[str, ...] = ()
    items: int = 1


@dataclasses.dataclass(frozen=True)
class FieldsForm:
    fields: tuple[Field, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(field.label for field in self.fields)


@dataclasses.dataclass(frozen=True)
class ChoiceForm:
    options: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class JsonForm:
    """``properties``: ``(key, kind)`` in the schema's order, ``kind`` one of :data:`JSON_KINDS`."""

    properties: tuple[tuple[str, str], ...]


def split_options(text: str) -> tuple[str, ...]:
    """``"low, medium or high"`` -> ``("low", "medium", "high")``."""
    return tuple(option.strip() for option in _OPTION_SPLIT.split(text.strip()) if option.strip())


def fields_form(prompt: str) -> FieldsForm | None:
    """The last block of consecutive placeholder lines in ``prompt``, or None."""
    blocks: list[list[Field]] = []
    previous_matched = False
    for line in prompt.splitlines():
        match = _PLACEHOLDER_LINE.match(line.strip())
        if not match:
            previous_matched = False
            continue
        if not previous_matched:
            blocks.append([])
        options = split_options(match["options"]) if match["options"] else ()
        blocks[-1].append(Field(match["label"], options, 1 if options else match["slot"].count("...")))
        previous_matched = True
    return FieldsForm(tuple(blocks[-1])) if blocks else None


def choice_form(prompt: str) -> ChoiceForm | None:
    """Lettered options with a request for the letter, an ``answer with exactly one of:`` list, or a
    ``from <low> ... to <high>`` scale with ``answer with the number only``; or None."""
    if _ASKS_FOR_LETTER.search(prompt):
        letters = [match["letter"] for match in map(_LETTER_OPTION.match, prompt.splitlines()) if match]
        if letters:
            return ChoiceForm(tuple(dict.fromkeys(letters)))
    one_of = _ONE_OF.search(prompt)
    if one_of:
        options = split_options(one_of["options"])
        if len(options) >= 2:
            return ChoiceForm(options)
    scale = _RANGE.search(prompt) if _NUMBER_ONLY.search(prompt) else None
    if scale and int(scale["low"]) < int(scale["high"]):
        return ChoiceForm(tuple(str(number) for number in range(int(scale["low"]), int(scale["high"]) + 1)))
    return None


def json_form(prompt: str) -> JsonForm | None:
    """The object schema that follows a request for "one JSON object that matches this JSON schema", or None
    when there is no such request or the schema is not an object of strings, string lists and booleans."""
    request = _JSON_REQUEST.search(prompt)
    if not request:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(prompt[request.end():].lstrip())
    except ValueError:
        return None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return None
    kinds = []
    for key, spec in properties.items():
        types = spec.get("type") if isinstance(spec, dict) else None
        types = set(types) if isinstance(types, list) else {types}
        if types == {"boolean"}:
            kinds.append((key, "boolean"))
        elif types == {"array"} and spec.get("items", {}).get("type") == "string":
            kinds.append((key, "array"))
        elif "string" in types and types <= {"string", "null"}:
            kinds.append((key, "string"))
        else:
            return None
    return JsonForm(tuple(kinds))


def answer_form(prompt: str) -> FieldsForm | ChoiceForm | JsonForm | None:
    """An explicit JSON request first: its prompt quotes the answer it extracts from, which may hold any form."""
    return json_form(prompt) or fields_form(prompt) or choice_form(prompt)
