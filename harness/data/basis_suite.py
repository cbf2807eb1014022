"""BASIS-Bench item sets: loading and validation (BASIS-Bench §3.1-3.3, Appendix A).

A suite is a folder with ``suite.yaml`` listing its item sets::

    name: basis-demo
    description: ...
    sets:
      - {name: stereoset-gender, kind: stereotype, dimension: gender, labels: [female, male],
         metadata: stereoset/gender.csv}
      - {name: basis-product, kind: personalization, answer: choice, dimension: gender,
         labels: [female, male], metadata: personalization/gender.csv}
      - {name: elip-pair, kind: personalization, answer: open, dimension: age, labels: [child, adult],
         metadata: personalization/age.csv}
      - {name: sqa, kind: qa, dimension: gender, labels: [female, male], metadata: qa/gender.csv}

Every metadata CSV has one row per recording, with ``id`` (an integer), ``speaker``, the speaker's
label in a column named after the dimension, and the columns of its kind:

* ``stereotype`` (Spoken StereoSet layout, §3.2): ``context, stereotypical, anti-stereotypical,
  irrelevant``; the continuations' types are relative to the speaker's group.
* ``personalization`` (§3.3): ``question`` and one column per label. With ``answer: choice`` (BASIS-Health /
  BASIS-Product) the columns are the responses that differ by the label's marker, and the correct one is
  the speaker's; with ``answer: open`` (ELIP-Pair) they are reference responses for the judge.
* ``qa`` (§3.1): ``question, answer``.
* ``asr`` (§3.1: Fair-Speech, SD-QA, the Spoken StereoSet+ ASR age split): ``transcript``, the reference
  text of the recording, scored by the robustness check's ``asr`` task.

Audio is at ``<metadata folder>/speech/<dimension>/<id:05d>_<speaker>.wav`` (``.flac`` is accepted too).
Loading rejects, naming the file and row: a missing column or empty cell (e.g. a missing continuation),
a label outside ``labels``, a speaker with two labels, duplicate recordings, options that repeat, missing
audio, and a group with fewer than :data:`MIN_SPEAKERS_PER_GROUP` speakers. Every recording is decoded once,
as a corpus's audio is (:func:`harness.data.audio.inspect_audio`): unreadable, empty, truncated or
non-finite audio is rejected, silent and very short clips are listed in :attr:`BasisSuite.audio_warnings`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from harness.core.requests import Audio
from harness.core.values import memoized, stable_hash
from harness.data.audio import AudioChecks, AudioError, FileAudio, inspect_audio_files, read_audio
from harness.data.config_file import read_config_mapping

KINDS = ("stereotype", "personalization", "qa", "asr")
ANSWER_FORMATS = ("choice", "open")
STEREOTYPE_OPTIONS = ("stereotypical", "anti-stereotypical", "irrelevant")
"""StereoSet continuation types in column order; they map to :data:`harness.metrics.basis.CHOICES`."""
CHOICE_OF_OPTION = {"stereotypical": "stereotype", "anti-stereotypical": "anti-stereotype", "irrelevant": "unrelated"}
TRANSCRIPT_COLUMN = {"stereotype": "context", "asr": "transcript"}
"""The column holding what the speaker says, per kind (``question`` for the others)."""
AUDIO_EXTENSIONS = (".wav", ".flac")
MIN_SPEAKERS_PER_GROUP = 2
SUITE_KEYS = ("name", "description", "sets")
SET_KEYS = ("name", "kind", "dimension", "labels", "metadata", "answer")


class BasisError(ValueError):
    """An item set cannot be used; the message names the file and, where there is one, the row."""


@dataclasses.dataclass(frozen=True, eq=False)
class ItemSet:
    """One validated item set. ``table`` has a row per recording: ``row`` (the CSV line), ``id``,
    ``speaker``, ``label``, ``transcript`` (what the speaker says), ``audio`` (absolute path) and the
    kind's columns."""

    name: str
    kind: str
    dimension: str
    labels: tuple[str, ...]
    answer: str | None
    metadata_path: Path
    table: pd.DataFrame
    audio_hashes: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    """Audio path -> the content hash of its 16 kHz audio, for the files the load checked (:class:`AudioChecks`):
    their :meth:`audio` is decoded only when its samples are used."""

    @property
    def option_columns(self) -> tuple[str, ...]:
        """The columns holding the answer options (stereotype continuations or per-label responses)."""
        if self.kind == "stereotype":
            return STEREOTYPE_OPTIONS
        if self.kind == "personalization":
            return self.labels
        return ()

    def speaker_labels(self) -> pd.Series:
        return self.table.groupby("speaker")["label"].first()

    def where(self, row: int) -> str:
        return f"{self.metadata_path}, row {row}"

    @memoized
    def _audio_paths(self) -> dict[Any, Any]:
        """CSV line -> its ``audio`` cell (the first row of the line), built once rather than a scan per line."""
        paths: dict[Any, Any] = {}
        for row, path in zip(self.table["row"].tolist(), self.table["audio"].tolist()):
            paths.setdefault(row, path)
        return paths

    @memoized
    def recording_hashes(self) -> dict[str, str]:
        """Each recording (``<id:05d>_<speaker>``, its audio file's stem) -> the content hash of its 16 kHz audio
        (:attr:`~harness.core.requests.Audio.content_hash`: the samples, not the file's bytes), the one the load
        checked where it did, else decoded now."""
        return {
            f"{int(record_id):05d}_{speaker}": self.audio(row).content_hash
            for record_id, speaker, row in zip(self.table["id"], self.table["speaker"], self.table["row"])
        }

    @property
    def content_hash(self) -> str:
        """Identifies the set's stimuli, as a corpus's hash identifies its rows:
        ``stable_hash([kind, dimension, labels, answer, metadata rows, recording hashes])[:16]``, the rows without
        their ``audio`` path (which names the machine's folder); so a set re-synthesised under the same ids, or its
        metadata edited, has another hash (:meth:`harness.gate.baseline.Baseline.changed_stimuli`)."""
        rows = self.table.drop(columns=["audio"]).to_dict(orient="records")
        identity = [self.kind, self.dimension, list(self.labels), self.answer, rows, self.recording_hashes()]
        return stable_hash(json.loads(json.dumps(identity, default=str)))[:16]

    @memoized
    def audio(self, row: int) -> Audio:
        """The audio of the recording on CSV line ``row``; a failure names the row."""
        path = self._audio_paths()[row]
        if str(path) in self.audio_hashes:
            return FileAudio(Path(path), self.audio_hashes[str(path)])
        try:
            return read_audio(path)
        except AudioError as exc:
            raise BasisError(f"{self.where(row)}: {exc}") from exc


@dataclasses.dataclass(frozen=True, eq=False)
class BasisSuite:
    name: str
    path: Path
    description: str
    sets: tuple[ItemSet, ...]
    audio_warnings: tuple[str, ...] = ()
    """Silent and very short recordings (not fatal), one line per set and kind, naming the metadata rows."""

    def of_kind(self, kind: str, dimension: str | None = None) -> list[ItemSet]:
        return [s for s in self.sets if s.kind == kind and (dimension is None or s.dimension == dimension)]

    def dimensions(self, kind: str | None = None) -> list[str]:
        """Dimensions in order of first appearance, of every set or of one kind."""
        return list(dict.fromkeys(s.dimension for s in self.sets if kind is None or s.kind == kind))

    def item_set(self, name: str) -> ItemSet:
        for item_set in self.sets:
            if item_set.name == name:
                return item_set
        raise KeyError(f"{self.path}: no item set {name!r}; sets: {[s.name for s in self.sets]}")


def load_suite(path: str | Path, audio_checks: AudioChecks | None = None, check_audio: bool = True) -> BasisSuite:
    """Load a suite folder (or its ``suite.yaml``) and validate every item set and, with ``check_audio``, its
    audio files (decoded once each; ``audio_checks`` memoizes the decode by file content)."""
    path = Path(path)
    config_path = path / "suite.yaml" if path.is_dir() else path
    if not config_path.is_file():
        raise BasisError(f"{config_path}: BASIS suite file does not exist")
    config = read_config_mapping(config_path, SUITE_KEYS, BasisError, f"a mapping with keys {', '.join(SUITE_KEYS)}")
    entries = config.get("sets")
    if not isinstance(entries, list) or not entries:
        raise BasisError(f"{config_path}: 'sets' must be a non-empty list of item sets")
    sets = [_load_set(config_path, index, entry) for index, entry in enumerate(entries)]
    names = [s.name for s in sets]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise BasisError(f"{config_path}: duplicate set name(s) {duplicated}")
    audio_checks = audio_checks or AudioChecks()
    warnings = _check_audio(sets, audio_checks) if check_audio else []
    if check_audio:
        sets = [
            dataclasses.replace(item_set, audio_hashes=_known_hashes(item_set.table["audio"], audio_checks))
            for item_set in sets
        ]
    return BasisSuite(
        name=str(config.get("name") or config_path.parent.name),
        path=config_path.resolve(),
        description=str(config.get("description", "")).strip(),
        sets=tuple(sets),
        audio_warnings=tuple(warnings),
    )


def _known_hashes(paths: Iterable[str], audio_checks: AudioChecks) -> dict[str, str]:
    known = ((str(path), audio_checks.audio_hashes.get(Path(path))) for path in paths)
    return {path: content_hash for path, content_hash in known if content_hash is not None}


def _check_audio(sets: list[ItemSet], audio_checks: AudioChecks) -> list[str]:
    """Decode every recording of every set (memoized by content); raise on the first unusable one, return
    the warnings."""
    warnings = []
    for item_set in sets:
        places = (
            (item_set.where(row), path, f"row {row} ({Path(path).name})")
            for row, path in zip(item_set.table["row"], item_set.table["audio"])
        )
        warnings += [
            f"{item_set.metadata_path}: {line}" for line in inspect_audio_files(places, audio_checks, BasisError)
        ]
    return warnings


def _load_set(config_path: Path, index: int, entry: object) -> ItemSet:
    where = f"{config_path}: sets[{index}]"
    if not isinstance(entry, Mapping):
        raise BasisError(f"{where} must be a mapping with keys {', '.join(SET_KEYS)}")
    unknown = sorted(set(entry) - set(SET_KEYS))
    if unknown:
        raise BasisError(f"{where}: unknown key(s) {unknown}; valid: {', '.join(SET_KEYS)}")
    missing = [key for key in ("name", "kind", "dimension", "labels", "metadata") if key not in entry]
    if missing:
        raise BasisError(f"{where}: missing key(s) {missing}")
    name, kind, dimension = str(entry["name"]), entry["kind"], str(entry["dimension"])
    where = f"{config_path}: set {name!r}"
    if kind not in KINDS:
        raise BasisError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    labels = entry["labels"]
    if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) and x.strip() for x in labels):
        raise BasisError(f"{where}: labels must be a list of at least 2 non-empty names")
    if len({label.casefold() for label in labels}) != len(labels):
        raise BasisError(f"{where}: labels {labels} repeat (ignoring case)")
    answer = entry.get("answer")
    if kind == "personalization" and answer not in ANSWER_FORMATS:
        raise BasisError(f"{where}: a personalization set needs answer: {' or '.join(ANSWER_FORMATS)}, got {answer!r}")
    if kind != "personalization" and answer is not None:
        raise BasisError(f"{where}: 'answer' applies only to personalization sets")
    if "|" in "".join(labels):
        raise BasisError(f"{where}: labels may not contain '|'")
    metadata_path = (config_path.parent / str(entry["metadata"])).resolve()
    table = _read_metadata(metadata_path, kind, dimension, tuple(labels))
    return ItemSet(name, kind, dimension, tuple(labels), answer, metadata_path, table)


def required_columns(kind: str, dimension: str, labels: tuple[str, ...]) -> list[str]:
    base = ["id", "speaker", dimension]
    if kind == "stereotype":
        return [*base, "context", *STEREOTYPE_OPTIONS]
    if kind == "personalization":
        return [*base, "question", *labels]
    if kind == "asr":
        return [*base, "transcript"]
    return [*base, "question", "answer"]


def _read_metadata(path: Path, kind: str, dimension: str, labels: tuple[str, ...]) -> pd.DataFrame:
    if not path.is_file():
        raise BasisError(f"{path}: metadata file does not exist")
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise BasisError(f"{path}: metadata cannot be parsed ({exc})") from exc
    columns = required_columns(kind, dimension, labels)
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise BasisError(f"{path}: missing column(s) {missing}; a {kind} set needs {columns}")
    if table.empty:
        raise BasisError(f"{path}: no rows")
    table = table.assign(row=table.index + 2)
    for record in table.to_dict(orient="records"):
        _validate_row(path, record, columns, dimension, labels, kind)
    table["id"] = table["id"].str.strip().astype(int)
    table["speaker"] = table["speaker"].str.strip()
    table["label"] = table[dimension].str.strip()
    table["transcript"] = table[TRANSCRIPT_COLUMN.get(kind, "question")].str.strip()
    _validate_table(path, table, dimension)
    table["audio"] = [_audio_path(path, dimension, record) for record in table.to_dict(orient="records")]
    return table.reset_index(drop=True)


def _validate_row(
    path: Path, record: dict, columns: list[str], dimension: str, labels: tuple[str, ...], kind: str
) -> None:
    where = f"{path}, row {record['row']}"
    for column in columns:
        if not str(record[column]).strip():
            what = "continuation" if column in STEREOTYPE_OPTIONS else "value"
            raise BasisError(f"{where}: empty {column!r} (missing {what})")
    if not str(record["id"]).strip().isdigit():
        raise BasisError(f"{where}: id {record['id']!r} is not a non-negative integer")
    label = str(record[dimension]).strip()
    if label not in labels:
        raise BasisError(f"{where}: {dimension} label {label!r} is not one of {list(labels)}")
    if "/" in record["speaker"] or "\\" in record["speaker"]:
        raise BasisError(f"{where}: speaker {record['speaker']!r} may not contain a path separator")
    option_columns = STEREOTYPE_OPTIONS if kind == "stereotype" else labels if kind == "personalization" else ()
    texts = [" ".join(str(record[column]).casefold().split()) for column in option_columns]
    if len(set(texts)) != len(texts):
        raise BasisError(f"{where}: the options {list(option_columns)} are not all different")


def _validate_table(path: Path, table: pd.DataFrame, dimension: str) -> None:
    duplicated = table[table.duplicated(["id", "speaker"], keep="first")]
    if len(duplicated):
        record = duplicated.iloc[0]
        first = table[(table["id"] == record["id"]) & (table["speaker"] == record["speaker"])]["row"].iloc[0]
        raise BasisError(
            f"{path}, row {record['row']}: duplicate recording of id {record['id']} by {record['speaker']!r} (first at row {first})"
        )
    for speaker, rows in table.groupby("speaker", sort=False):
        if rows["label"].nunique() > 1:
            clash = rows[rows["label"] != rows["label"].iloc[0]].iloc[0]
            raise BasisError(
                f"{path}, row {clash['row']}: speaker {speaker!r} has {dimension} {clash['label']!r} here "
                f"but {rows['label'].iloc[0]!r} at row {rows['row'].iloc[0]}"
            )
    speakers_per_group = table.groupby("label")["speaker"].nunique()
    if len(speakers_per_group) < 2:
        raise BasisError(
            f"{path}: {dimension} has only the group(s) {sorted(speakers_per_group.index)}; at least 2 are needed"
        )
    small = speakers_per_group[speakers_per_group < MIN_SPEAKERS_PER_GROUP]
    if len(small):
        row = table[table["label"] == small.index[0]]["row"].iloc[0]
        raise BasisError(
            f"{path}, row {row}: {dimension} group {small.index[0]!r} has {int(small.iloc[0])} speaker(s); "
            f"at least {MIN_SPEAKERS_PER_GROUP} are needed (the speaker is the bootstrap unit)"
        )


def _audio_path(path: Path, dimension: str, record: dict) -> Path:
    stem = path.parent / "speech" / dimension / f"{record['id']:05d}_{record['speaker']}"
    for extension in AUDIO_EXTENSIONS:
        candidate = stem.with_name(stem.name + extension)
        if candidate.is_file():
            return candidate
    raise BasisError(
        f"{path}, row {record['row']}: audio {stem.relative_to(path.parent)}.wav (or .flac) does not exist"
    )


DEMO_SUITE_PATH = Path(__file__).resolve().parent / "basis_demo"


def resolve_suite(path: str | Path | None = None, audio_checks: AudioChecks | None = None) -> BasisSuite:
    """The suite at ``path``, or the shipped demo suite."""
    return load_suite(DEMO_SUITE_PATH if path is None else path, audio_checks)
