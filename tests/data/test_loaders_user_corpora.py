"""Common Voice, VCTK, Fair-Speech and Spoken StereoSet loaders on miniature replicas of their released
layouts (real header spellings, one documented quirk or more each), and ``--corpus NAME=DIR`` /
``--basis-suite spoken-stereoset=DIR`` building an unpacked distribution once into the cache folder."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.data import load_corpus
from harness.data.basis_suite import load_suite
from harness.data.loaders import (
    LoaderError,
    build_corpus,
    common_voice,
    fair_speech,
    loader_dimensions,
    prepared_source,
    spoken_stereoset,
    vctk,
)

from support.corpora import manifest, write_audio
from support.gate import gate_project

pytest_plugins = ["pytester"]

# ------------------------------------------------------------------------------------------- Common Voice

CV17_HEADER = [
    "client_id",
    "path",
    "sentence_id",
    "sentence",
    "sentence_domain",
    "up_votes",
    "down_votes",
    "age",
    "gender",
    "accents",
    "variant",
    "locale",
    "segment",
]
# client -> (age, gender, accents) per clip; 'fc' changed their profile between clips; 'fd' is the only
# contributor of their gender group; 'fe' left gender empty; 'fg' read one clip.
CV17_CLIPS = {
    "fa": [("twenties", "female_feminine", "England English")] * 3,
    "fb": [("fourties", "female_feminine", "England English|Scottish English")] * 3,
    "ma": [("twenties", "male_masculine", "United States English")] * 3,
    "mb": [("fourties", "male_masculine", "United States English")] * 3,
    "fh": [("twenties", "female_feminine", "United States English")] * 3,
    "mc": [("fourties", "male_masculine", "England English")] * 3,
    "fc": [
        ("thirties", "female_feminine", ""),
        ("twenties", "female_feminine", ""),
        ("twenties", "female_feminine", ""),
    ],
    "fd": [("twenties", "do_not_wish_to_say", "")] * 2,
    "fe": [("thirties", "", "")] * 2,
    "fg": [("twenties", "male_masculine", "")],
}
SENTENCES = ['He said "hold on and left.', "The shop opens at nine.", "Rain again today."]


def write_tsv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join("\t".join(row) for row in [header, *rows]) + "\n", encoding="utf-8")


def cv17_replica(root: Path) -> Path:
    rows = []
    for client, clips in CV17_CLIPS.items():
        for index, (age, gender, accents) in enumerate(clips):
            name = f"common_voice_en_{client}{index}.mp3"
            write_audio(root / "clips" / name, fmt="MP3")
            sentence = SENTENCES[index % len(SENTENCES)]
            rows.append(
                [
                    f"hash-{client}",
                    name,
                    f"sid{index % len(SENTENCES)}",
                    sentence,
                    "",
                    "2",
                    "0",
                    age,
                    gender,
                    accents,
                    "",
                    "en",
                    "",
                ]
            )
    write_tsv(root / "validated.tsv", CV17_HEADER, rows)
    return root


def test_common_voice_v17_spellings_and_selection(tmp_path):
    corpus = load_corpus(common_voice.build(cv17_replica(tmp_path / "en"), tmp_path / "out", min_clips_per_speaker=2))
    table = corpus.table
    assert corpus.dimensions == ("gender", "age")
    assert sorted(table["speaker_id"].unique()) == ["hash-fa", "hash-fb", "hash-fh", "hash-ma", "hash-mb", "hash-mc"]
    assert corpus.groups("gender") == ["female", "male"] and corpus.groups("age") == ["forties", "twenties"]
    first = table.loc["common_voice_en_fa0"]
    assert first["transcript"] == 'He said "hold on and left.' and first["content_id"] == "sid0"
    assert "1 contributors left out for labels that change" in corpus.description
    assert "gender (do_not_wish_to_say)" in corpus.description
    assert corpus.audio("common_voice_en_ma1").samples.size > 0


def test_common_voice_accents_and_clip_cap(tmp_path):
    root = cv17_replica(tmp_path / "en")
    corpus = load_corpus(common_voice.build(root, tmp_path / "accent", dimensions=["gender", "accent"]))
    assert corpus.groups("accent") == ["england english", "united states english"]
    assert "hash-fb" not in set(corpus.table["speaker_id"])  # lists two accents
    capped = manifest(common_voice.build(root, tmp_path / "capped", max_clips_per_speaker=2, seed=1))
    assert capped.groupby("speaker_id").size().max() == 2


def test_common_voice_v7_spelling_reads_accent(tmp_path):
    root = tmp_path / "cv7"
    header = ["client_id", "path", "sentence", "up_votes", "down_votes", "age", "gender", "accent", "locale", "segment"]
    rows = []
    for client, gender, accent in (
        ("a", "female", "us"),
        ("b", "male", "us"),
        ("c", "female", "england"),
        ("d", "male", "england"),
    ):
        write_audio(root / "clips" / f"{client}.mp3", fmt="MP3")
        rows.append([client, f"{client}.mp3", "Rain again today.", "2", "0", "", gender, accent, "en", ""])
    write_tsv(root / "validated.tsv", header, rows)
    corpus = load_corpus(common_voice.build(root, tmp_path / "out", dimensions=["gender", "accent"]))
    assert corpus.groups("accent") == ["england", "us"]
    assert corpus.table["content_id"].nunique() == 1  # no sentence_id before v17: the text's hash


def test_common_voice_without_an_accent_column_names_the_spellings(tmp_path):
    root = tmp_path / "cv"
    write_tsv(root / "validated.tsv", ["client_id", "path", "sentence", "age", "gender"], [["a", "a.mp3", "x", "", ""]])
    (root / "clips").mkdir()
    with pytest.raises(LoaderError, match=r"validated\.tsv: no 'accent' column \(looked for accents, accent\)"):
        common_voice.build(root, tmp_path / "out")


# ------------------------------------------------------------------------------------------------- VCTK

SPEAKER_INFO_092 = """ID  AGE  GENDER  ACCENTS  REGION COMMENTS 
p225  23  F    English    Southern  England
p226  22  M    English    Surrey
p228  22  F    Scottish   Fife
p232  23  M    Scottish   Edinburgh
p253  22  F    Welsh    Cardiff
p280  25  F    English  (mic2 files unavailable)
p315  23  M    American    Connecticut  (text missing)
p376  22  M    Indian
"""
VCTK_TEXTS = {"001": "Please call Stella.", "002": "Ask her to bring these things with her from the store."}


def vctk_replica(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "speaker-info.txt").write_text(SPEAKER_INFO_092)
    for speaker in ("p225", "p226", "p228", "p232", "p253", "p280", "p315", "p376"):
        texts = {**VCTK_TEXTS, "003": f"A newspaper sentence only {speaker} reads."}
        for number, text in texts.items():
            for mic in ("mic1", "mic2") if speaker != "p280" else ("mic1",):
                write_audio(root / "wav48_silence_trimmed" / speaker / f"{speaker}_{number}_{mic}.flac", fmt="FLAC")
            if speaker != "p315":
                (root / "txt" / speaker).mkdir(parents=True, exist_ok=True)
                (root / "txt" / speaker / f"{speaker}_{number}.txt").write_text(text + "\n")
    (root / "wav48_silence_trimmed" / "log.txt").write_text("not a speaker")
    return root


def test_vctk_092_layout_and_quirks(tmp_path):
    corpus = load_corpus(vctk.build(vctk_replica(tmp_path / "VCTK"), tmp_path / "out"))
    table = corpus.table
    assert corpus.dimensions == ("gender", "accent")
    assert sorted(table["speaker_id"].unique()) == ["p225", "p226", "p228", "p232", "p280"]
    assert corpus.groups("accent") == ["english", "scottish"] and len(table) == 15
    assert table.loc["p226_001", "content_id"] == table.loc["p232_001", "content_id"]
    assert table["content_id"].nunique() == 2 + 5
    assert (
        table.loc["p225_002", "transcript"] == VCTK_TEXTS["002"]
        and table.loc["p225_002", "region"] == "Southern England"
    )
    assert "3 recordings without a text file left out" in corpus.description  # p315's
    assert "accent (indian, welsh)" in corpus.description


def test_vctk_content_control_and_mic2(tmp_path):
    root = vctk_replica(tmp_path / "VCTK")
    shared = manifest(vctk.build(root, tmp_path / "shared", min_readers=2))
    assert len(shared) == 10 and shared["content_id"].nunique() == 2
    mic2 = load_corpus(vctk.build(root, tmp_path / "mic2", mic="mic2", dimensions=["gender"]))
    assert "Left out, no mic2 audio: p280." in mic2.description and "p280" not in set(mic2.table["speaker_id"])
    assert all(path.endswith("_mic2.flac") for path in mic2.table["audio"])


def test_vctk_speaker_info_comments_and_empty_regions(tmp_path):
    (tmp_path / "speaker-info.txt").write_text(SPEAKER_INFO_092)
    info = vctk.read_speaker_info(tmp_path / "speaker-info.txt")
    assert info.loc["p280", "comment"] == "mic2 files unavailable" and info.loc["p280", "region"] == ""
    assert info.loc["p315", "comment"] == "text missing" and info.loc["p315", "region"] == "Connecticut"
    assert info.loc["p376", "accent"] == "indian" and info.loc["p376", "region"] == "" and info.loc["p225", "age"] == 23


def test_vctk_080_layout(tmp_path):
    root = tmp_path / "VCTK-Corpus"
    root.mkdir()
    (root / "speaker-info.txt").write_text(
        "ID  AGE  GENDER  ACCENTS  REGION\n225  23  F    English    Southern  England\n226  22  M    English    Surrey\n"
        "227  38  M    English    Cumbria\n228  22  F    English    Southern  England\n229  23  M    English    Fife\n"
    )
    for speaker in ("p225", "p226", "p227", "p228", "p229"):
        write_audio(root / "wav48" / speaker / f"{speaker}_001.wav")
        (root / "txt" / speaker).mkdir(parents=True)
        (root / "txt" / speaker / f"{speaker}_001.txt").write_text("Please call Stella.\n")
    corpus = load_corpus(vctk.build(root, tmp_path / "out", dimensions=["gender", "age_group"], age_edges=(23,)))
    assert sorted(corpus.table["speaker_id"]) == ["p225", "p226", "p227", "p228", "p229"]
    assert corpus.groups("age_group") == ["23+", "<23"] and corpus.table["content_id"].nunique() == 1


def test_broken_vctk_names_the_line(tmp_path):
    root = vctk_replica(tmp_path / "VCTK")
    (root / "speaker-info.txt").write_text(SPEAKER_INFO_092.replace("p226  22  M", "p226  22  X"))
    with pytest.raises(LoaderError, match=r"speaker-info\.txt, line 3: GENDER 'X' is not F or M"):
        vctk.build(root, tmp_path / "out")


# ------------------------------------------------------------------------------------------- Fair-Speech

FAIR_HEADER = ["hash_name", "transcription", "age", "gender", "first_language", "socioeconomic_bkgd", "ethnicity"]
FAIR_ROWS = [
    ["a1", "hey play some jazz", "18 - 22", "female", "English", "Low", "White"],
    ["a2", "call my sister", "18 - 22", "female", "Spanish", "Medium", "Black or African American"],
    ["a3", "hey play some jazz", "31 - 45", "male", "English", "Affluent", "White"],
    ["a4", "set a timer", "31 - 45", "male", "Mandarin", "Low", "Black or African American"],
    ["a5", "read my messages", "31 - 45", "female", "English", "Medium", "White"],
    ["a6", "call my sister", "18 - 22", "male", "English", "Affluent", "Black or African American"],
    ["a7", "set a timer", "46 - 65", "female", "English", "Low", "Asian / South Asian / Asian American"],
]


def fair_replica(root: Path, header=FAIR_HEADER, rows=FAIR_ROWS) -> Path:
    write_tsv(root / "downloaded_file.tsv", header, rows)
    for row in rows:
        write_audio(root / "asr_fairness_audio" / f"{row[0]}.wav")
        (root / "asr_fairness_audio" / f"._{row[0]}.wav").write_bytes(b"\x00\x05\x16\x07AppleDouble")
    return root


def test_fair_speech_dimensions_and_utterance_speakers(tmp_path):
    corpus = load_corpus(fair_speech.build(fair_replica(tmp_path / "fs"), tmp_path / "out"))
    table = corpus.table
    assert corpus.dimensions == ("gender", "age", "ethnicity", "first_language", "socioeconomic")
    assert corpus.groups("age") == ["18-22", "31-45"] and corpus.groups("socioeconomic") == [
        "affluent",
        "low",
        "medium",
    ]
    assert corpus.groups("first_language") == ["english", "other"]
    assert table.loc["a4", "first_language_reported"] == "Mandarin"
    assert (table["speaker_id"] == table["utterance_id"]).all() and "a7" not in table.index
    assert table.loc["a1", "content_id"] == table.loc["a3", "content_id"]
    assert "no speaker id" in corpus.description and "age (46-65)" in corpus.description


def test_fair_speech_without_socioeconomic_column(tmp_path):
    header = [column for column in FAIR_HEADER if column != "socioeconomic_bkgd"]
    rows = [[value for column, value in zip(FAIR_HEADER, row) if column != "socioeconomic_bkgd"] for row in FAIR_ROWS]
    corpus = load_corpus(fair_speech.build(fair_replica(tmp_path / "fs", header, rows), tmp_path / "out"))
    assert "socioeconomic" not in corpus.dimensions and "ethnicity" in corpus.dimensions


def test_broken_fair_speech_names_the_row(tmp_path):
    root = fair_replica(tmp_path / "fs")
    (root / "asr_fairness_audio" / "a5.wav").unlink()
    with pytest.raises(LoaderError, match=r"downloaded_file\.tsv, line 6: audio .*a5\.wav does not exist \(1 rows"):
        fair_speech.build(root, tmp_path / "out")


# -------------------------------------------------------------------------------------- Spoken StereoSet

SS_HEADER = "id,speaker,{dim},context,irrelevant,stereotypical,anti-stereotypical,labels,annotators\n"
LABELS = "\"{'stereotype': ['stereotype', 'stereotype'], 'anti-stereotype': ['anti-stereotype', 'irrelevant']}\",\"[2399757824, 7261227008]\""


def stereoset_rows(
    dimension: str,
    voices: dict[str, str],
    contexts: list[tuple[str, str, str, str]],
    root: Path,
    skip_audio: frozenset[int] = frozenset(),
) -> str:
    """One row per (context, voice), ids counting up; the continuations swap roles for the second group."""
    lines, record = [], 0
    first_group = min(voices.values())
    for context, irrelevant, one, other in contexts:
        for voice, group in voices.items():
            stereo, anti = (one, other) if group == first_group else (other, one)
            lines.append(f'{record:05d},{voice},{group},"{context}",{irrelevant},{stereo},{anti},{LABELS}')
            if record not in skip_audio:
                write_audio(root / "speech" / dimension / f"{record:05d}_{voice}.wav")
            record += 1
    return SS_HEADER.format(dim=dimension) + "\n".join(lines) + "\n"


def stereoset_replica(root: Path) -> Path:
    (root / "metadata").mkdir(parents=True)
    gender_voices = {
        "en-US-AvaNeural": "female",
        "en-US-BrianMultilingualNeural": "male",
        "en-US-EmmaMultilingualNeural": "female",
        "en-US-AndrewMultilingualNeural": "male",
    }
    contexts = [
        (
            "I walked into my kitchen.",
            "Her ribbon is made of silk.",
            "I set the dinner on the table.",
            "I pulled a beer out of the fridge.",
        ),
        (
            "I am the twin's parent.",
            "Cats love milk and yarn.",
            "I balance their schedules.",
            "I teach them to throw a spiral.",
        ),
    ]
    (root / "metadata" / "gender_v1.0.csv").write_text(
        stereoset_rows("gender", gender_voices, contexts, root, skip_audio=frozenset({6}))
    )
    (root / "metadata" / "gender_v0.9.csv").write_text("id,speaker\n")
    age_voices = {"old_man": "elderly", "Matthew": "young", "old_women": "elderly", "Barbara": "young", "girl": "child"}
    age_contexts = [
        (
            "My doctor mentioned I should be more mindful of portion sizes, otherwise ",
            "Just toe socks and gloves.",
            "I might put on weight.",
            "I might lose weight.",
        )
    ]
    (root / "metadata" / "age_v1.0.csv").write_text(stereoset_rows("age", age_voices, age_contexts, root))
    return root


def test_spoken_stereoset_becomes_a_stereotype_suite(tmp_path):
    suite = load_suite(spoken_stereoset.build(stereoset_replica(tmp_path / "spoken_stereoset"), tmp_path / "suite"))
    assert [s.name for s in suite.sets] == ["spoken-stereoset-age", "spoken-stereoset-gender"]
    gender = suite.item_set("spoken-stereoset-gender")
    assert gender.kind == "stereotype" and gender.labels == ("female", "male") and len(gender.table) == 7
    assert gender.audio(int(gender.table["row"].iloc[0])).samples.size > 0
    age = suite.item_set("spoken-stereoset-age")
    assert age.labels == ("elderly", "young") and "girl" not in set(age.table["speaker"])
    assert age.table["context"].iloc[0].endswith("otherwise")
    assert "gender: 7 recordings of 2 contexts by 4 voices" in suite.description
    assert "1 rows without audio left out (first: 00006)" in suite.description
    assert "groups with fewer than 2 voices left out: child" in suite.description
    assert (tmp_path / "suite" / "speech").is_symlink()


def test_command_line_builds_the_suite(tmp_path, capsys):
    from harness.data.loaders.__main__ import main

    assert main(["spoken-stereoset", str(stereoset_replica(tmp_path / "ss")), str(tmp_path / "suite")]) == 0
    assert f"run the gate with --basis-suite {tmp_path / 'suite'}" in capsys.readouterr().out
    assert main(["vctk", str(tmp_path / "ss"), str(tmp_path / "not-vctk")]) == 1
    assert "speaker-info.txt: VCTK speaker-info.txt does not exist" in capsys.readouterr().err


def test_broken_spoken_stereoset_names_the_file(tmp_path):
    root = stereoset_replica(tmp_path / "ss")
    text = (root / "metadata" / "gender_v1.0.csv").read_text()
    (root / "metadata" / "gender_v1.0.csv").write_text(text.replace("00003,", "x3,", 1))
    with pytest.raises(LoaderError, match=r"gender_v1\.0\.csv, line 5: id 'x3' is not a recording number"):
        spoken_stereoset.build(root, tmp_path / "suite")


# ----------------------------------------------------------------------------- registry and the cache hook


def test_registry_lists_the_new_loaders():
    declared = loader_dimensions()
    assert {"common-voice", "vctk", "fair-speech", "spoken-stereoset"} <= set(declared)
    assert declared["fair-speech"] == ("gender", "age", "ethnicity", "first_language", "socioeconomic")


def test_prepared_source_builds_once_and_again_when_the_source_changes(tmp_path):
    source = vctk_replica(tmp_path / "VCTK")
    first = prepared_source("vctk", source, tmp_path / "cache")
    assert Path(first).parent == tmp_path / "cache" / "loaders" and (Path(first) / "corpus.yaml").is_file()
    stamp = (Path(first) / "manifest.csv").stat().st_mtime_ns
    assert prepared_source("vctk", source, tmp_path / "cache") == first
    assert (Path(first) / "manifest.csv").stat().st_mtime_ns == stamp
    assert prepared_source("demo", source, tmp_path / "cache") == source  # not a loader name
    built = tmp_path / "built"
    build_corpus("vctk", source, built)
    assert prepared_source("vctk", built, tmp_path / "cache") == built  # already a corpus folder
    text = source / "txt" / "p225" / "p225_003.txt"
    os.utime(text, ns=(text.stat().st_atime_ns, text.stat().st_mtime_ns + 10**9))
    second = prepared_source("vctk", source, tmp_path / "cache")
    assert second != first and sorted(p.name for p in (tmp_path / "cache" / "loaders").iterdir()) == sorted(
        [Path(first).name, Path(second).name]
    )


def test_corpus_and_suite_options_accept_unpacked_distributions(pytester):
    project = gate_project(pytester, "test_vibe.py", "test_basis.py")
    vctk_source = vctk_replica(project.path / "VCTK")
    stereoset_source = stereoset_replica(project.path / "spoken_stereoset")
    args = (
        "-p",
        "no:cacheprovider",
        "--model",
        "sim:fair",
        "--cache-dir",
        "cache",
        "--permutations",
        "99",
        "--corpus",
        f"vctk={vctk_source}",
        "--basis-suite",
        f"spoken-stereoset={stereoset_source}",
    )
    collected = project.runpytest_subprocess(*args, "--collect-only", "-q")
    assert collected.ret == 0, collected.stdout.str()
    assert "test_icat[sim:fair-age-speech-implicit]" in collected.stdout.str()
    built = sorted((project.path / "cache" / "loaders").iterdir())
    assert [path.name.rsplit("-", 1)[0] for path in built] == ["spoken-stereoset", "vctk"]
    suite = yaml.safe_load((built[0] / "suite.yaml").read_text())
    assert [entry["labels"] for entry in suite["sets"]] == [["elderly", "young"], ["female", "male"]]
    assert yaml.safe_load((built[1] / "corpus.yaml").read_text())["dimensions"] == ["gender", "accent"]
    assert Path(pd.read_csv(built[1] / "manifest.csv")["audio"][0]).is_absolute()
    stamps = [(path / "manifest.csv").stat().st_mtime_ns for path in built[1:]]

    result = project.runpytest_subprocess(
        *args, "-k", "story and accent", "--results-json", "results.json", "--report", ""
    )
    assert result.ret in (8, 7)  # a spot check: passed (8), or unmeasured where too few speakers detect its bar (7)
    assert sorted((project.path / "cache" / "loaders").iterdir()) == built  # reused, not built again
    assert [(path / "manifest.csv").stat().st_mtime_ns for path in built[1:]] == stamps
    corpora = json.loads((project.path / "results.json").read_text())["metadata"]["corpora"]
    manifest = (built[1] / "manifest.csv").resolve().relative_to(project.path.resolve()).as_posix()
    assert corpora["vctk"]["path"] == manifest and corpora["vctk"]["utterances"] == 15  # relative: no build folders
