"""Corpora: a manifest (CSV or JSONL) with one row per utterance, validated on load.

Required columns: ``utterance_id, audio, speaker_id, content_id, transcript``. Every other column is a
demographic dimension (``gender``, ``accent``, ``age``...) unless a ``corpus.yaml`` beside the manifest
lists the dimensions explicitly (``dimensions: [gender, accent]``); then the other columns are kept as
information. ``audio`` paths are relative to the manifest's folder (the corpus folder) and must lie inside
it, unless ``corpus.yaml`` lists further folders under ``audio_folders`` (absolute, or relative to
``corpus.yaml``), as the corpus loaders do for audio left where a distribution unpacked. The check is on
the path as written (``..`` resolved); symbolic links inside the corpus folder are followed.

Loading decodes every audio file completely (:func:`harness.data.audio.inspect_audio`, memoized by file
content when an :class:`~harness.data.audio.AudioChecks` file is given) and rejects truncated files and
non-finite samples; silent and very short clips are kept and listed in :attr:`Corpus.audio_warnings`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

import pandas as pd

from harness.core.requests import Audio
from harness.data.audio import AudioChecks, AudioError, FileAudio, inspect_audio_files, read_audio
from harness.data.config_file import read_config_mapping

REQUIRED_COLUMNS = ("utterance_id", "audio", "speaker_id", "content_id", "transcript")
MIN_SPEAKERS_PER_GROUP = 2
MIN_GROUPS = 2
CONFIG_KEYS = ("audio_folders", "description", "dimensions", "manifest", "name")


class CorpusError(ValueError):
    """A corpus cannot be used; the message names the file and, where there is one, the row."""


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A validated corpus. ``table`` has the required columns, the dimensions and any other columns."""

    name: str
    manifest_path: Path
    table: pd.DataFrame
    dimensions: tuple[str, ...]
    description: str = ""
    audio_warnings: tuple[str, ...] = ()
    """Silent and very short clips (not fatal), one line per kind, naming the manifest rows."""
    audio_hashes: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    """The manifest's ``audio`` value -> the content hash of its 16 kHz audio, for the files the load checked
    (:class:`~harness.data.audio.AudioChecks`); their :meth:`audio` is decoded only when its samples are used."""

    @property
    def root(self) -> Path:
        return self.manifest_path.parent

    def audio_path(self, utterance_id: str) -> Path:
        return self.root / self.table.loc[utterance_id, "audio"]

    @cached_property
    def _audio_of(self) -> dict[str, str]:
        """Utterance id -> the manifest's ``audio`` value (a dict: :meth:`audio` is called once per recording)."""
        return dict(zip(self.table.index, self.table["audio"]))

    @cached_property
    def transcripts(self) -> dict[str, str]:
        """Utterance id -> its transcript as text (made once; every task of a check reads them)."""
        return dict(zip(self.table.index, self.table["transcript"].astype(str)))

    @cached_property
    def _file_audio(self) -> dict[str, FileAudio]:
        """The :class:`FileAudio` of each utterance already asked for (several checks ask for every recording)."""
        return {}

    def audio(self, utterance_id: str) -> Audio:
        known = self._file_audio.get(utterance_id)
        if known is not None:
            return known
        relative = self._audio_of[utterance_id]
        content_hash = self.audio_hashes.get(relative)
        if content_hash is None:
            return read_audio(self.root / relative)
        made = self._file_audio[utterance_id] = FileAudio(self.root / relative, content_hash)
        return made

    def speaker_labels(self, dimension: str) -> pd.Series:
        """The group of every speaker on ``dimension`` (validated to be one label per speaker)."""
        if dimension not in self.dimensions:
            raise CorpusError(f"{self.manifest_path}: no dimension {dimension!r}; dimensions: {list(self.dimensions)}")
        return self.table.groupby("speaker_id")[dimension].first()

    @cached_property
    def content_hash(self) -> str:
        """Hash of the manifest's rows (not the audio bytes); identifies the corpus in run metadata."""
        rows = self.table.reset_index(drop=True).to_dict(orient="records")
        return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def groups(self, dimension: str) -> list[str]:
        return sorted(self.speaker_labels(dimension).unique())


def load_corpus(
    path: str | Path, name: str | None = None, check_audio: bool = True, audio_checks: AudioChecks | None = None
) -> Corpus:
    """Load and validate a corpus from a manifest file or a folder holding ``corpus.yaml``.

    Errors (each a :class:`CorpusError` naming the file and row): missing columns, duplicate utterance
    ids, an audio path outside the corpus folder and ``audio_folders``, a speaker with two labels on one
    dimension, a dimension with fewer than 2 groups, a group with fewer than 2 speakers; with
    ``check_audio``, audio that is missing, unreadable, empty, truncated or not finite, found by decoding
    every file once (``audio_checks`` memoizes the decode by file content; default: in memory only).
    """
    path = Path(path)
    config: dict = {}
    config_path: Path | None = None
    if path.is_dir():
        config_path = path / "corpus.yaml"
        if not config_path.is_file():
            raise CorpusError(f"{path}: a corpus folder needs a corpus.yaml naming its manifest")
        config = _read_corpus_config(config_path)
        manifest_path = path / str(config.get("manifest", "manifest.csv"))
    else:
        manifest_path = path
        sidecar = path.parent / "corpus.yaml"
        if sidecar.is_file():
            config_path = sidecar
            config = _read_corpus_config(sidecar)
    if not manifest_path.is_file():
        raise CorpusError(f"{manifest_path}: manifest file does not exist")
    table = _read_manifest(manifest_path)
    dimensions = _dimensions(table, config, manifest_path)
    _validate_rows(table, manifest_path)
    _validate_audio_locations(table, manifest_path, _audio_folders(config, config_path, manifest_path))
    _validate_dimensions(table, dimensions, manifest_path)
    audio_checks = audio_checks or AudioChecks()
    files = [manifest_path.parent / relative for relative in table["audio"]]  # each row's file, made once
    warnings = _validate_audio(table, manifest_path, files, audio_checks) if check_audio else []
    audio_hashes = {}
    if check_audio:
        for relative, file in zip(table["audio"], files):
            content_hash = audio_checks.audio_hashes.get(file)
            if content_hash is not None:
                audio_hashes[relative] = content_hash
    return Corpus(
        name=name or str(config.get("name") or manifest_path.parent.name),
        manifest_path=manifest_path.resolve(),
        table=table.set_index("utterance_id", drop=False),
        dimensions=dimensions,
        description=str(config.get("description", "")).strip(),
        audio_warnings=tuple(warnings),
        audio_hashes=audio_hashes,
    )


def _read_corpus_config(config_path: Path) -> dict:
    config = read_config_mapping(
        config_path, CONFIG_KEYS, CorpusError, "a mapping with keys name, manifest, dimensions"
    )
    folders = config.get("audio_folders", [])
    if not isinstance(folders, list) or not all(isinstance(folder, str) and folder.strip() for folder in folders):
        raise CorpusError(
            f"{config_path}: audio_folders must be a list of folder paths (absolute, or relative to corpus.yaml)"
        )
    return config


def _read_manifest(manifest_path: Path) -> pd.DataFrame:
    suffix = manifest_path.suffix.lower()
    _check_utf8(manifest_path)
    try:
        if suffix == ".csv":
            table = pd.read_csv(manifest_path, dtype=str, keep_default_na=False)
        elif suffix in {".jsonl", ".json"}:
            table = pd.read_json(manifest_path, lines=True, dtype=False)
            table = table.astype(str)
        else:
            raise CorpusError(f"{manifest_path}: manifest must be .csv or .jsonl, not {suffix!r}")
    except (ValueError, pd.errors.ParserError) as exc:
        if isinstance(exc, CorpusError):
            raise
        raise CorpusError(f"{manifest_path}: manifest cannot be parsed ({exc})") from exc
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise CorpusError(f"{manifest_path}: missing column(s) {missing}; required: {list(REQUIRED_COLUMNS)}")
    return table.reset_index(drop=True)


def _check_utf8(manifest_path: Path) -> None:
    """A manifest is UTF-8: one that is not is refused naming the line and the column of the first bad byte."""
    try:
        data = manifest_path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{manifest_path}: manifest cannot be read ({exc})") from exc
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CorpusError(
            f"{manifest_path}: line {line}, column {column}: byte 0x{data[exc.start]:02x} is not UTF-8; "
            "save the manifest as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from exc


def _row_label(manifest_path: Path, index: int) -> str:
    line = index + 2 if manifest_path.suffix.lower() == ".csv" else index + 1
    return f"{manifest_path}, row {line}"


def _dimensions(table: pd.DataFrame, config: dict, manifest_path: Path) -> tuple[str, ...]:
    if "dimensions" in config:
        dimensions = config["dimensions"]
        if not isinstance(dimensions, list) or not all(isinstance(d, str) for d in dimensions):
            raise CorpusError(f"{manifest_path.parent / 'corpus.yaml'}: dimensions must be a list of column names")
        missing = [d for d in dimensions if d not in table.columns]
        if missing:
            raise CorpusError(f"{manifest_path}: dimension column(s) {missing} named in corpus.yaml are missing")
        return tuple(dimensions)
    dimensions = tuple(column for column in table.columns if column not in REQUIRED_COLUMNS)
    if not dimensions:
        raise CorpusError(
            f"{manifest_path}: no demographic dimension column (e.g. gender, accent) besides {list(REQUIRED_COLUMNS)}"
        )
    return dimensions


def _validate_rows(table: pd.DataFrame, manifest_path: Path) -> None:
    for column in ("utterance_id", "audio", "speaker_id", "content_id"):
        empty = table.index[table[column].str.strip() == ""]
        if len(empty):
            raise CorpusError(f"{_row_label(manifest_path, empty[0])}: empty {column}")
    duplicated = table.index[table["utterance_id"].duplicated()]
    if len(duplicated):
        index = duplicated[0]
        utterance_id = table.at[index, "utterance_id"]
        first = table.index[table["utterance_id"] == utterance_id][0]
        raise CorpusError(
            f"{_row_label(manifest_path, index)}: duplicate utterance_id {utterance_id!r} "
            f"(first at {_row_label(manifest_path, first).rsplit(', ', 1)[1]})"
        )


def _validate_dimensions(table: pd.DataFrame, dimensions: tuple[str, ...], manifest_path: Path) -> None:
    for dimension in dimensions:
        empty = table.index[table[dimension].str.strip() == ""]
        if len(empty):
            raise CorpusError(f"{_row_label(manifest_path, empty[0])}: empty {dimension} label")
        labels_per_speaker = table.groupby("speaker_id")[dimension].nunique()
        conflicting = labels_per_speaker[labels_per_speaker > 1]
        if len(conflicting):
            speaker = conflicting.index[0]
            rows = table.index[table["speaker_id"] == speaker]
            first_label = table.at[rows[0], dimension]
            clash = rows[table.loc[rows, dimension] != first_label][0]
            raise CorpusError(
                f"{_row_label(manifest_path, clash)}: speaker {speaker!r} has {dimension} "
                f"{table.at[clash, dimension]!r} here but {first_label!r} at "
                f"{_row_label(manifest_path, rows[0]).rsplit(', ', 1)[1]}"
            )
        speakers_per_group = table.groupby(dimension)["speaker_id"].nunique()
        if len(speakers_per_group) < MIN_GROUPS:
            raise CorpusError(
                f"{manifest_path}: dimension {dimension!r} has {len(speakers_per_group)} group(s) "
                f"{sorted(speakers_per_group.index)}; at least {MIN_GROUPS} are needed"
            )
        small = speakers_per_group[speakers_per_group < MIN_SPEAKERS_PER_GROUP]
        if len(small):
            group = small.index[0]
            row = table.index[table[dimension] == group][0]
            raise CorpusError(
                f"{_row_label(manifest_path, row)}: {dimension} group {group!r} has {int(small.iloc[0])} speaker(s); "
                f"at least {MIN_SPEAKERS_PER_GROUP} are needed for a speaker-level test"
            )


def _audio_folders(config: dict, config_path: Path | None, manifest_path: Path) -> tuple[Path, ...]:
    """The corpus folder (the manifest's) and the ``audio_folders`` of ``corpus.yaml``, absolute."""
    listed = [
        Path(os.path.normpath(config_path.parent.resolve() / folder)) for folder in config.get("audio_folders", [])
    ]
    return (manifest_path.resolve().parent, *listed)


def _validate_audio_locations(table: pd.DataFrame, manifest_path: Path, folders: tuple[Path, ...]) -> None:
    """Every ``audio`` path, normalised, lies in one of ``folders`` (absolute and normalised; the first is the
    corpus folder, which relative paths start from): compared as text, component by component."""
    root = str(folders[0])
    prefixes = [os.path.join(str(folder), "") for folder in folders]  # "/a/b/" (a root stays "/")
    for index, reference in table["audio"].items():
        location = os.path.normpath(os.path.join(root, reference))
        if not any(os.path.join(location, "").startswith(prefix) for prefix in prefixes):
            allowed = ", ".join(str(folder) for folder in folders)
            raise CorpusError(
                f"{_row_label(manifest_path, index)}: audio path {reference!r} lies outside the corpus folder ({allowed}); "
                f"list its folder under audio_folders in corpus.yaml to allow it"
            )


def _validate_audio(
    table: pd.DataFrame, manifest_path: Path, files: Sequence[Path], audio_checks: AudioChecks
) -> list[str]:
    """Decode every audio file (``files``, one per row; memoized by content); raise on the first unusable one,
    return the warnings."""
    places = (
        (
            _row_label(manifest_path, index),
            file,
            f"{_row_label(manifest_path, index).rsplit(', ', 1)[1]} ({relative})",
        )
        for (index, relative), file in zip(table["audio"].items(), files)
    )
    warnings = [f"{manifest_path}: {line}" for line in inspect_audio_files(places, audio_checks, CorpusError)]
    return warnings + shared_recordings(table, manifest_path, audio_checks.digests, files)


def shared_recordings(
    table: pd.DataFrame,
    manifest_path: Path,
    digests: Mapping[Path, str],
    files: Sequence[Path],
    shown: int = 5,
) -> list[str]:
    """A warning naming the rows whose recording is bit-identical to another speaker's (e.g. a synthetic corpus made
    twice with the same voice settings): the speaker-level permutation test rests on speakers being distinct voices,
    and such pairs make a voice-blind model look biased (issue 23: p < 0.05 in 10 of 20 cases with 14 pairs).
    ``files``: each row's audio file, whose content hash ``digests`` holds."""
    first_row: dict[str, int] = {}
    pairs = []
    for position, (file, speaker) in enumerate(zip(files, table["speaker_id"])):
        digest = digests.get(file)
        if digest is None:
            continue
        if digest not in first_row:
            first_row[digest] = position
        elif str(table["speaker_id"].iloc[first_row[digest]]) != str(speaker):
            pairs.append((first_row[digest], position))
    if not pairs:
        return []
    named = [
        f"{_row_label(manifest_path, second).rsplit(', ', 1)[1]} ({table['speaker_id'].iloc[second]}) = "
        f"{_row_label(manifest_path, first).rsplit(', ', 1)[1]} ({table['speaker_id'].iloc[first]})"
        for first, second in pairs[:shown]
    ]
    more = f" and {len(pairs) - shown} more" if len(pairs) > shown else ""
    return [
        f"{manifest_path}: {len(pairs)} recording(s) bit-identical to another speaker's: {'; '.join(named)}{more}; the "
        "speaker-level tests treat each speaker as a separate voice, so their p-values are not valid for this corpus: "
        "give each speaker recordings of their own"
    ]


def read_utterance_audio(corpus: Corpus, utterance_id: str) -> Audio:
    """The utterance's audio; a failure names the manifest row."""
    try:
        return corpus.audio(utterance_id)
    except AudioError as exc:
        row = int(corpus.table.index.get_loc(utterance_id))
        raise CorpusError(f"{_row_label(corpus.manifest_path, row)}: {exc}") from exc
