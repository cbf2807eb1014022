"""The answer forms a request may declare (fields, a choice, JSON) and the statuses of an extracted answer."""

from __future__ import annotations

import dataclasses

# The status of one answer's attribute extraction, as counted in every nTVD record.
EXTRACTED = "extracted"


REFUSAL = "refusal"


UNEXTRACTABLE = "unextractable"


EMPTY = "empty"


@dataclasses.dataclass(frozen=True)
class Field:
    """One ``Label: ...`` line of an answer: ``options`` for a closed value, else an open value of ``items`` phrases."""

    label: str
    options: tuple[str, ...] = ()
    items: int = 1

    def placeholder(self) -> str:
        """The line as a prompt asks for it: ``Label: ...``, ``Label: ..., ..., ...`` or ``Label: (a, b or c)``."""
        if self.options:
            listed = (
                self.options[0] if len(self.options) == 1 else f"{', '.join(self.options[:-1])} or {self.options[-1]}"
            )
            return f"{self.label}: ({listed})"
        return f"{self.label}: {', '.join(['...'] * self.items)}"


@dataclasses.dataclass(frozen=True)
class FieldsForm:
    """An answer that ends with one ``Label: value`` line per field (the VIBE tasks)."""

    fields: tuple[Field, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(field.label for field in self.fields)

    def block(self) -> str:
        """The placeholder lines a prompt lists, one per field."""
        return "\n".join(field.placeholder() for field in self.fields)


@dataclasses.dataclass(frozen=True)
class ChoiceForm:
    """An answer that is exactly one of ``options`` (a letter, a label, a score)."""

    options: tuple[str, ...]


JSON_KINDS = ("string", "array", "boolean")


@dataclasses.dataclass(frozen=True)
class JsonForm:
    """One JSON object; ``properties``: ``(key, kind)`` in order, ``kind`` one of :data:`JSON_KINDS`; ``choices``:
    ``(key, allowed strings)`` for a string key whose value is closed; ``schema``: the same object as a JSON schema,
    for engines that constrain by one (vLLM's and OpenAI's structured outputs)."""

    properties: tuple[tuple[str, str], ...]
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()
    schema: str | None = None

    def allowed(self, key: str) -> tuple[str, ...]:
        return dict(self.choices).get(key, ())


AnswerForm = FieldsForm | ChoiceForm | JsonForm
