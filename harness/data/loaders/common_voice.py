"""Mozilla Common Voice (Ardila et al. 2020): crowd-read sentences, with self-reported gender, age and accent
in each contributor's profile.

Layout read: one language folder of a release (``cv-corpus-<version>/<locale>/``) with ``validated.tsv``
(tab-separated, unquoted: a sentence may hold a bare ``"``) and ``clips/<path>`` (MP3). One manifest row per
kept clip: ``utterance_id`` = the clip's file stem, ``speaker_id`` = ``client_id``, ``transcript`` =
``sentence``, ``content_id`` = ``sentence_id`` where the release has it, else a hash of the normalized
sentence (:func:`~harness.data.loaders._common.content_key`), so two readings of one sentence share it.

The releases spell the columns differently, and :data:`COLUMN_SPELLINGS` maps them: ``accent`` up to v7
and in the Hugging Face exports, ``accents`` from v8 (free text; a contributor may list several, joined by
``|``); ``sentence_id`` only from v17. Gender is ``male``/``female``/``other`` up to v16 and
``male_masculine``/``female_feminine``/``intersex``/``transgender``/``non-binary``/``do_not_wish_to_say``
from v17: the first two are read as ``male``/``female``, the others kept as written. Age is a decade
(``teens`` ... ``nineties``; the files spell ``fourties``, read as ``forties``).
Sources: the column lists of the ``validated`` splits on the Hugging Face Hub (common_voice_13_0:
``accents, variant``; common_voice_17_0 exports: ``accent``), and v17+ users' scripts mapping
``male_masculine``/``female_feminine`` and the ``fourties`` spelling.

Selection: a clip needs every requested dimension's label; a contributor whose clips disagree on a label
(the profile changed between recordings) or lists several accents is left out of that selection and
counted; contributors with fewer than ``min_clips_per_speaker`` clips are left out, and at most
``max_clips_per_speaker`` are drawn with ``seed`` (a few contributors read thousands of clips); finally,
groups with fewer than 2 contributors are dropped. Dimensions: ``gender`` and ``age`` by default,
``accent`` on request (most contributors leave it empty). Not content-controlled: contributors read
mostly different sentences. License: CC0.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    at_most_per_speaker,
    content_key,
    dropped_groups_note,
    read_table,
    require_dir,
    testable_rows_with_audio,
    write_corpus,
)

NAME = "common-voice"
DIMENSIONS = ("gender", "age", "accent")
DEFAULT_DIMENSIONS = ("gender", "age")
# Our column name -> the spellings the releases use, most recent first.
COLUMN_SPELLINGS: dict[str, tuple[str, ...]] = {
    "client_id": ("client_id",),
    "path": ("path",),
    "sentence": ("sentence",),
    "gender": ("gender",),
    "age": ("age",),
    "accent": ("accents", "accent"),
}
GENDERS = {"male_masculine": "male", "female_feminine": "female"}
AGES = {"fourties": "forties"}
ACCENT_SEPARATOR = "|"


def read_validated(path: Path) -> pd.DataFrame:
    """``validated.tsv`` with its columns renamed to :data:`COLUMN_SPELLINGS`' keys (plus ``sentence_id``
    when present); labels stripped and lower-cased, gender and age spellings unified."""
    table = read_table(
        path, ("client_id", "path", "sentence"), "Common Voice validated.tsv", sep="\t", quoting=csv.QUOTE_NONE
    )
    renamed = {}
    for ours, spellings in COLUMN_SPELLINGS.items():
        found = [spelling for spelling in spellings if spelling in table.columns]
        if not found:
            raise LoaderError(
                f"{path}: no {ours!r} column (looked for {', '.join(spellings)}); it has {list(table.columns)}"
            )
        renamed[found[0]] = ours
    table = table.rename(columns=renamed)
    for column in ("gender", "age", "accent"):
        table[column] = table[column].str.strip()
    table["accent"] = table["accent"].str.lower()
    table["gender"] = table["gender"].str.lower().replace(GENDERS)
    table["age"] = table["age"].str.lower().replace(AGES)
    return table


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] = DEFAULT_DIMENSIONS,
    min_clips_per_speaker: int = 1,
    max_clips_per_speaker: int | None = None,
    seed: int = 0,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a Common Voice manifest and corpus.yaml into ``output``; returns ``output``.

    ``source`` is one locale folder holding ``validated.tsv`` and ``clips/``.
    """
    source, output = Path(source), Path(output)
    unknown = sorted(set(dimensions) - set(DIMENSIONS))
    if unknown or not dimensions:
        raise ValueError(f"Common Voice dimensions must come from {list(DIMENSIONS)}; got {list(dimensions)}")
    if min_clips_per_speaker < 1 or (
        max_clips_per_speaker is not None and max_clips_per_speaker < min_clips_per_speaker
    ):
        raise ValueError("need 1 <= min_clips_per_speaker <= max_clips_per_speaker")
    table = read_validated(source / "validated.tsv")
    clips_dir = require_dir(source / "clips", "Common Voice clips folder")
    dimensions = list(dimensions)

    labelled = table[(table[dimensions] != "").all(axis=1)]
    if "accent" in dimensions:
        labelled = labelled[~labelled["accent"].str.contains(ACCENT_SEPARATOR, regex=False)]
    labels_per_speaker = labelled.groupby("client_id")[dimensions].nunique()
    inconsistent = labels_per_speaker.index[(labels_per_speaker > 1).any(axis=1)]
    labelled = labelled[~labelled["client_id"].isin(inconsistent)]
    clips_per_speaker = labelled.groupby("client_id").size()
    kept = clips_per_speaker.index[clips_per_speaker >= min_clips_per_speaker]
    labelled = labelled[labelled["client_id"].isin(kept)]
    if max_clips_per_speaker is not None:
        labelled = at_most_per_speaker(labelled, max_clips_per_speaker, seed, speaker="client_id", order="path")

    frame = pd.DataFrame(
        {
            "utterance_id": [Path(name).stem for name in labelled["path"]],
            "_path": [clips_dir / name for name in labelled["path"]],
            "speaker_id": labelled["client_id"].to_numpy(),
            "content_id": (
                labelled["sentence_id"] if "sentence_id" in labelled.columns else labelled["sentence"].map(content_key)
            ).to_numpy(),
            "transcript": labelled["sentence"].str.strip().to_numpy(),
            **{dimension: labelled[dimension].to_numpy() for dimension in dimensions},
        }
    )
    frame, dropped = testable_rows_with_audio(
        frame, dimensions, output, relative_audio=relative_audio, check_audio=check_audio
    )
    description = (
        f"Common Voice read from {source.resolve()}: {len(frame)} validated clips of {frame['speaker_id'].nunique()} "
        f"contributors with a self-reported {', '.join(dimensions)} (of {len(table)} validated clips); "
        f"{len(inconsistent)} contributors left out for labels that change between clips or several accents, "
        f"at least {min_clips_per_speaker} and at most {max_clips_per_speaker or 'all'} clips per contributor."
        + dropped_groups_note(dropped)
        + " Not content-controlled: contributors read mostly different sentences. License: CC0."
    )
    return write_corpus(output, frame.reset_index(drop=True), name=NAME, dimensions=dimensions, description=description)
