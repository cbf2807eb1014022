"""A task: a prompt template sent with each utterance's audio, and the attributes its answers state."""

from __future__ import annotations

import dataclasses
import string
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent / "prompts"


@dataclasses.dataclass(frozen=True)
class Attribute:
    """An attribute of a task's answer. ``labels`` are the field names an answer may use for it."""

    name: str
    labels: tuple[str, ...]
    multi_valued: bool = False


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

    def render(self, transcript: str = "", prompts_dir: Path | None = None) -> str:
        return string.Template(self.template(prompts_dir)).safe_substitute(transcript=transcript)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(attribute.name for attribute in self.attributes)
