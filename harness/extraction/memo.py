"""Extraction results in the output cache, keyed by (extractor fingerprint, task, answer), as model outputs are.

An extraction is a pure function of the answer text, the task's attributes and the extractor: the field reader's
code (:mod:`harness.extraction.fields`), or the LLM extractor's fingerprint and code, and the task's title, which
the LLM extractor's prompt names (:func:`task_identity`). Each distinct non-empty answer
is extracted once and stored under ``cache_key("extraction", fingerprint, {"task": ...}, {"answer": answer})``
(:func:`harness.cache.cache_key`) as JSON ``{values: [[attribute, [value, ...]], ...], status, missing, attempts,
error}`` (attributes in the order the extractor gave them); a re-score of cached
answers then reads every extraction back instead of re-running the reader (or re-parsing every extraction reply).
The fingerprint holds the SHA-256 of the extractor's source files, so any change to them extracts afresh. An empty
answer is ``empty`` without asking anything, as both extractors have it.
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from collections.abc import Callable, Sequence

import pandas as pd

from harness.cache import OutputCache, cache_keys
from harness.core.values import source_fingerprint, stable_hash
from harness.extraction.fields import EMPTY, Extraction, extract_fields, extraction_tables
from harness.tasks.base import Task

NAMESPACE = "extraction"


@dataclasses.dataclass(frozen=True)
class Extracted:
    """One answer's extraction, the extraction-model replies it took (0 for the field reader and for an empty
    answer) and the last reply's parse error when no reply parsed."""

    extraction: Extraction
    attempts: int = 0
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "values": [[name, list(values)] for name, values in self.extraction.values.items()],
                "status": self.extraction.status,
                "missing": list(self.extraction.missing),
                "attempts": self.attempts,
                "error": self.error,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Extracted:
        stored = json.loads(text)
        values = {name: tuple(items) for name, items in stored["values"]}
        return cls(Extraction(values, stored["status"], tuple(stored["missing"])), stored["attempts"], stored["error"])


def field_reader_fingerprint() -> str:
    """Identifies the rule-based field reader by its code."""
    return f"field-reader:{source_fingerprint('harness.extraction.fields')}"


def task_identity(task: Task, *, reads_title: bool) -> str:
    """What of the task an extraction depends on: ``stable_hash([name, [repr(attribute), ...]])`` (labels,
    categories, descriptions, multi-valuedness), and with ``reads_title`` (an extractor whose prompt names the task,
    the LLM extractor's: "A model was given the "<title>" task") ``stable_hash([name, title, [repr(attribute),
    ...]])``. The field reader reads only the attributes, so its identity leaves the title out, as its entries in the
    shipped demo exports were keyed."""
    attributes = [repr(attribute) for attribute in task.attributes]
    return stable_hash([task.name, task.title, attributes] if reads_title else [task.name, attributes])


def memoised_extractions(
    cache: OutputCache | None,
    fingerprint: str,
    task: Task,
    answers: Sequence[str | None],
    extract: Callable[[list[str]], list[Extracted]],
    *,
    reads_title: bool,
) -> list[Extracted]:
    """The :class:`Extracted` of every answer, in order: empty answers ``empty``; the others read from ``cache``
    under ``fingerprint`` and the task's identity (:func:`task_identity`, with its title when the extractor
    ``reads_title``), and those not stored extracted by ``extract`` (each distinct answer once) and stored.
    Without a cache, every distinct answer is extracted."""
    empty = Extracted(Extraction({}, EMPTY, task.attribute_names))
    texts = ["" if answer is None else answer if type(answer) is str else str(answer) for answer in answers]
    distinct = [text for text in dict.fromkeys(texts) if text.strip()]
    identity = {"task": task_identity(task, reads_title=reads_title)}
    keys = dict(
        zip(distinct, cache_keys(NAMESPACE, fingerprint, identity, [{"answer": answer} for answer in distinct]))
    )
    parsed = parsed_extractions(cache)
    found = {answer: parsed[key] for answer, key in keys.items() if key in parsed}
    unparsed = {answer: key for answer, key in keys.items() if answer not in found}
    stored = cache.get_many(list(unparsed.values())) if cache is not None and unparsed else {}
    for answer, key in unparsed.items():
        if key in stored:
            found[answer] = parsed[key] = Extracted.from_json(stored[key])
    missing = [answer for answer in distinct if answer not in found]
    if missing:
        fresh = extract(missing)
        found.update(zip(missing, fresh))
        if cache is not None:
            cache.put_many([(keys[answer], NAMESPACE, fingerprint, found[answer].to_json(), {}) for answer in missing])
    return [found.get(text, empty) for text in texts]  # an empty or blank answer is in none of them


_PARSED: weakref.WeakKeyDictionary[OutputCache, dict[str, Extracted]] = weakref.WeakKeyDictionary()
"""Per output cache, the :class:`Extracted` of each extraction entry read or stored through it so far, by key."""


def parsed_extractions(cache: OutputCache | None) -> dict[str, Extracted]:
    """The extractions of ``cache`` already parsed in this process, by cache key (a fresh dict without a cache).
    An entry never changes once stored (keys are content hashes, rows are inserted or ignored), so the VIBE arms,
    whose answers repeat the original recordings' texts, read and parse each stored extraction once per cache
    instead of once per table (an extraction made afresh is kept here once it is read back, as before)."""
    if cache is None:
        return {}
    parsed = _PARSED.get(cache)
    if parsed is None:
        parsed = _PARSED[cache] = {}
    return parsed


def field_attribute_table(
    answers: pd.DataFrame, task: Task, cache: OutputCache | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`harness.extraction.fields.attribute_table`, each distinct answer's fields read once and kept in
    ``cache`` (:func:`memoised_extractions`)."""
    results = memoised_extractions(
        cache,
        field_reader_fingerprint(),
        task,
        answers["answer"].tolist(),
        lambda texts: [Extracted(extract_fields(text, task)) for text in texts],
        reads_title=False,
    )
    return extraction_tables(answers["utterance_id"].tolist(), [result.extraction for result in results])
