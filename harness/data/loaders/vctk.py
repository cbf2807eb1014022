"""CSTR VCTK (Yamagishi, Veaux & MacDonald 2019, v0.92; Veaux et al. 2012, v0.80): about 110 speakers of
English with various accents, each reading about 400 sentences.

Layout read: ``speaker-info.txt``, ``txt/<spk>/<spk>_<nnn>.txt`` and the audio of either release:
``wav48_silence_trimmed/<spk>/<spk>_<nnn>_mic1.flac`` (and ``_mic2``; v0.92) or
``wav48/<spk>/<spk>_<nnn>.wav`` (v0.80). ``speaker-info.txt`` is whitespace-aligned under the header
``ID  AGE  GENDER  ACCENTS  REGION COMMENTS`` (v0.92; v0.80 stops at ``REGION`` and writes ids without the
``p``, ``225`` for ``p225``): the region may have several words or none, and a comment in parentheses may
close the line (v0.92: ``p280 ... (mic2 files unavailable)``, ``p315 ... (text missing)``).

Quirks handled: p315 has audio but no ``txt/`` folder, and any recording without its text file is left
out (counted in the description); a speaker whose audio folder lacks the requested microphone (p280 for
``mic2``) or has no line in ``speaker-info.txt`` is left out and named. ``content_id`` is a hash of the
normalized text (:func:`~harness.data.loaders._common.content_key`): the rainbow passage and the speech
accent archive paragraph (recordings 001-024 or so) are read by every speaker, the newspaper sentences by
few, so ``min_readers`` keeps only sentences read by at least that many selected speakers for a
content-controlled corpus. Dimensions: ``gender`` (F/M) and ``accent`` (the ACCENTS column, lower-cased),
``age_group`` on request (ages from AGE, ``age_edges``); groups with fewer than 2 speakers are dropped
(e.g. the single Welsh speaker). Sources: the v0.80 README and speaker-info.txt lines quoted in public
VCTK recipes; the v0.92 layout as the datashare release unpacks. License: CC BY 4.0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    age_group,
    content_key,
    dropped_groups_note,
    require_dir,
    require_file,
    testable_rows_with_audio,
    write_corpus,
)

NAME = "vctk"
DIMENSIONS = ("gender", "accent", "age_group")
DEFAULT_DIMENSIONS = ("gender", "accent")
DEFAULT_AGE_EDGES = (23, 27)
SEXES = {"F": "female", "M": "male"}
MICROPHONES = ("mic1", "mic2")
AUDIO_FOLDERS = ("wav48_silence_trimmed", "wav48")
_SPEAKER_LINE = re.compile(
    r"^(?P<id>[ps]?\d+)\s+(?P<age>\d+)\s+(?P<gender>\S+)\s+(?P<accent>\S+)\s*(?P<region>[^(]*?)\s*(?:\((?P<comment>[^)]*)\))?\s*$"
)
_RECORDING = re.compile(r"^(?P<speaker>[ps]\d+)_(?P<number>\d+)(?:_(?P<mic>mic\d))?$")


def read_speaker_info(path: Path) -> pd.DataFrame:
    """``speaker-info.txt`` indexed by speaker id (``p225``) with gender, age, accent, region and comment."""
    require_file(path, "VCTK speaker-info.txt")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip() or line.split()[0].upper() == "ID":
            continue
        match = _SPEAKER_LINE.match(line.strip())
        if not match:
            raise LoaderError(
                f"{path}, line {number}: expected 'ID AGE GENDER ACCENTS [REGION] [(COMMENT)]', got {line.strip()!r}"
            )
        if match["gender"] not in SEXES:
            raise LoaderError(f"{path}, line {number}: GENDER {match['gender']!r} is not F or M")
        speaker = match["id"] if match["id"][0] in "ps" else f"p{match['id']}"
        rows.append(
            (
                speaker,
                SEXES[match["gender"]],
                int(match["age"]),
                match["accent"].lower(),
                " ".join(match["region"].split()),
                (match["comment"] or "").strip(),
            )
        )
    table = pd.DataFrame(rows, columns=["speaker_id", "gender", "age", "accent", "region", "comment"])
    if table.empty:
        raise LoaderError(f"{path}: no speaker line")
    duplicated = table["speaker_id"].duplicated()
    if duplicated.any():
        raise LoaderError(f"{path}: speaker {table.loc[duplicated, 'speaker_id'].iloc[0]} is listed twice")
    return table.set_index("speaker_id")


def audio_folder(source: Path) -> Path:
    for name in AUDIO_FOLDERS:
        if (source / name).is_dir():
            return source / name
    raise LoaderError(f"{source}: no VCTK audio folder (looked for {', '.join(AUDIO_FOLDERS)})")


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] = DEFAULT_DIMENSIONS,
    mic: str = "mic1",
    min_readers: int = 1,
    age_edges: Sequence[int] = DEFAULT_AGE_EDGES,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a VCTK manifest and corpus.yaml into ``output``; returns ``output``.

    ``mic``: the v0.92 microphone to use (v0.80 has one). ``min_readers``: keep sentences read by at least
    this many selected speakers (1: all).
    """
    source, output = Path(source), Path(output)
    unknown = sorted(set(dimensions) - set(DIMENSIONS))
    if unknown or not dimensions:
        raise ValueError(f"VCTK dimensions must come from {list(DIMENSIONS)}; got {list(dimensions)}")
    if mic not in MICROPHONES:
        raise ValueError(f"mic must be one of {list(MICROPHONES)}, got {mic!r}")
    speakers = read_speaker_info(source / "speaker-info.txt")
    audio_root = audio_folder(source)
    text_root = require_dir(source / "txt", "VCTK transcript folder")

    rows, without_text, unlisted, without_mic = [], 0, [], []
    for folder in sorted(path for path in audio_root.iterdir() if path.is_dir()):
        recordings = _speaker_recordings(folder, mic)
        if folder.name not in speakers.index:
            unlisted.append(folder.name)
            continue
        if not recordings:
            without_mic.append(folder.name)
            continue
        for stem, audio in recordings:
            text_path = text_root / folder.name / f"{stem}.txt"
            text = (
                " ".join(text_path.read_text(encoding="utf-8", errors="replace").split()) if text_path.is_file() else ""
            )
            if not text:
                without_text += 1
                continue
            rows.append((stem, audio, folder.name, content_key(text), text))
    if not rows:
        raise LoaderError(f"{audio_root}: no recording with a transcript under {text_root}")
    table = pd.DataFrame(rows, columns=["utterance_id", "_path", "speaker_id", "content_id", "transcript"])
    table = table.join(speakers[["gender", "accent", "age", "region"]], on="speaker_id")
    table["age_group"] = age_group(table["age"].to_numpy(), age_edges)
    table["age"] = table["age"].astype(str)
    readers = table.groupby("content_id")["speaker_id"].transform("nunique")
    table = table[readers >= min_readers]
    table, dropped = testable_rows_with_audio(
        table, list(dimensions), output, relative_audio=relative_audio, check_audio=check_audio
    )
    left_out = "".join(
        f" Left out, {why}: {', '.join(names)}."
        for why, names in (("not in speaker-info.txt", unlisted), (f"no {mic} audio", without_mic))
        if names
    )
    description = (
        f"VCTK read from {source.resolve()} ({audio_root.name}, {mic}): {len(table)} recordings of "
        f"{table['speaker_id'].nunique()} speakers; {without_text} recordings without a text file left out "
        f"(p315 has none); sentences read by at least {min_readers} speaker(s)."
        + left_out
        + dropped_groups_note(dropped)
        + (
            " Content-controlled only as far as min_readers makes it."
            if min_readers > 1
            else " Not content-controlled: most newspaper sentences are read by one speaker."
        )
        + " License: CC BY 4.0."
    )
    return write_corpus(
        output, table.reset_index(drop=True), name=NAME, dimensions=list(dimensions), description=description
    )


def _speaker_recordings(folder: Path, mic: str) -> list[tuple[str, Path]]:
    """(``<spk>_<nnn>``, audio path) of one speaker's folder, for ``mic`` where the files name microphones."""
    found = []
    for path in sorted(folder.iterdir()):
        match = _RECORDING.match(path.stem)
        if path.suffix.lower() not in {".wav", ".flac"} or not match or match["speaker"] != folder.name:
            continue
        if match["mic"] is None or match["mic"] == mic:
            found.append((f"{match['speaker']}_{match['number']}", path))
    return found
