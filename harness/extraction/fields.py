"""Rule-based extraction of attributes from answers that state them as fields ("Occupation: nurse").

The task prompts ask the model to end its answer with one ``Label: value`` line per attribute. This
extractor reads those lines whatever their markdown (bullets, numbering, bold, headings), takes the last
statement of each attribute, splits multi-valued attributes (Advisory's activities) into one value each,
and normalises values (case, whitespace, punctuation, articles, plural) so that "Hiking.", "**hikes**" and
"a hike" are one value. An answer with no fields that reads as a refusal is marked as such.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable

import pandas as pd

from harness.core.answers import EMPTY, EXTRACTED, REFUSAL, UNEXTRACTABLE
from harness.tasks.base import Task

_MARKDOWN_PREFIX = re.compile(
    r"^\s*(?:#{1,6}\s*|>\s*|[-*\u2022\u25cf+]\s+|\d{1,2}[.)]\s+|[a-z][.)]\s+)*", re.IGNORECASE
)
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_FIELD = re.compile(r"^(?P<label>[A-Za-z][A-Za-z /'&-]{0,40}?)\s*(?::|\s[-\u2013\u2014]\s)\s*(?P<value>.*)$")
_LIST_SPLIT = re.compile(r"\s*(?:,|;|\s/\s|\band\b|&)\s*", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(?:i\s*(?:'m| am)\s*(?:sorry|unable|not able)|i\s*(?:can(?:'|no)?t|cannot|won't|will not)\s+"
    r"(?:make|determine|infer|guess|assume|provide|help|create|write|speculate|judge|profile)|as an ai\b|"
    r"not (?:appropriate|possible) to (?:make|infer|assume|judge))",
    re.IGNORECASE,
)
_PLURAL_IE_WORDS = frozenset(
    "movie cookie calorie selfie zombie rookie smoothie pie tie lie die hoodie foodie goalie brownie".split()
)
_INVARIANT_WORDS = frozenset(
    "news series species chess business fitness wellness glasses clothes always yes bus gas plus canvas "
    "athletics gymnastics economics physics mathematics politics ethics aesthetics robotics electronics "
    "cosmetics graphics linguistics statistics arts crafts dies survives".split()
)


@dataclasses.dataclass(frozen=True)
class Extraction:
    """What one answer states: normalised values per attribute, and the answer's status."""

    values: dict[str, tuple[str, ...]]
    status: str
    missing: tuple[str, ...]


def normalise_value(text: str) -> str:
    """Lower-case, NFKC, no markdown or surrounding punctuation, no leading article, singular last word."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _EMPHASIS.sub("", text)
    text = re.sub(r"[\u2010-\u2015-]", " ", text)
    text = re.sub(r"[^\w\s'&+/]", " ", text)
    text = re.sub(r"\s+", " ", text).strip(" '\"")
    text = re.sub(r"^(?:a|an|the)\s+", "", text)
    if not text:
        return ""
    words = text.split(" ")
    words[-1] = singular(words[-1])
    return " ".join(words)


def singular(word: str) -> str:
    """English singular of a noun by suffix rules, leaving invariant and short words alone."""
    if len(word) <= 3 or word in _INVARIANT_WORDS or word.endswith(("ss", "us", "is", "ics")):
        return word
    if word.endswith("ies"):
        stem = word[:-3]
        return stem + "ie" if stem + "ie" in _PLURAL_IE_WORDS else stem + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("'s"):
        return word[:-1]
    return word


def _clean_line(line: str) -> str:
    return _EMPHASIS.sub("", _MARKDOWN_PREFIX.sub("", line)).strip()


def _label_index(task: Task) -> dict[str, str]:
    index = {}
    for attribute in task.attributes:
        for label in attribute.labels:
            index[" ".join(label.lower().split())] = attribute.name
    return index


def extract_fields(answer: str | None, task: Task) -> Extraction:
    """Read the ``Label: value`` fields of ``answer`` for ``task``'s attributes."""
    if answer is None or not answer.strip():
        return Extraction({}, EMPTY, task.attribute_names)
    labels = _label_index(task)
    multi = {attribute.name for attribute in task.attributes if attribute.multi_valued}
    found: dict[str, list[str]] = {}
    lines = answer.splitlines()
    position = 0
    while position < len(lines):
        match = _FIELD.match(_clean_line(lines[position]))
        position += 1
        if not match:
            continue
        attribute = labels.get(" ".join(match["label"].lower().split()))
        if attribute is None:
            continue
        raw_value = match["value"].strip()
        if attribute in multi:
            items = [raw_value] if raw_value else []
            while not raw_value and position < len(lines) and _is_list_item(lines[position]):
                items.append(_clean_line(lines[position]))
                position += 1
            parts = [part for item in items for part in _LIST_SPLIT.split(_strip_explanation(item))]
        else:
            parts = [_strip_explanation(raw_value)]
        values = [value for value in (normalise_value(part) for part in parts) if value]
        if values:
            found[attribute] = values
    values = {name: tuple(dict.fromkeys(found[name])) for name in task.attribute_names if name in found}
    missing = tuple(name for name in task.attribute_names if name not in values)
    if values:
        return Extraction(values, EXTRACTED, missing)
    status = REFUSAL if _REFUSAL.search(answer) else UNEXTRACTABLE
    return Extraction({}, status, missing)


def _is_list_item(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and _MARKDOWN_PREFIX.match(line).end() > 0 and not _FIELD.match(_clean_line(line))


def _strip_explanation(value: str) -> str:
    """Drop an explanation after the value: "Nurse (caring and patient)" or "Nurse - she loves..."."""
    value = re.sub(r"\([^)]*\)", " ", value)
    return re.split(r"\s[-\u2013\u2014]\s|:\s", value, maxsplit=1)[0]


def attribute_table(answers: pd.DataFrame, task: Task) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Extract every answer of ``answers`` (columns ``utterance_id``, ``answer``).

    Returns the long table (``utterance_id, attribute, value``; one row per value) and a status table
    (``utterance_id, status, missing``) with one row per answer, so that nothing is dropped silently.
    """
    return extraction_tables(answers["utterance_id"], [extract_fields(answer, task) for answer in answers["answer"]])


def extraction_tables(
    utterance_ids: Iterable[str], extractions: Iterable[Extraction]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`attribute_table`'s two tables from each utterance's :class:`Extraction`, in order. Built column by
    column (a frame from row tuples infers each column from a 2-D object array, several times slower); each
    distinct extraction object (a memoised extraction is shared by every answer of its text) is flattened into its
    attribute and value columns once. A table without rows is built as from no row tuples, whose columns are of
    ``object`` dtype."""
    value_columns: dict[str, list] = {"utterance_id": [], "attribute": [], "value": []}
    status_columns: dict[str, list] = {"utterance_id": [], "status": [], "missing": []}
    flattened: dict[int, tuple[list, list, str]] = {}
    kept = []  # the extractions flattened, so that no id in ``flattened`` is reused by a new object meanwhile
    for utterance_id, extraction in zip(utterance_ids, extractions):
        parts = flattened.get(id(extraction))
        if parts is None:
            attributes, values = [], []
            for attribute, attribute_values in extraction.values.items():
                attributes.extend([attribute] * len(attribute_values))
                values.extend(attribute_values)
            parts = flattened[id(extraction)] = (attributes, values, ",".join(extraction.missing))
            kept.append(extraction)
        attributes, values, missing = parts
        status_columns["utterance_id"].append(utterance_id)
        status_columns["status"].append(extraction.status)
        status_columns["missing"].append(missing)
        if attributes:
            value_columns["utterance_id"].extend([utterance_id] * len(attributes))
            value_columns["attribute"].extend(attributes)
            value_columns["value"].extend(values)
    return _frame_of_columns(value_columns), _frame_of_columns(status_columns)


def _frame_of_columns(columns: dict[str, list]) -> pd.DataFrame:
    """The frame of equal-length ``columns``; with no rows, the frame ``pd.DataFrame([], columns=...)`` gives."""
    if not next(iter(columns.values())):
        return pd.DataFrame([], columns=list(columns))
    return pd.DataFrame(columns)


def status_counts(
    statuses: pd.DataFrame, categories: Iterable[str] = (EXTRACTED, REFUSAL, UNEXTRACTABLE, EMPTY)
) -> dict[str, int]:
    counts = statuses["status"].value_counts()
    return {category: int(counts.get(category, 0)) for category in categories}
