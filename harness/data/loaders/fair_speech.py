"""Fair-Speech (Veliche et al. 2024, Meta's "speech fairness dataset"): about 26.5K voice commands recorded
by 593 paid participants in the United States, with self-reported demographics.

Layout read: a metadata TSV at the top of the unpacked folder (the download names it
``downloaded_file.tsv``; any single ``*.tsv`` with a ``hash_name`` column is taken) with the columns
``hash_name, transcription, age, gender, first_language, ethnicity`` and, in most copies,
``socioeconomic_bkgd``; audio at ``asr_fairness_audio/<hash_name>.wav`` (or ``audio/``). Age is a
self-reported range written with spaces (``18 - 22``, ``23 - 30``, ``31 - 45``, ``46 - 65``), read as
``18-22``...; gender ``female``/``male``; ``first_language`` one of about 30 languages; ``ethnicity`` seven
census-style groups; ``socioeconomic_bkgd`` ``Low``/``Medium``/``Affluent``. Sources: the paper's abstract
(arXiv 2408.12734: age, gender, ethnicity, geographic variation, native English speaker) and public
audits of the released TSV (26,471 rows, 7 columns, ``hash_name`` joining ``asr_fairness_audio/``, a few
macOS ``._*.wav`` files beside the audio, which are ignored since audio is found by ``hash_name``). The
released TSV carries no geographic column, so no region dimension is written.

**No speaker id.** The release does not say which participant recorded which utterance, so every
utterance is its own ``speaker_id`` (``hash_name``): the gate's speaker-level permutations and bootstraps
then resample utterances, and since each participant recorded about 45 of them, its p-values and
intervals are optimistic. ``content_id`` is a hash of the normalized transcription (commands repeat).

Dimensions: ``gender``, ``age``, ``ethnicity``, ``first_language`` (``english`` or ``other``, the paper's
native-English split; the reported language is kept as ``first_language_reported``) and ``socioeconomic``
where the column exists. License: Meta's Fair-Speech terms (no redistribution).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    content_key,
    csv_line,
    dropped_groups_note,
    read_table,
    testable_rows_with_audio,
    write_corpus,
)

NAME = "fair-speech"
DIMENSIONS = ("gender", "age", "ethnicity", "first_language", "socioeconomic")
REQUIRED_COLUMNS = ("hash_name", "transcription", "age", "gender", "first_language", "ethnicity")
SOCIOECONOMIC_COLUMN = "socioeconomic_bkgd"
AUDIO_FOLDERS = ("asr_fairness_audio", "audio")
ENGLISH = "english"


def metadata_file(source: Path) -> Path:
    """The one ``*.tsv`` at the top of ``source`` whose header has ``hash_name``."""
    candidates = [path for path in sorted(source.glob("*.tsv")) if "hash_name" in _header(path)]
    if len(candidates) != 1:
        found = f"found {[path.name for path in candidates]}" if candidates else "found none"
        raise LoaderError(f"{source}: expected one Fair-Speech metadata .tsv with a hash_name column, {found}")
    return candidates[0]


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] | None = None,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a Fair-Speech manifest and corpus.yaml into ``output``; returns ``output``.

    ``dimensions``: default every dimension the metadata has (``socioeconomic`` only where present).
    """
    source, output = Path(source), Path(output)
    metadata_path = metadata_file(source)
    metadata = read_table(metadata_path, REQUIRED_COLUMNS, "Fair-Speech metadata", sep="\t")
    available = [d for d in DIMENSIONS if d != "socioeconomic" or SOCIOECONOMIC_COLUMN in metadata.columns]
    dimensions = list(available if dimensions is None else dimensions)
    if not dimensions or set(dimensions) - set(available):
        raise ValueError(f"Fair-Speech dimensions of {metadata_path} must come from {available}; got {dimensions}")
    audio_root = next((source / name for name in AUDIO_FOLDERS if (source / name).is_dir()), None)
    if audio_root is None:
        raise LoaderError(f"{source}: no Fair-Speech audio folder (looked for {', '.join(AUDIO_FOLDERS)})")

    for column in (*REQUIRED_COLUMNS, *([SOCIOECONOMIC_COLUMN] if SOCIOECONOMIC_COLUMN in metadata.columns else [])):
        metadata[column] = metadata[column].str.strip()
        empty = metadata.index[metadata[column] == ""]
        if len(empty) and (column in ("hash_name", "transcription") or _dimension_of(column) in dimensions):
            raise LoaderError(f"{metadata_path}, line {csv_line(empty[0])}: empty {column}")
    duplicated = metadata.index[metadata["hash_name"].duplicated()]
    if len(duplicated):
        raise LoaderError(
            f"{metadata_path}, line {csv_line(duplicated[0])}: hash_name {metadata.at[duplicated[0], 'hash_name']!r} appears twice"
        )

    paths = [audio_root / f"{name}.wav" for name in metadata["hash_name"]]
    table = pd.DataFrame(
        {
            "utterance_id": metadata["hash_name"],
            "_path": paths,
            "speaker_id": metadata["hash_name"],
            "content_id": metadata["transcription"].map(content_key),
            "transcript": metadata["transcription"],
            "gender": metadata["gender"].str.lower(),
            "age": metadata["age"].str.replace(r"\s*-\s*", "-", regex=True),
            "ethnicity": metadata["ethnicity"],
            "first_language": [
                ENGLISH if language.lower() == ENGLISH else "other" for language in metadata["first_language"]
            ],
            "first_language_reported": metadata["first_language"],
        }
    )
    if SOCIOECONOMIC_COLUMN in metadata.columns:
        table["socioeconomic"] = metadata[SOCIOECONOMIC_COLUMN].str.lower()
    missing = [index for index, path in enumerate(paths) if not path.is_file()]
    if missing:
        raise LoaderError(
            f"{metadata_path}, line {csv_line(missing[0])}: audio {paths[missing[0]]} does not exist "
            f"({len(missing)} rows lack their audio)"
        )
    table, dropped = testable_rows_with_audio(
        table, dimensions, output, relative_audio=relative_audio, check_audio=check_audio
    )
    description = (
        f"Fair-Speech read from {source.resolve()}: {len(table)} voice commands, self-reported "
        f"{', '.join(dimensions)}. The release has no speaker id: every utterance is its own speaker_id, so "
        "speaker-level tests resample utterances and their p-values and intervals are optimistic (a participant "
        "recorded about 45 commands)." + dropped_groups_note(dropped) + " License: Meta's Fair-Speech terms."
    )
    return write_corpus(output, table.reset_index(drop=True), name=NAME, dimensions=dimensions, description=description)


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return handle.readline().rstrip("\r\n").split("\t")


def _dimension_of(column: str) -> str:
    return "socioeconomic" if column == SOCIOECONOMIC_COLUMN else column
