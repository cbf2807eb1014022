"""LibriSQA Part I (Zhao, Jiang, Liu, Wang & Wang, IEEE TAI 2024) as a BASIS item suite with one ``qa`` set on
the dimension ``gender`` (BASIS-Bench §3.1, Table 8 "LibriSQA Part I"; the suite format:
:mod:`harness.data.basis_suite`).

Layout read: github.com/ZihanZhaoSJTU/LibriSQA (``README.md``: the speech is LibriSpeech's ``test-clean`` and
``train-clean-360``, the metafiles are on the Hugging Face hub) and the hub dataset ``ZihanZhao/LibriSQA``
(its ``README.md``): ``LibriSQA-PartI/LibriSQA-PartI-<split>.json`` (``train``, ``test``), a JSON list of objects with ``speech_path``, ``question``, ``answer`` (one
free-form reference answer), ``text`` (the LibriSpeech transcript) and ``duration``. Part II (multiple
choice) is not read. Beside it, LibriSpeech as its tarballs unpack, ``LibriSpeech/SPEAKERS.TXT`` and
``LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac``, read with
:func:`harness.data.loaders.librispeech.read_speakers`.

Quirks handled: ``speech_path`` names a ``.wav`` file while LibriSpeech ships ``.flac``, and its leading
folders depend on where the authors unpacked LibriSpeech, so only its file name is used: the utterance id
``<speaker>-<chapter>-<utterance>``, looked up among the ``.flac`` files below the LibriSpeech folder. Entries
whose utterance is not there (a subset not unpacked) are left out and counted in the suite description. The
reference answers are whole sentences, which the offline rule judge (the gold text as whole words of the
answer) seldom finds verbatim; the paper scores them with an LLM judge (``--basis-judge``).

Speaker: the LibriSpeech speaker id of the utterance, labelled ``female``/``male`` from ``SPEAKERS.TXT``; groups
with fewer than 2 speakers are left out (the speaker is the bootstrap unit). ``id`` is the entry's position in
the JSON list. Output: ``suite.yaml``, ``qa.csv`` (with ``utterance`` and ``passage``, the transcript, beside
the required columns) and ``speech/gender/<id:05d>_<speaker>.flac``, one symbolic link per recording to the
LibriSpeech file (nothing is copied). License: LibriSpeech audio CC BY 4.0; the LibriSQA text has no stated
license (BASIS-Bench C.2), so it is not redistributed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from harness.core.files import atomic_write_text
from harness.data.basis_suite import MIN_SPEAKERS_PER_GROUP, load_suite
from harness.data.loaders._common import (
    LoaderError,
    link_question_recordings,
    require_dir,
    require_file,
    testable_groups,
    write_suite_config,
)
from harness.data.loaders.librispeech import read_speakers

NAME = "librisqa"
DIMENSIONS = ("gender",)
PRODUCES = "suite"
DIMENSION = "gender"
REQUIRED_KEYS = ("speech_path", "question", "answer")
_UTTERANCE = re.compile(r"^(?P<speaker>\d+)-(?P<chapter>\d+)-(?P<index>\d+)$")


def build(
    source: str | Path,
    output: str | Path,
    *,
    split: str = "test",
    librispeech: str | Path | None = None,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a BASIS suite (``suite.yaml``: the ``librisqa`` qa set) into ``output``; returns it.

    ``source`` holds ``LibriSQA-PartI/LibriSQA-PartI-<split>.json`` (or that file directly) and, unless
    ``librispeech`` names it elsewhere, the unpacked ``LibriSpeech/`` folder. ``relative_audio`` makes the
    audio links relative (else absolute); the written suite is always loaded back, and ``check_audio`` also
    decodes every recording.
    """
    source, output = Path(source), Path(output)
    metafile = part_one_file(source, split)
    corpus = require_dir(Path(librispeech) if librispeech is not None else source / "LibriSpeech", "LibriSpeech folder")
    speakers = read_speakers(corpus / "SPEAKERS.TXT")
    audio_files = {path.stem: path for path in corpus.rglob("*.flac")}
    entries = read_entries(metafile)
    unknown = entries.loc[~entries["speaker"].isin(speakers.index)]
    if len(unknown):
        raise LoaderError(
            f"{metafile}, entry {unknown['id'].iloc[0]}: speaker {unknown['speaker'].iloc[0]} is not in "
            f"{corpus / 'SPEAKERS.TXT'}"
        )
    entries = entries.assign(
        gender=entries["speaker"].map(speakers["gender"]), audio=entries["utterance"].map(audio_files)
    )
    without_audio = entries[entries["audio"].isna()]
    table, dropped = testable_groups(entries[entries["audio"].notna()], DIMENSION)
    if table.empty:
        raise LoaderError(
            f"{metafile}: no entry has its utterance's .flac below {corpus} and a gender group of "
            f"{MIN_SPEAKERS_PER_GROUP}+ speakers"
        )

    output.mkdir(parents=True, exist_ok=True)
    link_question_recordings(output, DIMENSION, table, ".flac", relative_audio)
    columns = ["id", "speaker", DIMENSION, "question", "answer", "utterance", "passage"]
    atomic_write_text(output / "qa.csv", table[columns].to_csv(index=False))
    per_group = ", ".join(f"{label} {n}" for label, n in table.groupby(DIMENSION)["speaker"].nunique().items())
    description = (
        f"LibriSQA Part I {split} read from {metafile.resolve()} with LibriSpeech from {corpus.resolve()}: "
        f"{len(table)} questions on {table['utterance'].nunique()} utterances by {table['speaker'].nunique()} "
        f"speakers ({per_group}); {len(without_audio)} entries whose utterance is not below the LibriSpeech folder "
        "left out"
        + (f" (first: {', '.join(without_audio['utterance'][:3])})" if len(without_audio) else "")
        + (
            f"; genders with fewer than {MIN_SPEAKERS_PER_GROUP} speakers left out: {', '.join(dropped)}"
            if dropped
            else ""
        )
        + ". Reference answers are free-form sentences: use an LLM judge (--basis-judge). "
        "License: LibriSpeech CC BY 4.0; LibriSQA text unlicensed, not redistributed."
    )
    entry = {
        "name": NAME,
        "kind": "qa",
        "dimension": DIMENSION,
        "labels": sorted(table[DIMENSION].unique()),
        "metadata": "qa.csv",
    }
    write_suite_config(output, NAME, description, [entry])
    load_suite(output, check_audio=check_audio)
    return output


def part_one_file(source: Path, split: str) -> Path:
    """``LibriSQA-PartI-<split>.json`` in ``source/LibriSQA-PartI/`` (the hub layout) or in ``source``."""
    name = f"LibriSQA-PartI-{split}.json"
    for candidate in (source / "LibriSQA-PartI" / name, source / name):
        if candidate.is_file():
            return candidate
    return require_file(source / "LibriSQA-PartI" / name, "LibriSQA Part I metafile")


def read_entries(path: Path) -> pd.DataFrame:
    """The metafile's entries as ``id`` (position in the list), ``speaker``, ``utterance``, ``question``,
    ``answer`` and ``passage``; errors name the file and the entry."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LoaderError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(entries, list) or not entries:
        raise LoaderError(f"{path}: expected a non-empty JSON list of LibriSQA entries")
    rows = []
    for index, entry in enumerate(entries):
        where = f"{path}, entry {index}"
        if not isinstance(entry, dict):
            raise LoaderError(f"{where}: expected an object with {', '.join(REQUIRED_KEYS)}")
        missing = [key for key in REQUIRED_KEYS if not str(entry.get(key) or "").strip()]
        if missing:
            raise LoaderError(f"{where}: missing or empty {missing}; an entry has {', '.join(REQUIRED_KEYS)}")
        utterance = Path(str(entry["speech_path"]).strip().replace("\\", "/")).stem
        match = _UTTERANCE.match(utterance)
        if not match:
            raise LoaderError(
                f"{where}: speech_path {entry['speech_path']!r} does not end in a LibriSpeech "
                "<speaker>-<chapter>-<utterance> file name"
            )
        rows.append(
            (
                index,
                match["speaker"],
                utterance,
                str(entry["question"]).strip(),
                str(entry["answer"]).strip(),
                str(entry.get("text") or "").strip(),
            )
        )
    return pd.DataFrame(rows, columns=["id", "speaker", "utterance", "question", "answer", "passage"])
