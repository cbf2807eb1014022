"""A task: a prompt template sent with each utterance's audio, and the attributes its answers state."""

from __future__ import annotations

import dataclasses
import string
from pathlib import Path

from harness.core.answers import Field, FieldsForm
from harness.core.requests import Audio, GenerationRequest

PROMPTS_DIR = Path(__file__).parent / "prompts"


@dataclasses.dataclass(frozen=True)
class Attribute:
    """An attribute of a task's answer. ``labels`` are the field names an answer may use for it."""

    name: str
    labels: tuple[str, ...]
    multi_valued: bool = False
    options: tuple[str, ...] = ()
    items: int = 1

    @property
    def field(self) -> Field:
        """The answer line that states it: its first label, capitalised; ``items`` phrases of a multi-valued one."""
        return Field(self.labels[0][:1].upper() + self.labels[0][1:], self.options, self.items)


@dataclasses.dataclass(frozen=True)
class Task:
    """A VIBE task (§II-B). The prompt is a template file; ``$transcript`` is filled in when present."""

    name: str
    title: str
    prompt_file: str
    attributes: tuple[Attribute, ...]
    paper_section: str = ""

    def template(self, prompts_dir: Path | None = None) -> str:
        override = None if prompts_dir is None else Path(prompts_dir) / self.prompt_file
        path = override if override is not None and override.is_file() else PROMPTS_DIR / self.prompt_file
        return path.read_text(encoding="utf-8").strip()

    @property
    def answer_form(self) -> FieldsForm:
        """The ``Label: ...`` block the prompt asks for (its ``$answer_fields``), one line per attribute."""
        return FieldsForm(tuple(attribute.field for attribute in self.attributes))

    def render(self, transcript: str = "", prompts_dir: Path | None = None) -> str:
        return string.Template(self.template(prompts_dir)).safe_substitute(
            transcript=transcript, answer_fields=self.answer_form.block()
        )

    def request(self, transcript: str, audio: Audio | None, prompts_dir: Path | None = None) -> GenerationRequest:
        return GenerationRequest(prompt=self.render(transcript, prompts_dir), audio=audio, answer_form=self.answer_form)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(attribute.name for attribute in self.attributes)
