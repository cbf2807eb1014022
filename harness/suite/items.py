"""The text items a suite is built from, read and checked before anything is synthesised.

* ``--layout corpus``: a CSV or JSONL of sentences, columns ``content_id`` and ``text`` (``transcript`` is accepted
  for ``text``); every voice reads every sentence, the clip of speaker ``S`` and sentence ``C`` is utterance ``S_C``.
* ``--layout basis``: a BASIS suite folder as :mod:`harness.data.basis_suite` reads it (``suite.yaml`` and its
  metadata CSVs), whose ``speaker`` cells name the voices' speaker ids; each row's label must be its voice's label on
  the set's dimension, and the clip of a row reads the row's text (``context`` for stereotype items, ``transcript``
  for ASR sets, ``question`` for the others) into ``<set folder>/speech/<dimension>/<id:05d>_<speaker>.flac``.

Every error names the file and row (:class:`~harness.suite.errors.SuiteError`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import yaml

from harness.core.values import json_lines
from harness.data.basis_suite import KINDS, TRANSCRIPT_COLUMN
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec


@dataclasses.dataclass(frozen=True)
class Sentence:
    content_id: str
    text: str


def read_sentences(path: Path) -> list[Sentence]:
    """The sentences of a CSV or JSONL item file (module docstring)."""
    rows = read_table(path)
    sentences, seen = [], {}
    for number, row in rows:
        where = f"{path}, row {number}"
        content_id = str(row.get("content_id") or "").strip()
        text = str(row.get("text") or row.get("transcript") or "").strip()
        if not content_id:
            raise SuiteError(f"{where}: no content_id")
        if not text:
            raise SuiteError(f"{where}: content {content_id!r} has no text")
        if content_id in seen:
            raise SuiteError(f"{where}: content_id {content_id!r} is also row {seen[content_id]}")
        seen[content_id] = number
        sentences.append(Sentence(content_id, text))
    if not sentences:
        raise SuiteError(f"{path}: no items")
    return sentences


def read_table(path: Path) -> list[tuple[int, dict]]:
    """(row number, row) of a CSV (row 1 is the first after the header) or JSONL file."""
    if not path.is_file():
        raise SuiteError(f"{path}: item file does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 ({exc})") from exc
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [column for column in ("content_id",) if column not in (reader.fieldnames or [])]
        if missing or not {"text", "transcript"} & set(reader.fieldnames or []):
            found = ", ".join(reader.fieldnames) if reader.fieldnames else "no header row (the file is empty)"
            raise SuiteError(f"{path}: needs the columns content_id and text; it has {found}")
        return list(enumerate(reader, 1))
    if suffix in (".jsonl", ".json"):
        rows = []
        for number, row in json_lines(
            text, lambda number, exc: SuiteError(f"{path}, row {number}: not JSON ({exc.msg})")
        ):
            if not isinstance(row, dict):
                raise SuiteError(f"{path}, row {number}: expected an object with content_id and text")
            rows.append((number, row))
        return rows
    raise SuiteError(f"{path}: item file must be .csv or .jsonl, not {suffix!r}")


@dataclasses.dataclass(frozen=True)
class BasisSet:
    """One item set of the source suite: its ``suite.yaml`` entry, its metadata's columns and rows (as read)."""

    entry: dict
    metadata: str
    columns: list[str]
    rows: list[dict]

    @property
    def kind(self) -> str:
        return str(self.entry["kind"])

    @property
    def dimension(self) -> str:
        return str(self.entry["dimension"])

    def text_column(self) -> str:
        return TRANSCRIPT_COLUMN.get(self.kind, "question")

    def audio_key(self, row: dict) -> str:
        """The row's audio path relative to the suite folder (``.flac``, as basis_suite reads it)."""
        folder = Path(self.metadata).parent
        return (folder / "speech" / self.dimension / f"{int(row['id']):05d}_{row['speaker']}.flac").as_posix()


def read_basis_items(folder: Path, voices: dict[str, VoiceSpec]) -> tuple[str, list[BasisSet]]:
    """``suite.yaml``'s text and its item sets, each row checked against the voices (speaker -> voice)."""
    config_path = folder / "suite.yaml" if folder.is_dir() else folder
    if not config_path.is_file():
        raise SuiteError(f"{config_path}: a BASIS item folder needs a suite.yaml")
    config_text = config_path.read_text(encoding="utf-8")
    try:
        config = yaml.safe_load(config_text) or {}
    except yaml.YAMLError as exc:
        raise SuiteError(f"{config_path}: not valid YAML ({exc})") from exc
    if not isinstance(config, dict) or not isinstance(config.get("sets"), list):
        raise SuiteError(f"{config_path}: expected a mapping with a list of sets")
    sets = []
    for number, entry in enumerate(config["sets"], 1):
        if not isinstance(entry, dict) or not all(entry.get(key) for key in ("kind", "dimension", "metadata")):
            raise SuiteError(f"{config_path}, set {number}: needs kind, dimension and metadata")
        if entry["kind"] not in KINDS:
            raise SuiteError(f"{config_path}, set {number}: kind {entry['kind']!r} is not one of {list(KINDS)}")
        sets.append(read_basis_set(config_path.parent, entry, voices))
    return config_text, sets


def read_basis_set(root: Path, entry: dict, voices: dict[str, VoiceSpec]) -> BasisSet:
    path = root / str(entry["metadata"])
    if not path.is_file():
        raise SuiteError(f"{path}: metadata file does not exist")
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline=""))
    columns = list(reader.fieldnames or [])
    dimension = str(entry["dimension"])
    item_set = BasisSet(entry, str(entry["metadata"]), columns, [])
    needed = ["id", "speaker", dimension, item_set.text_column()]
    missing = [column for column in needed if column not in columns]
    if missing:
        raise SuiteError(f"{path}: missing column(s) {missing}")
    for number, row in enumerate(reader, 1):
        where = f"{path}, row {number}"
        if not str(row["id"]).strip().isdigit():
            raise SuiteError(f"{where}: id {row['id']!r} is not a whole number")
        voice = voices.get(row["speaker"])
        if voice is None:
            raise SuiteError(f"{where}: speaker {row['speaker']!r} is none of the voices ({', '.join(voices)})")
        declared = voice.label.get(dimension)
        if declared is None:
            raise SuiteError(f"{where}: voice {voice.text!r} declares no {dimension} label")
        if row[dimension] != declared:
            raise SuiteError(
                f"{where}: {dimension} {row[dimension]!r}, but voice {row['speaker']} declares {declared!r}"
            )
        if not str(row[item_set.text_column()]).strip():
            raise SuiteError(f"{where}: empty {item_set.text_column()}")
        item_set.rows.append(row)
    return item_set
