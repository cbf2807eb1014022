"""LibriSpeech (Panayotov et al. 2015): read audiobooks, speakers labelled F/M in ``SPEAKERS.TXT``.

Layout read: ``SPEAKERS.TXT`` (``;``-comment lines, then ``ID | SEX | SUBSET | MINUTES | NAME``; a name
may itself contain ``|``) and, anywhere below the root (``dev-clean/...`` or directly),
``<spk>/<chapter>/<spk>-<chapter>.trans.txt`` whose lines are ``<spk>-<chapter>-<utt> TEXT``, beside
``<spk>-<chapter>-<utt>.flac``. Dimension: ``gender``.

LibriSpeech is not content-controlled: every utterance has its own text, so ``content_id`` is the
utterance id, and group differences may come from what is said as well as from the voice (VIBE §II-D
assumes content is held fixed). Use it for breadth of voices, not as a substitute for CREMA-D.
License: CC BY 4.0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    at_most_per_speaker,
    audio_reference,
    check_audio_files,
    require_file,
    write_corpus,
)

NAME = "librispeech"
DIMENSIONS = ("gender",)
SEXES = {"F": "female", "M": "male"}
_UTTERANCE = re.compile(r"^(?P<speaker>\d+)-(?P<chapter>\d+)-(?P<index>\d+)$")


def read_speakers(path: Path) -> pd.DataFrame:
    """``SPEAKERS.TXT`` as a table indexed by speaker id with columns gender, subset, minutes, name."""
    require_file(path, "LibriSpeech speaker table")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        fields = [field.strip() for field in line.split("|", 4)]
        if len(fields) != 5 or not fields[0].isdigit():
            raise LoaderError(
                f"{path}, line {number}: expected 'ID | SEX | SUBSET | MINUTES | NAME', got {line.strip()!r}"
            )
        if fields[1] not in SEXES:
            raise LoaderError(f"{path}, line {number}: SEX {fields[1]!r} is not F or M")
        rows.append((fields[0], SEXES[fields[1]], fields[2], fields[3], fields[4]))
    table = pd.DataFrame(rows, columns=["speaker_id", "gender", "subset", "minutes", "name"])
    duplicated = table["speaker_id"].duplicated()
    if duplicated.any():
        raise LoaderError(f"{path}: speaker {table.loc[duplicated, 'speaker_id'].iloc[0]} is listed twice")
    return table.set_index("speaker_id")


def read_chapter(path: Path) -> list[tuple[str, str, str, Path]]:
    """(utterance id, speaker, chapter, flac path) and text of every line of a ``.trans.txt`` file."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        utterance, _, text = line.strip().partition(" ")
        match = _UTTERANCE.match(utterance)
        if not match or not text.strip():
            raise LoaderError(
                f"{path}, line {number}: expected '<speaker>-<chapter>-<utterance> TEXT', got {line.strip()[:60]!r}"
            )
        if f"{match['speaker']}-{match['chapter']}.trans.txt" != path.name:
            raise LoaderError(f"{path}, line {number}: utterance {utterance} does not belong to this chapter file")
        flac = path.parent / f"{utterance}.flac"
        if not flac.is_file():
            raise LoaderError(f"{path}, line {number}: audio {flac} does not exist")
        rows.append((utterance, match["speaker"], text.strip(), flac))
    return rows


def build(
    source: str | Path,
    output: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    max_utterances_per_speaker: int | None = None,
    seed: int = 0,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a LibriSpeech manifest and corpus.yaml into ``output``; returns ``output``.

    ``subsets``: keep speakers of these SPEAKERS.TXT subsets (``dev-clean``...); all found by default.
    ``max_utterances_per_speaker``: draw at most this many utterances per speaker with ``seed``.
    """
    source, output = Path(source), Path(output)
    speakers_path = source / "SPEAKERS.TXT"
    speakers = read_speakers(speakers_path)
    chapters = sorted(source.rglob("*.trans.txt"))
    if not chapters:
        raise LoaderError(f"{source}: no <speaker>-<chapter>.trans.txt file below this folder")
    rows = []
    for chapter in chapters:
        for utterance, speaker, text, flac in read_chapter(chapter):
            if speaker not in speakers.index:
                raise LoaderError(f"{chapter}: speaker {speaker} is not in {speakers_path}")
            rows.append((utterance, flac, speaker, text))
    table = pd.DataFrame(rows, columns=["utterance_id", "_path", "speaker_id", "transcript"]).join(
        speakers, on="speaker_id"
    )
    if subsets is not None:
        table = table[table["subset"].isin(list(subsets))]
    if max_utterances_per_speaker is not None:
        table = at_most_per_speaker(table, max_utterances_per_speaker, seed, speaker="speaker_id", order="utterance_id")
    if check_audio:
        check_audio_files(table["_path"])
    table = table.assign(
        audio=[audio_reference(path, output, relative_audio) for path in table["_path"]],
        content_id=table["utterance_id"],
    ).drop(columns=["_path", "name", "minutes"])
    description = (
        f"LibriSpeech read from {source.resolve()}: {len(table)} utterances of {table['speaker_id'].nunique()} speakers "
        f"(subsets {', '.join(sorted(table['subset'].unique()))}). Not content-controlled: every utterance has its own "
        "text (content_id = utterance_id). License: CC BY 4.0."
    )
    return write_corpus(
        output, table.reset_index(drop=True), name=NAME, dimensions=list(DIMENSIONS), description=description
    )
