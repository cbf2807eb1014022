"""SD-QA (Faisal, Keshava, Alam & Anastasopoulos, Findings of EMNLP 2021), English part, as a BASIS item suite
with an ``asr`` set and a ``qa`` set on the dimension ``accent`` (BASIS-Bench §3.1 and Table 8: 100-WER
and spoken-QA accuracy per accent; the suite format: :mod:`harness.data.basis_suite`).

Layout read (the released repository, github.com/ffaisal93/SD-QA: ``README.md``, ``SD_QA_jsonl_format.md``,
``data_link_report.txt``, ``dev|test/eng/english.<split>.csv``, ``<split>/eng/<dialect>/metadata.csv`` and
``<split>/eng/<dialect>/english.<split>.<dialect>-<locale>.triples.jsonl``), below ``<split>/eng/``:

* ``english.<split>.csv``: one row per question, an unnamed pandas index, ``ID`` (the TyDi-QA
  ``example_id``, a signed 64-bit integer such as ``-7626086140492595775``), ``in XOR <split>``,
  ``english-gold`` (the question the speakers read) and one Google-ASR transcript column per
  ``<dialect>-<locale>`` (not used).
* ``<dialect>/metadata.csv`` per dialect region (``aus gbr ind_n ind_s irl kenya nga nzl phl usa zaf``): one
  row per recording with ``example_id, user_id, region, language, gender, age, device, lang_spoken,
  mother_tongue, audio_file``; the audio is ``<dialect>/wav_eng/<example_id>.wav``.
* ``<dialect>/english.<split>.<dialect>-<locale>.triples.jsonl`` (one or two per dialect, one per ASR locale):
  one JSON object a line with ``example_id``, ``question`` (the ASR transcript, not the text read),
  ``answers`` (every distinct gold span of the TyDi-QA annotation: minimal answers and whole passages,
  sorted), ``answer`` (the first of them, ``"-1"`` when there is none) and ``has_answer``. The TyDi-format
  ``*.jsonl.gz`` files and the ``.txt`` transcripts are not read.

Quirks handled: not every dialect recorded every question (kenya has 976 of the 1031 test questions) and a
metadata row may lack its wav: such rows are left out and counted in the suite description. Many questions
have no gold span (TyDi-QA null answers, ``has_answer: false``) and some ids are missing from one
locale's triples file, so gold answers are pooled over every triples file of the split by ``example_id``
(the gold side does not depend on the dialect); questions without any gold span stay in the ``asr`` set and
are left out of the ``qa`` set. A question has several gold spans: the QA judge reads one ``answer``, and the
rule judge (:func:`~harness.checks.basis_common.judges.rule_qa_judge`) counts an answer correct when it
contains that text as whole words, so ``answer`` is the shortest gold span (the annotators' minimal answer
when there is one, a whole passage would never be matched) and ``answers`` keeps all of them as a JSON list.

Speaker: ``user_id`` of ``metadata.csv`` (some are numbers, some such as ``AUS2907198``; several may be one
person's sessions), prefixed with the dialect (``aus-3819262``) so that one id reused in two regions cannot
carry two labels; the speaker is the bootstrap unit and groups with fewer than 2 speakers are left out. Every
question gets the ``id`` of its row in ``english.<split>.csv`` (0, 1, ...), shared by its recordings in every
dialect. Output: ``suite.yaml``, ``asr.csv``, ``qa.csv`` and ``speech/accent/<id:05d>_<speaker>.wav``, one
symbolic link per recording to the release's wav (nothing is copied). License: Apache-2.0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import pandas as pd

from harness.core.files import atomic_write_text
from harness.core.values import json_lines
from harness.data.basis_suite import MIN_SPEAKERS_PER_GROUP, load_suite
from harness.data.loaders._common import (
    LoaderError,
    csv_line,
    link_question_recordings,
    read_table,
    require_dir,
    testable_groups,
    write_suite_config,
)

NAME = "sd-qa"
DIMENSIONS = ("accent",)
PRODUCES = "suite"
DIMENSION = "accent"
QUESTION_ID = "ID"
GOLD_QUESTION = "english-gold"
_EXAMPLE_ID = re.compile(r"^-?\d+$")
_WORD = re.compile(r"\w")


def build(
    source: str | Path,
    output: str | Path,
    *,
    split: str = "test",
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a BASIS suite (``suite.yaml``: the ``sd-qa-asr`` and ``sd-qa-qa`` sets) into ``output``; returns it.

    ``source`` is the SD-QA checkout (the folder holding ``dev/`` and ``test/``); ``split`` is ``dev`` or
    ``test``. ``relative_audio`` makes the audio links relative (else absolute); the written suite is always
    loaded back, and ``check_audio`` also decodes every recording.
    """
    source, output = Path(source), Path(output)
    english = require_dir(source / split / "eng", f"SD-QA English {split} folder")
    questions = read_questions(english / f"english.{split}.csv")
    dialects = sorted(path.parent for path in english.glob("*/metadata.csv"))
    if not dialects:
        raise LoaderError(f"{english}: no <dialect>/metadata.csv (SD-QA dialect folders such as aus/, gbr/)")
    recordings = pd.concat([read_recordings(folder, questions) for folder in dialects], ignore_index=True)
    without_audio = recordings[~recordings["has_audio"]]
    recordings = recordings[recordings["has_audio"]]
    gold = gold_answers(sorted(english.glob("*/*.triples.jsonl")), english)

    asr, asr_dropped = testable_groups(recordings, DIMENSION)
    if asr.empty:
        raise LoaderError(
            f"{english}: no recording has its audio under <dialect>/wav_eng/ and an accent group of "
            f"{MIN_SPEAKERS_PER_GROUP}+ speakers"
        )
    answered = recordings[recordings["example_id"].isin(gold)]
    answered = answered.assign(
        answer=[min(gold[example], key=len) for example in answered["example_id"]],
        answers=[json.dumps(gold[example], ensure_ascii=False) for example in answered["example_id"]],
    )
    qa, qa_dropped = testable_groups(answered, DIMENSION)
    if qa.empty:
        raise LoaderError(f"{english}: no recorded question has a gold answer in a triples.jsonl file")

    output.mkdir(parents=True, exist_ok=True)
    link_question_recordings(output, DIMENSION, asr, ".wav", relative_audio)
    asr_columns = ["id", "speaker", DIMENSION, "transcript", "example_id"]
    qa_columns = ["id", "speaker", DIMENSION, "question", "answer", "answers", "example_id"]
    atomic_write_text(
        output / "asr.csv", asr.rename(columns={"question": "transcript"})[asr_columns].to_csv(index=False)
    )
    atomic_write_text(output / "qa.csv", qa[qa_columns].to_csv(index=False))
    sets = [
        {
            "name": "sd-qa-asr",
            "kind": "asr",
            "dimension": DIMENSION,
            "labels": sorted(asr[DIMENSION].unique()),
            "metadata": "asr.csv",
        },
        {
            "name": "sd-qa-qa",
            "kind": "qa",
            "dimension": DIMENSION,
            "labels": sorted(qa[DIMENSION].unique()),
            "metadata": "qa.csv",
        },
    ]
    unanswered = questions[~questions["example_id"].isin(gold)]
    description = (
        f"SD-QA English {split} read from {source.resolve()}. ASR: {_counts(asr)}"
        f"; {len(without_audio)} metadata rows without audio left out"
        + (f" (first: {', '.join(_first(without_audio))})" if len(without_audio) else "")
        + _dropped_note(asr_dropped)
        + f". QA: {_counts(qa)}; {len(unanswered)} of {len(questions)} questions have no gold answer (TyDi-QA null)"
        " and are left out"
        + _dropped_note(qa_dropped)
        + ". The gold answer is the shortest of the question's gold spans (all are in 'answers'). License: Apache-2.0."
    )
    write_suite_config(output, NAME, description, sets)
    load_suite(output, check_audio=check_audio)
    return output


def read_questions(path: Path) -> pd.DataFrame:
    """``english.<split>.csv`` as ``id`` (its row: 0, 1, ...), ``example_id`` and ``question`` (the text read)."""
    table = read_table(path, [QUESTION_ID, GOLD_QUESTION], "SD-QA question list")
    table = table.assign(example_id=table[QUESTION_ID].str.strip(), question=table[GOLD_QUESTION].str.strip())
    for index, example_id, question in zip(table.index, table["example_id"], table["question"]):
        if not _EXAMPLE_ID.match(example_id):
            raise LoaderError(f"{path}, line {csv_line(index)}: {QUESTION_ID} {example_id!r} is not a TyDi example id")
        if not question:
            raise LoaderError(f"{path}, line {csv_line(index)}: empty {GOLD_QUESTION!r} question")
    repeated = table.index[table["example_id"].duplicated()]
    if len(repeated):
        raise LoaderError(
            f"{path}, line {csv_line(repeated[0])}: question {table.at[repeated[0], 'example_id']} repeats"
        )
    return table.assign(id=range(len(table)))[["id", "example_id", "question"]]


def read_recordings(folder: Path, questions: pd.DataFrame) -> pd.DataFrame:
    """One dialect's ``metadata.csv`` joined to the questions: ``id, speaker, accent, question, example_id,
    audio, has_audio``."""
    path = folder / "metadata.csv"
    table = read_table(path, ["example_id", "user_id"], f"SD-QA {folder.name} metadata")
    known = questions.set_index("example_id")
    rows = []
    for index, example_id, user_id in zip(table.index, table["example_id"].str.strip(), table["user_id"].str.strip()):
        where = f"{path}, line {csv_line(index)}"
        if example_id not in known.index:
            raise LoaderError(f"{where}: example_id {example_id!r} is not a question of {folder.parent}")
        if not user_id or "/" in user_id or "\\" in user_id:
            raise LoaderError(f"{where}: user_id {user_id!r} is empty or contains a path separator")
        audio = folder / "wav_eng" / f"{example_id}.wav"
        speaker = f"{folder.name}-{user_id}"
        rows.append(
            (known.at[example_id, "id"], speaker, folder.name, known.at[example_id, "question"], example_id, audio)
        )
    recordings = pd.DataFrame(rows, columns=["id", "speaker", DIMENSION, "question", "example_id", "audio"])
    repeated = recordings.duplicated(["id", "speaker"])
    if repeated.any():
        raise LoaderError(
            f"{path}, line {csv_line(recordings.index[repeated][0])}: speaker {recordings['speaker'][repeated].iloc[0]}"
            " records this question twice"
        )
    return recordings.assign(has_audio=[audio.is_file() for audio in recordings["audio"]])


def gold_answers(paths: Iterable[Path], folder: Path) -> dict[str, list[str]]:
    """``example_id`` -> its distinct gold spans, pooled over the ``*.triples.jsonl`` files in the order met;
    a span without a letter or digit is dropped (the rule judge cannot match it), questions with none are absent."""
    paths = list(paths)
    if not paths:
        raise LoaderError(
            f"{folder}: no <dialect>/*.triples.jsonl (SD-QA's gold answers; an older checkout lacks them)"
        )
    gold: dict[str, list[str]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        not_json = partial(_not_a_json_object, path)
        for number, record in json_lines(text, not_json):
            if (
                not isinstance(record, dict)
                or "example_id" not in record
                or not isinstance(record.get("answers"), list)
            ):
                raise LoaderError(f"{path}, line {number}: expected an object with 'example_id' and an 'answers' list")
            spans = [str(span).strip() for span in record["answers"] if _WORD.search(str(span))]
            if spans:
                known = gold.setdefault(str(record["example_id"]), [])
                known.extend(span for span in spans if span not in known)
    return gold


def _not_a_json_object(path: Path, number: int, exc: json.JSONDecodeError) -> LoaderError:
    return LoaderError(f"{path}, line {number}: not a JSON object ({exc.msg})")


def _counts(table: pd.DataFrame) -> str:
    per_group = ", ".join(f"{label} {n}" for label, n in table.groupby(DIMENSION)["speaker"].nunique().items())
    return (
        f"{len(table)} recordings of {table['id'].nunique()} questions by {table['speaker'].nunique()} speakers "
        f"({per_group})"
    )


def _first(rows: pd.DataFrame) -> list[str]:
    return [f"{dialect}/wav_eng/{example}.wav" for dialect, example in zip(rows[DIMENSION][:3], rows["example_id"][:3])]


def _dropped_note(dropped: list[str]) -> str:
    return (
        f"; accents with fewer than {MIN_SPEAKERS_PER_GROUP} speakers left out: {', '.join(dropped)}" if dropped else ""
    )
