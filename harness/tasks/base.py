"""A task: a prompt template sent with each utterance's audio, and the attributes its answers state.

Two protocols (thresholds ``vibe.defaults.protocol``): ``paper`` (VIBE §II-A/B, the default) asks for free prose,
with no answer list and no form, and an LLM extractor maps the prose onto the task's extraction schema
(``extraction_schema.yaml``); ``self-report`` (a named deviation, for models too weak to write prose that can be
extracted) ends the prompt with a ``Label: ...`` block the model fills in itself, read by the field reader."""

from __future__ import annotations

import dataclasses
import functools
import string
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.core.answers import Field, FieldsForm
from harness.core.requests import Audio, GenerationRequest

PROMPTS_DIR = Path(__file__).parent / "prompts"
SELF_REPORT_DIR = "self_report"
PAPER = "paper"
SELF_REPORT = "self-report"
PROTOCOLS = (PAPER, SELF_REPORT)
EXTRACTION_KINDS = ("phrase", "list", "categories")


@dataclasses.dataclass(frozen=True)
class Attribute:
    """An attribute of a task's answer. ``labels`` are the field names an answer may use for it."""

    name: str
    labels: tuple[str, ...]
    multi_valued: bool = False
    options: tuple[str, ...] = ()
    items: int = 1
    categories: tuple[str, ...] = ()
    describe: str = ""
    """``categories``: the closed set the paper's extractor maps this attribute onto (empty: a phrase, or a list
    when ``multi_valued``); ``describe``: what the extraction prompt says the attribute is. ``options`` belong to
    the self-report form only."""

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
    max_new_tokens: int = 256
    """The token budget of an answer under the paper protocol, fitted to the length the task asks for (a model's
    own larger ``max_new_tokens`` wins); the self-report protocol keeps the model's decoding."""

    def template(self, prompts_dir: Path | None = None, protocol: str = PAPER) -> str:
        """The prompt file of ``protocol``; ``prompts_dir`` (``--prompts DIR``) replaces it where it has the file.
        Each call looks the file up (one ``stat``, two with ``prompts_dir``) and reads it once per version
        (:func:`_prompt_text`, keyed by its modification time and size), so a file edited or added between runs is read
        anew; :meth:`requests` calls it once for many utterances."""
        override, shipped = _prompt_paths(self.prompt_file, prompts_dir, protocol)
        path = override if override is not None and override.is_file() else shipped
        version = path.stat()
        return _prompt_text(path, version.st_mtime_ns, version.st_size)

    @functools.cached_property
    def answer_form(self) -> FieldsForm:
        """The ``Label: ...`` block the prompt asks for (its ``$answer_fields``), one line per attribute."""
        return FieldsForm(tuple(attribute.field for attribute in self.attributes))

    @functools.cached_property
    def _answer_block(self) -> str:
        return self.answer_form.block()

    def render(self, transcript: str = "", prompts_dir: Path | None = None, protocol: str = PAPER) -> str:
        return self._renderer(prompts_dir, protocol)(transcript=transcript)

    def _renderer(self, prompts_dir: Path | None, protocol: str) -> Callable[..., str]:
        """``transcript=... -> prompt``: the template of :meth:`template` with ``$answer_fields`` filled in."""
        template = string.Template(self.template(prompts_dir, protocol))
        return functools.partial(template.safe_substitute, answer_fields=self._answer_block)

    def request(
        self, transcript: str, audio: Audio | None, prompts_dir: Path | None = None, protocol: str = PAPER
    ) -> GenerationRequest:
        """The request for one utterance: a free answer under the paper protocol, the field form under self-report."""
        return self.requests([transcript], [audio], prompts_dir, protocol)[0]

    def requests(
        self,
        transcripts: Iterable[str],
        audio: Iterable[Audio | None],
        prompts_dir: Path | None = None,
        protocol: str = PAPER,
    ) -> tuple[GenerationRequest, ...]:
        """:meth:`request` of each (transcript, audio) pair, the prompt file looked up once for them all and each
        distinct transcript rendered once."""
        render = self._renderer(prompts_dir, protocol)
        form = self.answer_form if protocol == SELF_REPORT else None
        prompts: dict[str, str] = {}
        requests = []
        for transcript, clip in zip(transcripts, audio, strict=True):
            prompt = prompts.get(transcript)
            if prompt is None:
                prompt = prompts[transcript] = render(transcript=transcript)
            requests.append(GenerationRequest(prompt=prompt, audio=clip, answer_form=form))
        return tuple(requests)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(attribute.name for attribute in self.attributes)


@functools.lru_cache(maxsize=256)
def _prompt_paths(prompt_file: str, prompts_dir: Path | str | None, protocol: str) -> tuple[Path | None, Path]:
    """Where ``prompt_file`` of ``protocol`` may be: in ``prompts_dir`` (None without one) and as shipped."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown VIBE protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    shipped = PROMPTS_DIR / (SELF_REPORT_DIR if protocol == SELF_REPORT else "") / prompt_file
    return (None if prompts_dir is None else Path(prompts_dir) / prompt_file), shipped


@functools.lru_cache(maxsize=64)
def _prompt_text(path: Path, modified_ns: int, size: int) -> str:
    """A prompt file's text, read once per version (its modification time and size are in the key, so an edit is
    read)."""
    return path.read_text(encoding="utf-8").strip()
