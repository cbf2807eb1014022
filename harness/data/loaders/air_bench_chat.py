"""AIR-Bench-Chat (Yang et al. 2024, "AIR-Bench: benchmarking large audio-language models via generative
comprehension", ACL 2024): open-ended questions about audio, each with a reference answer, scored by an LLM
judge. The semantic-aware mixed-effects paper (§V-A, Table V) evaluates the speech items that carry a
speaker-gender annotation, scored 1-10 by a Llama-3 70B judge, and has no speaker row since the release has
no speaker id.

Layout read (``Chat/`` of the Hugging Face dataset ``qyang1021/AIR-Bench-Dataset``; ``source`` is that
folder or the dataset root holding it): ``Chat_meta.json``, one JSON array of items, and one folder of audio
per sub-dataset, named ``<task_name>_<dataset_name>``: ``speech_QA_common_voice_en``, ``speech_QA_iemocap``,
``speech_and_sound_QA_audiocaps_cv``, ``speech_and_music_QA_musiccaps_cv``, ``speech_dialogue_QA_fisher``,
``speech_dialogue_QA_spokenwoz``, ``sound_QA_clotho``, ``sound_generation_QA_clotho``, ``music_QA_musiccaps``,
``music_generation_analysis_QA_musiccaps``. An item's audio is ``<task_name>_<dataset_name>/<path>``
relative to ``Chat_meta.json`` (``.wav``; ``.mp3`` in ``speech_QA_common_voice_en``). Each item has the keys
``task_name, dataset_name, uniq_id`` (an integer, 0-2199), ``path`` (a file name), ``question`` (the text
instruction given to the model with the audio), ``answer_gt`` (the reference answer) and ``meta_info``: a
*string* that the release's judge prompt shows verbatim as the "Detailed Audio Description". It is a Python
literal (single-quoted dict, or a list of captions for Clotho) in most sub-datasets and JSON (a list of
speaker turns) in the dialogue ones, so it is read as JSON, else as a Python literal (never evaluated).

Gender: only inside ``meta_info``, under the key ``gender`` (``male``/``female``/``other``), in the four
single-speaker speech sub-datasets: ``speech_QA_common_voice_en`` and ``speech_QA_iemocap``
(``{'age'|'emotion', 'gender', 'transcription'}``) and the two mixtures ``speech_and_sound_QA_audiocaps_cv``
and ``speech_and_music_QA_musiccaps_cv`` (``{'sound_caption'|'music_caption', 'age', 'gender',
'speech_transcription', 'ahead', 'louder'}``). The dialogue items (Fisher, SpokenWOZ: per-turn speakers and
transcriptions, no gender) and the sound and music items (captions; "female vocalist" in a caption is not an
annotation) have none and are left out, as are items labelled ``other`` (the paper's female/male subset).
``male``/``female`` (and Common Voice v17's ``male_masculine``/``female_feminine``) are kept; an empty label
counts as no annotation; any other label is an error naming the item.

Sources: the GitHub repository ``OFA-Sys/AIR-Bench`` (``Inference_Chat.py``: ``Chat_meta.json`` read with
``json.load``, audio at ``{root}/{task_name}_{dataset_name}/{path}``; ``score_chat.py``: ``meta_info`` put
verbatim into the judge prompt; ``cal_score.py``: the task names; and ``Chat_result_modelx.jsonl``, its
example output for the 2,200 items, with every item's ``meta_info``, from which the keys, formats and counts
here were read); the dataset's file tree at https://huggingface.co/datasets/qyang1021/AIR-Bench-Dataset/tree/main/Chat
(the ten folders and ``Chat_meta.json``, 2.07 MB); HELM's ``AirBenchChatScenario`` (the same path rule, and
``.mp3`` audio); and issue OFA-Sys/AIR-Bench#1 (the release on the Hub; "a few files corrupted in
SpokenWOZ", which has no gender and is not read here).

**Counts.** In that metadata the four gendered sub-datasets hold 800 items: 598 male, 193 female, 9 other
(Common Voice 164/34/2, IEMOCAP 106/94, AudioCaps mixtures 161/36/3, MusicCaps mixtures 167/29/4), so this
loader keeps 791 by default. The paper reports 436 male / 163 female; no union of sub-datasets (as items or
as recordings) gives those numbers (the closest, Common Voice + IEMOCAP + AudioCaps mixtures, gives 431/164),
so how the paper's subset was drawn could not be confirmed. ``subsets`` restricts the sub-datasets read.
Not confirmed either: that ``Chat_meta.json`` holds exactly the items of ``Chat_result_modelx.jsonl`` (the
example output is all that could be read; its keys are the ones ``Inference_Chat.py`` reads from the meta),
and that every audio file of the gendered sub-datasets is on the Hub.

**Transcript.** Every gendered item carries the words spoken (``transcription``, or ``speech_transcription``
in the mixtures); it is the manifest's ``transcript``, the spoken half of the paper's reference text (the
other half is ``question``). An item with a gender but no transcription is an error.

**No speaker id.** The release names no speaker, so every *recording* is its own ``speaker_id``, written as
the ``utterance_id`` of the first item about it: the release asks several questions about some clips (the
791 items kept lie on 604 recordings), and those items share a voice, so one ``speaker_id`` per item would
count one voice as several (and the corpus check would flag the bit-identical audio). The mixtures are built from
Common Voice clips named ``common_voice_en_<clip>_concat_<other>``; a Common Voice clip number is taken as
one recording wherever it appears (43 clips recur across sub-datasets, always with the same gender and
transcription). Speaker-level tests then resample recordings, and since a Common Voice contributor or one of
IEMOCAP's ten actors recorded many of the clips, their p-values and intervals are optimistic.

Manifest: ``utterance_id`` = ``air-chat-<uniq_id>``; ``content_id`` = a hash of the transcript and the
question together (:func:`~harness.data.loaders._common.content_key`); dimension ``gender``; information
columns ``question``, ``reference_answer`` (``answer_gt``), ``audio_description`` (``meta_info`` as
written: it names the speaker's gender, and the age of Common Voice speakers, so a judge shown it is not
blind to the voice), ``subset`` (``<task_name>_<dataset_name>``), ``uniq_id`` and ``recording``. License: the
dataset card says CC BY-NC 4.0, with the copyright of each clip left to its source dataset (IEMOCAP, Common
Voice, AudioCaps, MusicCaps).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    check_audio_files,
    content_key,
    dropped_groups_note,
    testable_rows_with_audio,
    write_corpus,
)

NAME = "air-bench-chat"
DIMENSIONS = ("gender",)
META_FILE = "Chat_meta.json"
CHAT_FOLDER = "Chat"
ITEM_KEYS = ("task_name", "dataset_name", "uniq_id", "path", "question", "answer_gt", "meta_info")
TRANSCRIPT_KEYS = ("transcription", "speech_transcription")
GENDERS = {"male": "male", "female": "female", "male_masculine": "male", "female_feminine": "female"}
NOT_BINARY = ("other",)
_COMMON_VOICE_CLIP = re.compile(r"^(common_voice_[a-z]{2}(?:-[A-Z]{2})?_\d+)")


def meta_file(source: Path) -> Path:
    """``Chat_meta.json`` in ``source`` or in its ``Chat/`` folder."""
    for candidate in (source / META_FILE, source / CHAT_FOLDER / META_FILE):
        if candidate.is_file():
            return candidate
    raise LoaderError(f"{source}: no {META_FILE} here or in {CHAT_FOLDER}/ (the Chat part of AIR-Bench)")


def read_items(path: Path) -> list[dict[str, Any]]:
    """The items of ``Chat_meta.json``, every key of :data:`ITEM_KEYS` checked; errors name the file and item."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoaderError(f"{path}: AIR-Bench-Chat metadata cannot be parsed as JSON ({exc})") from exc
    if not isinstance(items, list):
        raise LoaderError(f"{path}: expected a JSON array of items, found a {type(items).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise LoaderError(f"{path}, item {index}: expected a JSON object, found a {type(item).__name__}")
        missing = [key for key in ITEM_KEYS if key not in item]
        if missing:
            raise LoaderError(f"{_where(path, index, item)}: missing key(s) {missing}; it has {sorted(item)}")
        uniq_id = item["uniq_id"]
        if isinstance(uniq_id, bool) or not isinstance(uniq_id, int | str) or not str(uniq_id).strip():
            raise LoaderError(f"{_where(path, index, item)}: uniq_id {uniq_id!r} is not an integer or a name")
        for key in ("task_name", "dataset_name", "path", "question", "answer_gt"):
            if not isinstance(item[key], str) or not item[key].strip():
                raise LoaderError(f"{_where(path, index, item)}: {key} {item[key]!r} is not a non-empty string")
    return items


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] | None = None,
    subsets: Sequence[str] | None = None,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write an AIR-Bench-Chat manifest (the items with a female/male speaker label) and corpus.yaml into
    ``output``; returns ``output``.

    ``dimensions``: only ``gender`` (the default). ``subsets``: read only these sub-datasets
    (``<task_name>_<dataset_name>``, e.g. ``speech_QA_iemocap``); default every one with gender labels.
    """
    source, output = Path(source), Path(output)
    dimensions = list(DIMENSIONS if dimensions is None else dimensions)
    if dimensions != list(DIMENSIONS):
        raise ValueError(f"AIR-Bench-Chat dimensions must be {list(DIMENSIONS)}; got {dimensions}")
    path = meta_file(source)
    items = read_items(path)
    known = sorted({_subset(item) for item in items})
    if subsets is not None and set(subsets) - set(known):
        raise LoaderError(f"{path}: no item of sub-dataset(s) {sorted(set(subsets) - set(known))}; it has {known}")

    rows, seen, unannotated, not_binary = [], {}, 0, 0
    for index, item in enumerate(items):
        where = _where(path, index, item)
        utterance_id = f"air-chat-{str(item['uniq_id']).strip()}"
        if utterance_id in seen:
            raise LoaderError(f"{where}: uniq_id {item['uniq_id']!r} is also item {seen[utterance_id]}")
        seen[utterance_id] = index
        if subsets is not None and _subset(item) not in subsets:
            continue
        meta = _meta_info(item["meta_info"], where)
        label = str(meta.get("gender", "")).strip().lower() if isinstance(meta, dict) else ""
        if not label:
            unannotated += 1
            continue
        if label in NOT_BINARY:
            not_binary += 1
            continue
        if label not in GENDERS:
            raise LoaderError(f"{where}: gender {meta['gender']!r} is none of {sorted({*GENDERS, *NOT_BINARY})}")
        transcript = next((meta[key] for key in TRANSCRIPT_KEYS if key in meta), None)
        if not isinstance(transcript, str) or not transcript.strip():
            raise LoaderError(
                f"{where}: meta_info has a gender but no {' or '.join(TRANSCRIPT_KEYS)} (the words spoken)"
            )
        relative = PurePosixPath(item["path"])
        if relative.is_absolute() or ".." in relative.parts:
            raise LoaderError(f"{where}: path {item['path']!r} is not a file name inside its sub-dataset folder")
        audio = path.parent / _subset(item) / relative
        if not audio.is_file():
            raise LoaderError(f"{where}: audio {audio} does not exist")
        question, transcript = item["question"].strip(), transcript.strip()
        rows.append(
            {
                "utterance_id": utterance_id,
                "_path": audio,
                "_recording": _recording(item),
                "_where": where,
                "content_id": content_key(f"{transcript} {question}"),
                "transcript": transcript,
                "gender": GENDERS[label],
                "question": question,
                "reference_answer": item["answer_gt"].strip(),
                "audio_description": item["meta_info"] if isinstance(item["meta_info"], str) else json.dumps(meta),
                "subset": _subset(item),
                "uniq_id": str(item["uniq_id"]).strip(),
            }
        )
    if not rows:
        raise LoaderError(f"{path}: no item with a female/male gender label in meta_info (sub-datasets {known})")
    table = pd.DataFrame(rows)
    table = _with_recording_speakers(table)
    if check_audio:
        for where, audio in table.drop_duplicates("_path")[["_where", "_path"]].itertuples(index=False):
            try:
                check_audio_files([audio])
            except LoaderError as exc:
                raise LoaderError(f"{where}: {exc}") from exc
    table = table.drop(columns=["_recording", "_where"])
    table, dropped = testable_rows_with_audio(
        table, dimensions, output, relative_audio=relative_audio, check_audio=False
    )
    counts = table["gender"].value_counts()
    recordings = table["speaker_id"].nunique()
    description = (
        f"AIR-Bench-Chat read from {path.resolve()}: the {len(table)} items with a speaker-gender label "
        f"({counts.get('male', 0)} male, {counts.get('female', 0)} female) of sub-datasets "
        f"{', '.join(sorted(table['subset'].unique()))}; left out: {unannotated} items without a gender label "
        f"(dialogue, sound and music items) and {not_binary} labelled other. The release has no speaker id: every "
        f"recording is its own speaker_id ({len(table)} items on {recordings} recordings; items asking about one "
        "clip share it), so speaker-level tests resample recordings and their p-values and intervals are "
        "optimistic (a Common Voice contributor or an IEMOCAP actor recorded many clips). The paper's subset "
        "(semantic-aware mixed-effects paper, §V-A) is 436 male / 163 female items."
        + dropped_groups_note(dropped)
        + " License: CC BY-NC 4.0 (dataset card); clips keep their source datasets' terms."
    )
    return write_corpus(output, table.reset_index(drop=True), name=NAME, dimensions=dimensions, description=description)


def _subset(item: dict[str, Any]) -> str:
    """The item's sub-dataset folder, ``<task_name>_<dataset_name>``."""
    return f"{str(item['task_name']).strip()}_{str(item['dataset_name']).strip()}"


def _where(path: Path, index: int, item: Any) -> str:
    uniq = f" (uniq_id {item['uniq_id']!r})" if isinstance(item, dict) and "uniq_id" in item else ""
    return f"{path}, item {index}{uniq}"


def _meta_info(value: Any, where: str) -> Any:
    """``meta_info`` as data: JSON, else a Python literal (single-quoted dicts), never evaluated as code."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise LoaderError(f"{where}: meta_info is neither JSON nor a Python literal ({type(exc).__name__})") from exc


def _recording(item: dict[str, Any]) -> str:
    """What identifies the voice recording: the Common Voice clip a file is made from, else the file itself."""
    match = _COMMON_VOICE_CLIP.match(PurePosixPath(item["path"]).name)
    return match.group(1) if match else f"{_subset(item)}/{item['path']}"


def _with_recording_speakers(table: pd.DataFrame) -> pd.DataFrame:
    """``recording`` and ``speaker_id`` (the first item's utterance_id per recording, in release order); an
    error naming both items when one recording carries two gender labels or two transcriptions."""
    first = table.drop_duplicates("_recording").set_index("_recording")
    for column in ("gender", "transcript"):
        clash = table[table[column] != table["_recording"].map(first[column])]
        if len(clash):
            row = clash.iloc[0]
            raise LoaderError(
                f"{row['_where']}: recording {row['_recording']} has {column} {row[column]!r}, but "
                f"{first.at[row['_recording'], '_where']} gives it {first.at[row['_recording'], column]!r}"
            )
    return table.assign(speaker_id=table["_recording"].map(first["utterance_id"]), recording=table["_recording"])
