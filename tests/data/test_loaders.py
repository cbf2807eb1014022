"""Corpus loaders on miniature replicas of each distribution's layout, and a broken replica per loader."""

import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.data import load_corpus
from harness.data.loaders import (
    LOADERS,
    LoaderError,
    build_corpus,
    corpus_loaders,
    crema_d,
    l2_arctic,
    librispeech,
    speech_accent_archive,
    suite_loaders,
)

from support.corpora import manifest, write_audio

# ------------------------------------------------------------------------------------------------ CREMA-D

CREMA_ACTORS = [
    ("1001", 25, "Male", "Caucasian"),
    ("1002", 21, "Female", "Caucasian"),
    ("1003", 42, "Male", "African American"),
    ("1004", 45, "Female", "African American"),
]


def crema_replica(root: Path) -> Path:
    root.mkdir(parents=True)
    pd.DataFrame(
        [(a, age, sex, race, "Not Hispanic") for a, age, sex, race in CREMA_ACTORS],
        columns=["ActorID", "Age", "Sex", "Race", "Ethnicity"],
    ).to_csv(root / "VideoDemographics.csv", index=False)
    for actor, *_ in CREMA_ACTORS:
        for sentence in ("DFA", "IEO"):
            for emotion, level in (("ANG", "HI"), ("NEU", "XX")):
                write_audio(root / "AudioWAV" / f"{actor}_{sentence}_{emotion}_{level}.wav")
    write_audio(root / "AudioWAV" / "1004_ITH_SAD_X.wav")
    return root


def test_crema_d_manifest(tmp_path):
    out = build_corpus(
        "crema-d", crema_replica(tmp_path / "CREMA-D"), tmp_path / "out", dimensions=["gender", "age_group", "race"]
    )
    corpus = load_corpus(out)
    assert corpus.name == "crema-d" and corpus.dimensions == ("gender", "age_group", "race")
    table = corpus.table
    assert len(table) == 17 and table["speaker_id"].nunique() == 4
    row = table.loc["1001_DFA_ANG_HI"]
    assert (row["content_id"], row["transcript"], row["gender"], row["emotion"], row["emotion_level"]) == (
        "DFA",
        "Don't forget a jacket.",
        "male",
        "anger",
        "high",
    )
    assert table.loc["1004_ITH_SAD_X", "emotion_level"] == "unspecified"
    assert corpus.groups("age_group") == ["40-49", "<30"] and corpus.groups("race") == ["african american", "caucasian"]
    assert not Path(row["audio"]).is_absolute() and corpus.audio(row.name).samples.size > 0


def test_crema_d_emotion_filter_and_absolute_paths(tmp_path):
    out = crema_d.build(crema_replica(tmp_path / "c"), tmp_path / "out", emotions=["NEU"], relative_audio=False)
    table = manifest(out)
    assert set(table["emotion"]) == {"neutral"} and len(table) == 8
    assert all(Path(path).is_absolute() for path in table["audio"])
    assert yaml.safe_load((out / "corpus.yaml").read_text())["dimensions"] == ["gender"]


@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda root: write_audio(root / "AudioWAV" / "1001_DFA_ANG.wav"), r"1001_DFA_ANG\.wav: file name is not"),
        (
            lambda root: write_audio(root / "AudioWAV" / "1001_ZZZ_ANG_HI.wav"),
            r"1001_ZZZ_ANG_HI\.wav: unknown sentence code 'ZZZ'",
        ),
        (
            lambda root: write_audio(root / "AudioWAV" / "1099_DFA_ANG_HI.wav"),
            r"1099_DFA_ANG_HI\.wav: actor 1099 is not in .*VideoDemographics\.csv",
        ),
        (
            lambda root: (root / "AudioWAV" / "1002_DFA_NEU_XX.wav").write_text(
                "version https://git-lfs.github.com/spec/v1\noid sha256:ab\n"
            ),
            r"1002_DFA_NEU_XX\.wav: audio file cannot be read .*git-lfs pointer",
        ),
        (
            lambda root: (root / "VideoDemographics.csv").write_text(
                "ActorID,Age,Sex,Race,Ethnicity\n1001,25,Male,Caucasian,x\n1002,21,Unknown,Asian,x\n"
            ),
            r"VideoDemographics\.csv, line 3: Sex 'Unknown' is not Male or Female",
        ),
    ],
)
def test_broken_crema_d_names_the_file(tmp_path, break_it, message):
    root = crema_replica(tmp_path / "c")
    break_it(root)
    with pytest.raises(LoaderError, match=message):
        crema_d.build(root, tmp_path / "out")


# --------------------------------------------------------------------------------- Speech Accent Archive

SAA_SPEAKERS = {
    "english": (3, 3),
    "spanish": (5, 3),
    "french": (2, 3),
    "arabic": (2, 2),
    "mandarin": (2, 2),
    "korean": (2, 2),
    "russian": (2, 2),
    "german": (1, 1),
}


def saa_replica(root: Path) -> Path:
    rows, speaker_id = [], 0
    for language, (women, men) in SAA_SPEAKERS.items():
        for index, sex in enumerate(["female"] * women + ["male"] * men, start=1):
            speaker_id += 1
            sex = "famale" if (language, index) == ("korean", 1) else sex
            rows.append((27, 10, "somewhere", f"{language}{index}", language, sex, speaker_id, "country", False))
            write_audio(root / "recordings" / "recordings" / f"{language}{index}.mp3", fmt="MP3")
    rows.append((30, 5, "elsewhere", "spanish99", "spanish", "male", 999, "spain", True))  # flagged missing, no file
    frame = pd.DataFrame(
        rows,
        columns=[
            "age",
            "age_onset",
            "birthplace",
            "filename",
            "native_language",
            "sex",
            "speakerid",
            "country",
            "file_missing?",
        ],
    )
    frame.assign(**{"Unnamed: 9": "", "Unnamed: 10": ""}).to_csv(root / "speakers_all.csv", index=False)
    return root


def test_saa_picks_six_languages_balanced_by_gender(tmp_path):
    out = speech_accent_archive.build(saa_replica(tmp_path / "saa"), tmp_path / "out", seed=3)
    corpus = load_corpus(out)
    table = corpus.table
    assert corpus.dimensions == ("accent", "gender")
    assert corpus.groups("accent") == ["arabic", "french", "korean", "mandarin", "russian", "spanish"]
    counts = table.groupby(["accent", "gender"]).size().unstack()
    assert (
        (counts["female"] == counts["male"]).all()
        and counts.loc["spanish", "female"] == 3
        and counts.loc["french", "male"] == 2
    )
    assert len(table) == 26 and table["speaker_id"].is_unique and set(table["content_id"]) == {"please_call_stella"}
    assert "korean1" in table.index  # sex 'famale' read as female
    again = manifest(speech_accent_archive.build(tmp_path / "saa", tmp_path / "again", seed=3))
    assert list(again["utterance_id"]) == list(manifest(out)["utterance_id"])
    chosen = {
        tuple(manifest(speech_accent_archive.build(tmp_path / "saa", tmp_path / f"s{seed}", seed=seed))["utterance_id"])
        for seed in range(6)
    }
    assert len(chosen) > 1  # the larger gender is subsampled by the seed


def test_saa_languages_can_be_named(tmp_path):
    out = speech_accent_archive.build(saa_replica(tmp_path / "saa"), tmp_path / "out", languages=["Arabic", "Korean"])
    assert load_corpus(out).groups("accent") == ["arabic", "korean"]


def test_broken_saa_names_the_missing_recording(tmp_path):
    root = saa_replica(tmp_path / "saa")
    (root / "recordings" / "recordings" / "arabic2.mp3").unlink()
    with pytest.raises(
        LoaderError, match=r"recordings/arabic2\.mp3: recording of .*speakers_all\.csv line \d+ does not exist"
    ):
        speech_accent_archive.build(root, tmp_path / "out")


def test_saa_without_mp3_support_or_ffmpeg_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(speech_accent_archive, "soundfile_reads_mp3", lambda: False)
    monkeypatch.setattr(speech_accent_archive.shutil, "which", lambda name: None)
    with pytest.raises(LoaderError, match=r"\.mp3: this libsndfile .* cannot read MP3 and ffmpeg is not on PATH"):
        speech_accent_archive.build(saa_replica(tmp_path / "saa"), tmp_path / "out")


def test_saa_decodes_mp3_with_ffmpeg_when_libsndfile_cannot(tmp_path, monkeypatch):
    # A stand-in ffmpeg on PATH (decoding with soundfile) exercises the real subprocess branch.
    fake = tmp_path / "bin" / "ffmpeg"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\nimport sys, soundfile\n"
        "samples, rate = soundfile.read(sys.argv[sys.argv.index('-i') + 1])\n"
        "soundfile.write(sys.argv[-1], samples, rate)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(speech_accent_archive, "soundfile_reads_mp3", lambda: False)
    out = speech_accent_archive.build(saa_replica(tmp_path / "saa"), tmp_path / "out", languages=["arabic", "korean"])
    assert all(path.startswith("audio/") and path.endswith(".flac") for path in manifest(out)["audio"])
    assert load_corpus(out).audio("arabic1").samples.size > 0


# ----------------------------------------------------------------------------------------------- L2-ARCTIC

L2_SENTENCES = {
    "arctic_a0001": "Author of the danger trail, Philip Steels, etc.",
    "arctic_a0002": "Not at this particular case, Tom, apologized Whittemore.",
    "arctic_a0003": "For the twentieth time that evening the two men shook hands.",
    "arctic_a0004": "They were three hundred miles from the nearest settlement.",
}


def l2_replica(root: Path) -> Path:
    for code in l2_arctic.SPEAKERS:
        for sentence, text in L2_SENTENCES.items():
            if code == "NJS" and sentence == "arctic_a0004":
                continue  # not read by every speaker: dropped
            write_audio(root / code / "wav" / f"{sentence}.wav")
            (root / code / "transcript").mkdir(parents=True, exist_ok=True)
            (root / code / "transcript" / f"{sentence}.txt").write_text(text + "\n")
    (root / "suitcase_corpus").mkdir()
    return root


def test_demographic_word_filter():
    assert l2_arctic.demographic_words_in("The two men shook hands; the old Lady's hat.") == ["men", "old", "lady"]
    assert l2_arctic.demographic_words_in("They were three hundred miles away.") == []


def test_l2_arctic_keeps_common_sentences_without_demographic_words(tmp_path):
    corpus = load_corpus(l2_arctic.build(l2_replica(tmp_path / "l2"), tmp_path / "out"))
    table = corpus.table
    assert set(table["content_id"]) == {"arctic_a0001", "arctic_a0002"} and len(table) == 48
    assert corpus.dimensions == ("accent", "gender")
    assert corpus.groups("accent") == ["arabic", "hindi", "korean", "mandarin", "spanish", "vietnamese"]
    per_accent = table.groupby(["accent", "gender"])["speaker_id"].nunique()
    assert (per_accent == 2).all()
    assert table.loc["ABA_arctic_a0002", "transcript"] == L2_SENTENCES["arctic_a0002"]
    assert "1 were dropped for a gender, age or race word" in corpus.description


def test_l2_arctic_sentence_draw(tmp_path):
    root = l2_replica(tmp_path / "l2")
    assert manifest(l2_arctic.build(root, tmp_path / "one", n_sentences=1, seed=0))["content_id"].nunique() == 1
    with pytest.raises(LoaderError, match="n_sentences=3 but only 2 sentences"):
        l2_arctic.build(root, tmp_path / "three", n_sentences=3)


def test_broken_l2_arctic_names_the_file(tmp_path):
    root = l2_replica(tmp_path / "l2")
    (root / "TNI" / "transcript" / "arctic_a0002.txt").unlink()
    with pytest.raises(
        LoaderError, match=r"TNI/wav/arctic_a0002\.wav: no transcript at .*TNI/transcript/arctic_a0002\.txt"
    ):
        l2_arctic.build(root, tmp_path / "out")
    shutil.rmtree(root / "ABA")
    (root / "ABA.zip").write_bytes(b"PK")
    with pytest.raises(
        LoaderError, match=r"ABA: L2-ARCTIC speaker folder does not exist \(.*ABA\.zip exists: unzip it first\)"
    ):
        l2_arctic.build(root, tmp_path / "out")


# --------------------------------------------------------------------------------------------- LibriSpeech

SPEAKERS_TXT = """; Some comment lines
;ID  |SEX| SUBSET           |MINUTES| NAME
84   | F | dev-clean        |  8.02 | Christie Nowak
174  | M | dev-clean        |  8.04 | Peter Eastman
251  | M | dev-clean        |  8.04 | Mark Nelson
60   | M | train-clean-100  | 20.18 | |CBW|Simon
422  | F | dev-clean        |  8.38 | President Lethe
"""


def libri_replica(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "SPEAKERS.TXT").write_text(SPEAKERS_TXT)
    for speaker, chapter in (("84", "121123"), ("174", "50561"), ("251", "136532"), ("422", "122949")):
        folder = root / "dev-clean" / speaker / chapter
        lines = []
        for index in range(3):
            utterance = f"{speaker}-{chapter}-{index:04d}"
            write_audio(folder / f"{utterance}.flac", fmt="FLAC")
            lines.append(f"{utterance} SOME TEXT NUMBER {index}")
        (folder / f"{speaker}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    return root


def test_librispeech_manifest(tmp_path):
    corpus = load_corpus(librispeech.build(libri_replica(tmp_path / "LibriSpeech"), tmp_path / "out"))
    table = corpus.table
    assert corpus.dimensions == ("gender",) and len(table) == 12 and corpus.groups("gender") == ["female", "male"]
    assert table.loc["84-121123-0001", "transcript"] == "SOME TEXT NUMBER 1"
    assert (table["content_id"] == table["utterance_id"]).all()
    limited = manifest(librispeech.build(tmp_path / "LibriSpeech", tmp_path / "few", max_utterances_per_speaker=2))
    assert limited.groupby("speaker_id").size().tolist() == [2, 2, 2, 2]


def test_speakers_txt_names_may_contain_bars(tmp_path):
    speakers = librispeech.read_speakers(libri_replica(tmp_path / "LibriSpeech") / "SPEAKERS.TXT")
    assert speakers.loc["60", "name"] == "|CBW|Simon" and speakers.loc["84", "gender"] == "female"


def test_broken_librispeech_names_the_file_and_line(tmp_path):
    root = libri_replica(tmp_path / "LibriSpeech")
    (root / "dev-clean" / "174" / "50561" / "174-50561-0002.flac").unlink()
    with pytest.raises(
        LoaderError, match=r"174-50561\.trans\.txt, line 3: audio .*174-50561-0002\.flac does not exist"
    ):
        librispeech.build(root, tmp_path / "out")
    (root / "SPEAKERS.TXT").write_text(
        SPEAKERS_TXT.replace("| M | dev-clean        |  8.04 | Peter", "| X | dev-clean | 8.04 | Peter")
    )
    with pytest.raises(LoaderError, match=r"SPEAKERS\.TXT, line 4: SEX 'X' is not F or M"):
        librispeech.build(root, tmp_path / "out")


def test_registry():
    assert sorted(corpus_loaders()) == [
        "air-bench-chat",
        "common-voice",
        "crema-d",
        "fair-speech",
        "l2-arctic",
        "librispeech",
        "speech-accent-archive",
        "vctk",
    ]
    assert sorted(suite_loaders()) == ["librisqa", "sd-qa", "spoken-stereoset", "spoken-stereoset-plus"] and sorted(
        LOADERS
    ) == sorted({*corpus_loaders(), *suite_loaders()})
    with pytest.raises(KeyError, match="no loader for corpus 'timit'"):
        build_corpus("timit", ".", ".")


def test_command_line_builds_a_corpus_the_gate_loads(tmp_path, capsys):
    from harness.data import load_corpus
    from harness.data.loaders.__main__ import main

    source = libri_replica(tmp_path / "src")
    assert main(["librispeech", str(source), str(tmp_path / "out")]) == 0
    assert "--corpus librispeech=" in capsys.readouterr().out
    assert len(load_corpus(tmp_path / "out").table) > 0
    assert main(["librispeech", str(tmp_path / "nowhere"), str(tmp_path / "out2")]) == 1
    assert "error:" in capsys.readouterr().err
