"""Spoken StereoSet (Lin, Chen & Lee, SLT 2024; BASIS-Bench §3.2 and Appendix A.1 build on it) as a BASIS
item suite of ``stereotype`` sets (the suite format: :mod:`harness.data.basis_suite`).

Layout read (the released repository, github.com/dlion168/spoken_stereoset): ``metadata/<dimension>_v<version>.csv``
(``gender_v1.0.csv``, ``age_v1.0.csv``) with the columns ``id, speaker, <dimension>, context, irrelevant,
stereotypical, anti-stereotypical, labels, annotators``, and the audio at
``speech/<dimension>/<id>_<speaker>.wav``. ``id`` is a zero-padded recording number (``00000``), unique per
recording: one context is recorded by several speakers under consecutive ids, and the continuations'
stereotypical/anti-stereotypical roles are swapped for the other group, which is the suite's convention.
``speaker`` is an Azure TTS voice (``en-US-AvaNeural``) or a cloned voice (``old_man``, ``Mason-HQ``);
labels are ``female``/``male`` for gender and ``elderly``/``young``/``child`` for age. ``labels`` and
``annotators`` (the crowd annotations, as Python literals) are not used.

Quirks handled: the set is not fully parallel (BASIS-Bench A.1.3): some metadata rows have no audio file
(e.g. gender ``00018``), and those rows are left out and counted in the suite description rather than
failing the load; contexts may end in a space (``"... otherwise "``), stripped. When a dimension has several
versions, the highest is read. Groups with fewer than 2 speakers are left out (the speaker is the
bootstrap unit).

Output: ``suite.yaml`` and ``<dimension>.csv`` per dimension in ``output``, and ``output/speech`` a symbolic
link to the release's ``speech/`` folder (the suite finds audio beside its CSVs; nothing is copied).
License: CC BY 4.0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from harness.core.files import atomic_write_text
from harness.data.basis_suite import STEREOTYPE_OPTIONS, load_suite
from harness.data.corpus import MIN_SPEAKERS_PER_GROUP
from harness.data.loaders._common import LoaderError, csv_line, read_table, require_dir, write_suite_config

NAME = "spoken-stereoset"
DIMENSIONS = ("gender", "age")
PRODUCES = "suite"
_METADATA_NAME = re.compile(r"^(?P<dimension>[a-z]+)_v(?P<version>\d+(?:\.\d+)*)\.csv$")


def metadata_files(source: Path) -> dict[str, Path]:
    """Dimension -> its metadata CSV of the highest version in ``source/metadata``."""
    folder = require_dir(source / "metadata", "Spoken StereoSet metadata folder")
    best: dict[str, tuple[tuple[int, ...], Path]] = {}
    for path in folder.glob("*.csv"):
        match = _METADATA_NAME.match(path.name)
        if match and match["dimension"] in DIMENSIONS:
            version = tuple(int(part) for part in match["version"].split("."))
            if match["dimension"] not in best or version > best[match["dimension"]][0]:
                best[match["dimension"]] = (version, path)
    if not best:
        raise LoaderError(f"{folder}: no <dimension>_v<version>.csv for {' or '.join(DIMENSIONS)}")
    return {dimension: path for dimension, (_, path) in sorted(best.items())}


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] | None = None,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a BASIS suite (``suite.yaml``, one stereotype set per dimension) into ``output``; returns it.

    ``relative_audio`` makes the ``speech`` link relative to ``output`` (else absolute); ``check_audio``
    loads the written suite with :func:`~harness.data.basis_suite.load_suite`, which checks every row and
    that its audio file exists.
    """
    source, output = Path(source), Path(output)
    files = metadata_files(source)
    chosen = list(files if dimensions is None else dimensions)
    if not chosen or set(chosen) - set(files):
        raise ValueError(f"Spoken StereoSet dimensions in {source / 'metadata'} are {list(files)}; got {chosen}")
    speech = require_dir(source / "speech", "Spoken StereoSet speech folder")
    output.mkdir(parents=True, exist_ok=True)
    sets, notes = [], []
    for dimension in chosen:
        table, note = _item_table(files[dimension], speech, dimension)
        atomic_write_text(output / f"{dimension}.csv", table.to_csv(index=False))
        labels = sorted(table[dimension].unique())
        sets.append(
            {
                "name": f"spoken-stereoset-{dimension}",
                "kind": "stereotype",
                "dimension": dimension,
                "labels": labels,
                "metadata": f"{dimension}.csv",
            }
        )
        notes.append(note)
    write_linked_suite(
        output, speech, relative_audio, NAME, f"Spoken StereoSet read from {source.resolve()}: ", notes, sets
    )
    if check_audio:
        load_suite(output)
    return output


def read_metadata(path: Path, dimension: str) -> pd.DataFrame:
    """The item columns of a release metadata CSV with every cell stripped, indexed by data row (so
    :func:`~harness.data.loaders._common.csv_line` of the index is the CSV line); an id that is not a
    recording number is an error naming its line."""
    columns = ["id", "speaker", dimension, "context", *STEREOTYPE_OPTIONS]
    table = read_table(path, columns, f"Spoken StereoSet {dimension} metadata")[columns]
    table = table.apply(lambda column: column.str.strip())
    bad_id = table.index[~table["id"].str.isdigit()]
    if len(bad_id):
        raise LoaderError(
            f"{path}, line {csv_line(bad_id[0])}: id {table.at[bad_id[0], 'id']!r} is not a recording number"
        )
    return table


def recording_path(speech: Path, dimension: str, record_id: str, speaker: str) -> Path:
    return speech / dimension / f"{int(record_id):05d}_{speaker}.wav"


def split_by_audio(table: pd.DataFrame, speech: Path, dimension: str) -> tuple[pd.DataFrame, list[str]]:
    """The rows whose recording is under ``speech/<dimension>``, and the ids of the rows without one."""
    has_audio = [
        recording_path(speech, dimension, record_id, speaker).is_file()
        for record_id, speaker in zip(table["id"], table["speaker"])
    ]
    without_audio = table.loc[[not found for found in has_audio], "id"].tolist()
    return table[has_audio], without_audio


def _item_table(path: Path, speech: Path, dimension: str) -> tuple[pd.DataFrame, str]:
    table, without_audio = split_by_audio(read_metadata(path, dimension), speech, dimension)
    speakers = table.groupby(dimension)["speaker"].nunique()
    small = sorted(speakers.index[speakers < MIN_SPEAKERS_PER_GROUP])
    table = table[~table[dimension].isin(small)]
    if table.empty:
        raise LoaderError(
            f"{path}: no row has its audio under {speech / dimension} and a group of {MIN_SPEAKERS_PER_GROUP}+ speakers"
        )
    note = (
        f"{dimension}: {len(table)} recordings of {table['context'].nunique()} contexts by {table['speaker'].nunique()} "
        f"voices ({', '.join(f'{label} {n}' for label, n in table.groupby(dimension)['speaker'].nunique().items())})"
        f" from {path.name}; {len(without_audio)} rows without audio left out"
        + (f" (first: {', '.join(without_audio[:5])})" if without_audio else "")
        + (f"; groups with fewer than {MIN_SPEAKERS_PER_GROUP} voices left out: {', '.join(small)}" if small else "")
        + "."
    )
    return table.reset_index(drop=True), note


def write_linked_suite(
    output: Path,
    speech: Path,
    relative_audio: bool,
    name: str,
    opening: str,
    notes: Sequence[str],
    sets: Sequence[Mapping],
    licence_note: str = "",
) -> None:
    """The end of a build from the Spoken StereoSet release: ``output/speech`` linked to the release's ``speech``
    folder (:func:`link_speech`), then the suite's ``suite.yaml`` with its ``sets``, described by ``opening``, the
    build's ``notes`` and the release's voices and licence (``licence_note`` added to it)."""
    link_speech(output / "speech", speech.resolve(), relative_audio)
    description = (
        opening + " ".join(notes) + f" Speakers are TTS or cloned voices, not people. License: CC BY 4.0{licence_note}."
    )
    write_suite_config(output, name, description, sets)


def link_speech(link: Path, target: Path, relative: bool) -> None:
    """``link`` -> ``target`` (a folder), replacing an older link; an existing real folder is an error."""
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        raise LoaderError(f"{link}: exists and is not a link to a Spoken StereoSet speech folder")
    try:
        link.symlink_to(
            os.path.relpath(target, link.parent.resolve()) if relative else target, target_is_directory=True
        )
    except OSError as exc:
        raise LoaderError(f"{link}: cannot link to {target} ({exc}); the suite needs speech/ beside its CSVs") from exc
