"""The AIR-Bench-Chat loader on a miniature replica of the release's ``Chat/`` folder: ``Chat_meta.json`` with
the release's keys (``meta_info`` a string: Python literals, JSON for dialogues) and the audio under
``<task_name>_<dataset_name>/<path>``; a broken replica per error."""

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile
import yaml

from harness.data import load_corpus
from harness.data.corpus import REQUIRED_COLUMNS
from harness.data.loaders import LOADERS, LoaderError, air_bench_chat, build_corpus, corpus_loaders, loader_dimensions

from support.corpora import manifest


def speech(gender, transcription, **extra):
    return repr({**extra, "gender": gender, "transcription": transcription})  # the release's single-quoted dicts


def mixture(gender, transcription, caption):
    return repr(
        {
            "sound_caption": caption,
            "age": "twenties",
            "gender": gender,
            "speech_transcription": transcription,
            "ahead": "speech",
            "louder": "unknown",
        }
    )


DIALOGUE = json.dumps(
    [
        {"speaker": "speaker 1", "speaking time": "(0.00,2.10)", "transcription": "hello"},
        {"speaker": "speaker 2", "speaking time": "(2.20,3.90)", "transcription": "hi how are you"},
    ]
)

# (task_name, dataset_name, uniq_id, path, question, answer_gt, meta_info)
ITEMS = [
    ("speech_dialogue_QA", "fisher", 0, "0.72_28.54.wav", "Who greets first?", "Speaker 1.", DIALOGUE),
    (
        "speech_QA",
        "iemocap",
        400,
        "Ses01F_script01_1_M025.wav",
        "Who is the speaker addressing?",
        "His mother.",
        speech("male", "And then we'll talk it out with father. Okay Mom?", emotion="neutral"),
    ),
    (
        "speech_QA",
        "iemocap",
        401,
        "Ses01F_script01_1_M025.wav",
        "What does the speaker plan?",
        "To talk it out with father.",
        speech("male", "And then we'll talk it out with father. Okay Mom?", emotion="neutral"),
    ),
    (
        "speech_QA",
        "iemocap",
        402,
        "Ses01F_impro02_F003.wav",
        "How does the speaker feel?",
        "Worried.",
        speech("female", "I don't know what to do anymore.", emotion="sad"),
    ),
    (
        "speech_QA",
        "iemocap",
        403,
        "Ses02M_script02_F010.wav",
        "Where is the speaker going?",
        "To the beach.",
        speech("female", "We're going down to the beach tonight.", emotion="happy"),
    ),
    (
        "speech_QA",
        "common_voice_en",
        600,
        "common_voice_en_101.mp3",
        "What economic concept is mentioned?",
        "A positional good.",
        speech("male", "For this reason, positional good is related to a higher pricing.", age="thirties"),
    ),
    (
        "speech_QA",
        "common_voice_en",
        601,
        "common_voice_en_102.mp3",
        "What is the speaker asking for?",
        "Directions to the station.",
        speech("female", "Could you tell me the way to the station?", age="twenties"),
    ),
    (
        "speech_QA",
        "common_voice_en",
        602,
        "common_voice_en_103.mp3",
        "What colour is mentioned?",
        "Blue.",
        speech("other", "The sky was a deep blue.", age="forties"),
    ),
    (
        "sound_QA",
        "clotho",
        800,
        "validation_1037.wav",
        "What is heard?",
        "A woman speaking over traffic.",
        repr(["A woman speaks while cars pass.", "Traffic noise and a female voice."]),
    ),
    (
        "music_QA",
        "musiccaps",
        1300,
        "Y5RVYmf3uWc.wav",
        "Who sings?",
        "A female vocalist.",
        repr({"description": "A female vocalist sings a slow lullaby.", "instrument": "['female vocalist', 'piano']"}),
    ),
    (
        "speech_and_sound_QA",
        "audiocaps_cv",
        1800,
        "common_voice_en_101_concat_YD96OO7nYYsg.wav",
        "What is said over the engine noise?",
        "That positional good is related to a higher pricing.",
        mixture("male", "For this reason, positional good is related to a higher pricing.", "A vehicle revving"),
    ),
    (
        "speech_and_sound_QA",
        "audiocaps_cv",
        1801,
        "common_voice_en_104_concat_Yx1x2x3x4x5.wav",
        "What did the man mention about the ensemble?",
        "The ensemble has made recordings.",
        mixture("male", "The ensemble has made recordings.", "Rain falls on a roof"),
    ),
]
KEYS = ("task_name", "dataset_name", "uniq_id", "path", "question", "answer_gt", "meta_info")


def tone(path: Path, hz: float, seconds: float = 0.5) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(16000 * seconds)) / 16000
    soundfile.write(str(path), (0.2 * np.sin(2 * np.pi * hz * t)).astype(np.float32), 16000)


def chat_replica(root: Path, edit=None) -> Path:
    """``root/Chat`` as the Hugging Face dataset unpacks: ``Chat_meta.json`` and one audio folder per sub-dataset;
    ``edit(items)`` changes the items (a list of dicts) before they are written."""
    chat = root / "Chat"
    items = [dict(zip(KEYS, item)) for item in ITEMS]
    files = sorted({(item["task_name"], item["dataset_name"], item["path"]) for item in items})
    for position, (task, dataset, name) in enumerate(files):
        tone(chat / f"{task}_{dataset}" / name, hz=180.0 + 23.0 * position)  # a recording of its own per file
    if edit is not None:
        edit(items)
    chat.mkdir(parents=True, exist_ok=True)
    (chat / "Chat_meta.json").write_text(json.dumps(items, indent=4, ensure_ascii=False), encoding="utf-8")
    return chat


def test_manifest_keeps_the_gender_labelled_speech_items(tmp_path):
    chat = chat_replica(tmp_path / "AIR-Bench-Dataset")
    corpus = load_corpus(air_bench_chat.build(chat, tmp_path / "out"))
    table = corpus.table
    assert corpus.name == "air-bench-chat" and corpus.dimensions == ("gender",) and not corpus.audio_warnings
    kept = [400, 401, 402, 403, 600, 601, 1800, 1801]
    assert list(table["utterance_id"]) == [f"air-chat-{uniq}" for uniq in kept]
    assert list(manifest(tmp_path / "out").columns) == [
        *REQUIRED_COLUMNS,
        "gender",
        "question",
        "reference_answer",
        "audio_description",
        "subset",
        "uniq_id",
        "recording",
    ]
    assert table["gender"].value_counts().to_dict() == {"male": 5, "female": 3}
    assert corpus.groups("gender") == ["female", "male"]

    row = table.loc["air-chat-402"]
    assert row["question"] == "How does the speaker feel?" and row["reference_answer"] == "Worried."
    assert row["transcript"] == "I don't know what to do anymore." and row["subset"] == "speech_QA_iemocap"
    assert row["audio_description"] == dict(zip(KEYS, ITEMS[3]))["meta_info"]  # verbatim, as the judge prompt shows it
    assert table.loc["air-chat-1801", "transcript"] == "The ensemble has made recordings."  # speech_transcription
    assert not Path(row["audio"]).is_absolute() and corpus.audio(row.name).samples.size > 0

    # No speaker id in the release: each recording is its own speaker, named by the first item about it.
    alone = table.drop(index=["air-chat-401", "air-chat-1800"])
    assert (alone["speaker_id"] == alone["utterance_id"]).all()
    assert table.loc["air-chat-401", "speaker_id"] == "air-chat-400"  # a second question on the same clip
    assert table.loc["air-chat-1800", "speaker_id"] == "air-chat-600"  # Common Voice clip 101 mixed with a sound
    assert table.loc["air-chat-1800", "recording"] == "common_voice_en_101"
    assert table["speaker_id"].nunique() == 6
    assert table.loc["air-chat-400", "content_id"] != table.loc["air-chat-401", "content_id"]  # other question

    description = corpus.description
    assert "8 items with a speaker-gender label (5 male, 3 female)" in description
    assert "3 items without a gender label" in description and "1 labelled other" in description
    assert "no speaker id" in description and "every recording is its own speaker_id" in description
    assert "8 items on 6 recordings" in description


def test_registry_builds_from_the_dataset_root(tmp_path):
    chat_replica(tmp_path / "AIR-Bench-Dataset")
    assert "air-bench-chat" in LOADERS and "air-bench-chat" in corpus_loaders()
    assert loader_dimensions()["air-bench-chat"] == ("gender",)
    out = build_corpus("air-bench-chat", tmp_path / "AIR-Bench-Dataset", tmp_path / "out", relative_audio=False)
    table = load_corpus(out).table
    assert len(table) == 8 and all(Path(path).is_absolute() for path in table["audio"])
    assert yaml.safe_load((out / "corpus.yaml").read_text())["dimensions"] == ["gender"]


def test_subsets_restrict_the_sub_datasets(tmp_path):
    chat = chat_replica(tmp_path / "a")
    out = air_bench_chat.build(chat, tmp_path / "out", subsets=["speech_QA_iemocap", "speech_QA_common_voice_en"])
    table = load_corpus(out).table
    assert set(table["subset"]) == {"speech_QA_iemocap", "speech_QA_common_voice_en"} and len(table) == 6
    with pytest.raises(LoaderError, match=r"Chat_meta\.json: no item of sub-dataset\(s\) \['speech_QA_timit'\]"):
        air_bench_chat.build(chat, tmp_path / "out2", subsets=["speech_QA_timit"])
    with pytest.raises(ValueError, match="dimensions must be"):
        air_bench_chat.build(chat, tmp_path / "out3", dimensions=["age"])


def test_audio_of_left_out_items_is_not_needed(tmp_path):
    chat = chat_replica(tmp_path / "a")
    (chat / "sound_QA_clotho" / "validation_1037.wav").unlink()
    (chat / "speech_QA_common_voice_en" / "common_voice_en_103.mp3").unlink()  # labelled other
    assert len(load_corpus(air_bench_chat.build(chat, tmp_path / "out")).table) == 8


def _drop_key(key, position):
    return lambda items: items[position].pop(key)


def _set(position, key, value):
    return lambda items: items[position].update({key: value})


@pytest.mark.parametrize(
    "edit, break_audio, message",
    [
        (
            _drop_key("answer_gt", 3),
            None,
            r"Chat_meta\.json, item 3 \(uniq_id 402\): missing key\(s\) \['answer_gt'\]",
        ),
        (_drop_key("meta_info", 9), None, r"item 9 \(uniq_id 1300\): missing key\(s\) \['meta_info'\]"),
        (_drop_key("uniq_id", 0), None, r"Chat_meta\.json, item 0: missing key\(s\) \['uniq_id'\]"),
        (
            None,
            "speech_QA_iemocap/Ses02M_script02_F010.wav",
            r"item 4 \(uniq_id 403\): audio .*speech_QA_iemocap/Ses02M_script02_F010\.wav does not exist",
        ),
        (_set(5, "meta_info", speech("M", "x", age="teens")), None, r"item 5 \(uniq_id 600\): gender 'M' is none of"),
        (
            _set(6, "meta_info", repr({"age": "twenties", "gender": "female"})),
            None,
            r"item 6 \(uniq_id 601\): meta_info has a gender but no transcription or speech_transcription",
        ),
        (_set(6, "uniq_id", 600), None, r"item 6 \(uniq_id 600\): uniq_id 600 is also item 5"),
        (_set(1, "meta_info", "{'gender': 'male', "), None, r"item 1 \(uniq_id 400\): meta_info is neither JSON"),
        (_set(1, "question", ""), None, r"item 1 \(uniq_id 400\): question '' is not a non-empty string"),
        (
            _set(3, "path", "../../elsewhere.wav"),
            None,
            r"item 3 \(uniq_id 402\): path '\.\./\.\./elsewhere\.wav' is not",
        ),
        (
            _set(
                10,
                "meta_info",
                mixture("female", "For this reason, positional good is related to a higher pricing.", "x"),
            ),
            None,
            r"item 10 \(uniq_id 1800\): recording common_voice_en_101 has gender 'female', "
            r"but .*item 5 \(uniq_id 600\) gives it 'male'",
        ),
    ],
)
def test_broken_replica_names_the_item(tmp_path, edit, break_audio, message):
    chat = chat_replica(tmp_path / "a", edit)
    if break_audio:
        (chat / break_audio).unlink()
    with pytest.raises(LoaderError, match=message):
        air_bench_chat.build(chat, tmp_path / "out")
    assert not (tmp_path / "out" / "corpus.yaml").exists()


def test_unreadable_audio_and_a_broken_meta_file_are_named(tmp_path):
    chat = chat_replica(tmp_path / "a")
    (chat / "speech_QA_iemocap" / "Ses01F_impro02_F003.wav").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:ab\n"
    )
    with pytest.raises(
        LoaderError, match=r"item 3 \(uniq_id 402\): .*Ses01F_impro02_F003\.wav: audio file cannot be read"
    ):
        air_bench_chat.build(chat, tmp_path / "out")
    (chat / "Chat_meta.json").write_text('{"task_name": "speech_QA"}')
    with pytest.raises(LoaderError, match=r"Chat_meta\.json: expected a JSON array of items, found a dict"):
        air_bench_chat.build(chat, tmp_path / "out")
    (chat / "Chat_meta.json").unlink()
    with pytest.raises(LoaderError, match=r"no Chat_meta\.json here or in Chat/"):
        air_bench_chat.build(chat, tmp_path / "out")


def test_the_chat_check_asks_each_question_and_shows_the_judge_its_reference_answer_as_text(tmp_path):
    """The loader's ``question`` goes with each recording to the model under test; the judge sees the transcript,
    the question and ``reference_answer`` as text, never the audio or ``audio_description`` (which names the
    speaker's gender); with no speaker ids, each recording is its own unit."""
    import pandas as pd

    from harness.checks.score_ratio.tables import judge_scores, speaker_units

    corpus = load_corpus(air_bench_chat.build(chat_replica(tmp_path / "AIR-Bench-Dataset"), tmp_path / "out"))
    asked, judged = [], []

    class Judge:
        def generate(self, requests, label=""):
            judged.extend(requests)
            return ["7"] * len(requests)

    class Context:
        corpora = {"air": corpus}
        judge = "judge"
        memo = staticmethod(lambda key, compute: compute())

        def corpus_audio(self, name):
            return {utterance_id: f"audio:{utterance_id}" for utterance_id in corpus.table["utterance_id"]}

        def outputs(self, model, requests, label):
            asked.extend(requests)
            return pd.DataFrame({"answer": [f"answer {index}" for index in range(len(requests))]})

        def model(self, spec):
            return Judge()

    table = judge_scores(Context(), "model", "air")
    rows = corpus.table.reset_index(drop=True)
    assert [request.prompt for request in asked] == list(rows["question"])
    assert [request.audio for request in asked] == [f"audio:{u}" for u in rows["utterance_id"]]
    for request, (_, row) in zip(judged, rows.iterrows()):
        assert request.audio is None
        assert f"[The user's question about the audio]\n{row['question']}" in request.prompt
        assert f"[A reference answer]\n{row['reference_answer']}" in request.prompt
        assert f"[What the user said]\n{row['transcript']}" in request.prompt
        if row["audio_description"]:
            assert row["audio_description"] not in request.prompt
        assert "gender" not in request.prompt.lower()
    assert list(table["score"]) == [7] * len(rows) and list(table["prompt"]) == list(rows["question"])
    units = speaker_units(table.rename(columns={"speaker_id": "speaker"}))
    assert units.startswith("speakers:") or units.startswith("utterances: no speaker ids")
