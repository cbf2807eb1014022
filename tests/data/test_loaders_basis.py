"""SD-QA and LibriSQA suite loaders (BASIS-Bench §3.1) on miniature replicas of their released layouts, the
quirks each handles, and a broken replica per loader."""

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.data.basis_suite import BasisError, load_suite
from harness.data.loaders import LoaderError, librisqa, sd_qa, suite_loaders
from harness.data.loaders.__main__ import main

from support.corpora import write_audio

# ------------------------------------------------------------------------------------------------- SD-QA

QUESTIONS = [
    ("7361157181217651048", "Do zebra finches have stripes?"),
    ("-3215621880858840488", "What is a way to increase your wound healing speed?"),
    ("-4583759397577406538", "How is cultural relativism used?"),
    ("5888115353945373749", "Who founded the Burntisland Shipbuilding Company?"),
    ("-8455955749391491801", "What is the surface area of the human cortex?"),
]
RECORDINGS = {
    "aus": [(0, "3819262"), (1, "3819262"), (2, "AUS2907198"), (3, "AUS2907198"), (4, "AUS2907198")],
    "gbr": [(0, "-736077346"), (1, "2010941376"), (2, "2010941376"), (3, "-736077346")],
    "kenya": [(0, "1024743222"), (1, "1024743222")],
}
LOCALES = {"aus": ("en-AU", "en-US"), "gbr": ("en-GB", "en-US"), "kenya": ("en-KE", "en-US")}
ANSWERS = {
    0: ["The T. g. guttata males do not have the fine barring found on the throat.", "fine barring"],
    1: ["Wound care", "Wound care encourages and speeds wound healing via cleaning.", "cleaning and protection"],
    3: ["Amos and Wilfrid Ayre", "Brothers Amos and Wilfrid Ayre"],
    4: ["1.3 square feet", "2.3–2.8mm", "—"],
}
MISSING_WAV = ("aus", 3)


def triples_line(question: int, dialect: str) -> str:
    example_id, text = QUESTIONS[question]
    spans = ANSWERS.get(question, [])
    return json.dumps(
        {
            "example_id": int(example_id),
            "question": text.lower().rstrip("?") + " ?",
            "answer": spans[0] if spans else "-1",
            "answers": spans,
            "has_answer": bool(spans),
            "audio_path": f"SD-QA/test/eng/{dialect}/wav_eng/{example_id}.wav",
            "audio_exists": True,
        }
    )


def sd_qa_replica(root: Path) -> Path:
    english = root / "test" / "eng"
    english.mkdir(parents=True)
    asr_columns = [f"{dialect}-{locale}" for dialect, locales in LOCALES.items() for locale in locales]
    pd.DataFrame(
        [[example_id, "False", text, *[text.lower().rstrip("?")] * len(asr_columns)] for example_id, text in QUESTIONS],
        columns=["ID", "in XOR test", "english-gold", *asr_columns],
    ).to_csv(english / "english.test.csv")
    for dialect, rows in RECORDINGS.items():
        folder = english / dialect
        metadata = []
        for question, user in rows:
            example_id = QUESTIONS[question][0]
            audio = f"test/eng/{dialect}/wav_eng/{example_id}.wav"
            metadata.append([example_id, user, dialect, "eng", "male", "39", "ios", "[]", "", audio])
            if (dialect, question) != MISSING_WAV:
                write_audio(root / audio)
        pd.DataFrame(
            metadata,
            columns=[
                "example_id",
                "user_id",
                "region",
                "language",
                "gender",
                "age",
                "device",
                "lang_spoken",
                "mother_tongue",
                "audio_file",
            ],
        ).to_csv(folder / "metadata.csv")
        for locale in LOCALES[dialect]:
            recorded = [question for question, _ in rows if not (question == 4 and locale.endswith("US"))]
            answered_here = [q for q in recorded if q != 3 or dialect == "gbr"]
            (folder / f"english.test.{dialect}-{locale}.triples.jsonl").write_text(
                "".join(triples_line(question, dialect) + "\n" for question in answered_here)
            )
            (folder / f"english.test.{dialect}-{locale}.txt").write_text(
                "".join(f"{QUESTIONS[q][0]}\t{QUESTIONS[q][1].lower()}\n" for q, _ in rows)
            )
    return root


def test_sd_qa_becomes_an_asr_and_a_qa_set_by_accent(tmp_path):
    suite = load_suite(sd_qa.build(sd_qa_replica(tmp_path / "SD-QA"), tmp_path / "suite"))
    assert [s.name for s in suite.sets] == ["sd-qa-asr", "sd-qa-qa"]
    asr, qa = suite.item_set("sd-qa-asr"), suite.item_set("sd-qa-qa")
    assert asr.kind == "asr" and asr.dimension == "accent" and asr.labels == ("aus", "gbr")
    assert len(asr.table) == 8 and asr.table["speaker"].nunique() == 4
    assert asr.table.groupby("label")["speaker"].nunique().to_dict() == {"aus": 2, "gbr": 2}
    first = asr.table.set_index(["id", "speaker"]).loc[(0, "aus-3819262")]
    assert first["transcript"] == "Do zebra finches have stripes?"
    assert Path(first["audio"]).name == "00000_aus-3819262.wav"
    assert qa.kind == "qa" and qa.labels == ("aus", "gbr") and len(qa.table) == 6
    assert sorted(qa.table["id"].unique()) == [0, 1, 3, 4]
    assert asr.audio(int(asr.table["row"].iloc[0])).samples.size > 0


def test_sd_qa_quirks_are_handled_and_counted(tmp_path):
    output = sd_qa.build(sd_qa_replica(tmp_path / "SD-QA"), tmp_path / "suite")
    suite = load_suite(output)
    qa = suite.item_set("sd-qa-qa").table.drop_duplicates("id").set_index("id")
    assert qa.loc[0, "answer"] == "fine barring" and qa.loc[1, "answer"] == "Wound care"
    assert qa.loc[4, "answer"] == "2.3–2.8mm" and json.loads(qa.loc[4, "answers"]) == ANSWERS[4][:2]
    assert json.loads(qa.loc[3, "answers"]) == ANSWERS[3]
    assert qa.loc[3, "example_id"] == QUESTIONS[3][0]
    assert "8 recordings of 5 questions by 4 speakers (aus 2, gbr 2)" in suite.description
    assert "1 metadata rows without audio left out (first: aus/wav_eng/5888115353945373749.wav)" in suite.description
    assert "accents with fewer than 2 speakers left out: kenya" in suite.description
    assert "1 of 5 questions have no gold answer" in suite.description
    links = sorted((output / "speech" / "accent").iterdir())
    assert len(links) == 8 and all(link.is_symlink() and not Path(link.readlink()).is_absolute() for link in links)


def test_sd_qa_rebuild_replaces_its_links_and_can_write_absolute_ones(tmp_path):
    source = sd_qa_replica(tmp_path / "SD-QA")
    output = sd_qa.build(source, tmp_path / "suite")
    (source / "test" / "eng" / "gbr" / "wav_eng" / f"{QUESTIONS[2][0]}.wav").unlink()
    sd_qa.build(source, output, relative_audio=False, check_audio=False)
    links = sorted((output / "speech" / "accent").iterdir())
    assert len(links) == 7 and all(Path(link.readlink()).is_absolute() for link in links)
    assert len(load_suite(output).item_set("sd-qa-asr").table) == 7


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda eng: (eng / "english.test.csv").unlink(), r"english\.test\.csv: SD-QA question list does not exist"),
        (
            lambda eng: (eng / "gbr" / "metadata.csv").write_text("example_id,speaker\n1,2\n"),
            r"gbr/metadata\.csv: SD-QA gbr metadata lacks column\(s\) \['user_id'\]",
        ),
        (
            lambda eng: (eng / "aus" / "metadata.csv").write_text(
                (eng / "aus" / "metadata.csv").read_text().replace(QUESTIONS[1][0], "123", 1)
            ),
            r"aus/metadata\.csv, line 3: example_id '123' is not a question of",
        ),
        (
            lambda eng: (eng / "gbr" / "english.test.gbr-en-GB.triples.jsonl").write_text('{"example_id": 1}\n{oops\n'),
            r"english\.test\.gbr-en-GB\.triples\.jsonl, line 1: expected an object with 'example_id' and an 'answers'",
        ),
        (
            lambda eng: [path.unlink() for path in eng.glob("*/wav_eng/*.wav")],
            r"test/eng: no recording has its audio under <dialect>/wav_eng/",
        ),
    ],
    ids=["missing-question-list", "bad-column", "unknown-question", "bad-triples", "missing-audio"],
)
def test_broken_sd_qa_names_the_file(tmp_path, break_it, message):
    root = sd_qa_replica(tmp_path / "SD-QA")
    break_it(root / "test" / "eng")
    with pytest.raises(LoaderError, match=message):
        sd_qa.build(root, tmp_path / "suite")


def test_sd_qa_unreadable_audio_names_the_row(tmp_path):
    root = sd_qa_replica(tmp_path / "SD-QA")
    (root / "test" / "eng" / "gbr" / "wav_eng" / f"{QUESTIONS[1][0]}.wav").write_bytes(b"not audio")
    with pytest.raises(BasisError, match=r"asr\.csv, row \d+"):
        sd_qa.build(root, tmp_path / "suite")


# --------------------------------------------------------------------------------------------- LibriSQA

SPEAKERS_TXT = """; LibriSpeech speakers
;ID  |SEX| SUBSET           |MINUTES| NAME
1089 | M | test-clean       |  8.07 | Jeff Sperry
121  | F | test-clean       |  8.05 | Denise Nadeau
237  | F | test-clean       |  8.02 | Sandy Wells
260  | M | test-clean       |  8.05 | Tom Weiss
672  | M | test-clean       |  8.07 | Jake Brown
"""
UTTERANCES = {
    "1089": ("134686", 2),
    "121": ("121726", 2),
    "237": ("126133", 1),
    "260": ("123286", 1),
    "672": ("122797", 1),
}


def librisqa_replica(root: Path) -> Path:
    corpus = root / "LibriSpeech"
    corpus.mkdir(parents=True)
    (corpus / "SPEAKERS.TXT").write_text(SPEAKERS_TXT)
    entries = []
    for speaker, (chapter, count) in UTTERANCES.items():
        for index in range(count):
            utterance = f"{speaker}-{chapter}-{index:04d}"
            if utterance != "672-122797-0000":
                write_audio(corpus / "test-clean" / speaker / chapter / f"{utterance}.flac", fmt="FLAC")
            entries.append(
                {
                    "speech_path": f"LibriSpeech/test-clean/{speaker}/{chapter}/{utterance}.wav",
                    "question": f"What does the speaker describe in passage {utterance}?",
                    "answer": f"The speaker describes the scene of passage {utterance}.",
                    "text": f"SOME TEXT OF {utterance}",
                    "duration": 10.4,
                }
            )
    (root / "LibriSQA-PartI").mkdir()
    (root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json").write_text(json.dumps(entries, indent=4))
    return root


def test_librisqa_becomes_a_qa_set_by_gender(tmp_path):
    suite = load_suite(librisqa.build(librisqa_replica(tmp_path / "librisqa"), tmp_path / "suite"))
    qa = suite.item_set("librisqa")
    assert qa.kind == "qa" and qa.dimension == "gender" and qa.labels == ("female", "male")
    assert len(qa.table) == 6 and qa.table.groupby("label")["speaker"].nunique().to_dict() == {"female": 2, "male": 2}
    first = qa.table.set_index("id").loc[0]
    assert first["speaker"] == "1089" and first["label"] == "male" and first["utterance"] == "1089-134686-0000"
    assert first["answer"] == "The speaker describes the scene of passage 1089-134686-0000."
    assert first["passage"] == "SOME TEXT OF 1089-134686-0000"
    assert Path(first["audio"]).name == "00000_1089.flac" and qa.audio(int(first["row"])).samples.size > 0
    assert "6 questions on 6 utterances by 4 speakers (female 2, male 2)" in suite.description
    assert "1 entries whose utterance is not below the LibriSpeech folder left out (first: 672-122797-0000)" in (
        suite.description
    )


def test_librisqa_finds_the_flac_whatever_the_speech_path_prefix(tmp_path):
    root = librisqa_replica(tmp_path / "librisqa")
    metafile = root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json"
    entries = json.loads(metafile.read_text())
    entries[0]["speech_path"] = "/home/someone/data/test-clean/1089/134686/1089-134686-0000.wav"
    metafile.write_text(json.dumps(entries))
    elsewhere = tmp_path / "corpora" / "LibriSpeech"
    elsewhere.parent.mkdir()
    (root / "LibriSpeech").rename(elsewhere)
    suite = load_suite(librisqa.build(root, tmp_path / "suite", librispeech=elsewhere, relative_audio=False))
    assert len(suite.item_set("librisqa").table) == 6


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (
            lambda root: (root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json").unlink(),
            r"LibriSQA-PartI-test\.json: LibriSQA Part I metafile does not exist",
        ),
        (
            lambda root: (root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json").write_text(
                (root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json").read_text().replace('"answer"', '"reply"', 1)
            ),
            r"LibriSQA-PartI-test\.json, entry 0: missing or empty \['answer'\]",
        ),
        (
            lambda root: (root / "LibriSQA-PartI" / "LibriSQA-PartI-test.json").write_text('[{"speech_path": ,}]'),
            r"LibriSQA-PartI-test\.json, line 1: not valid JSON",
        ),
        (
            lambda root: (root / "LibriSpeech" / "SPEAKERS.TXT").write_text(
                SPEAKERS_TXT.replace("237  | F", "237  | X")
            ),
            r"SPEAKERS\.TXT, line 5: SEX 'X' is not F or M",
        ),
        (
            lambda root: (root / "LibriSpeech" / "SPEAKERS.TXT").write_text(
                SPEAKERS_TXT.replace("260  | M", "261  | M")
            ),
            r"LibriSQA-PartI-test\.json, entry 5: speaker 260 is not in .*SPEAKERS\.TXT",
        ),
        (
            lambda root: [path.unlink() for path in (root / "LibriSpeech").rglob("*.flac")],
            r"LibriSQA-PartI-test\.json: no entry has its utterance's \.flac below",
        ),
    ],
    ids=["missing-metafile", "missing-key", "bad-json", "bad-speakers", "unknown-speaker", "missing-audio"],
)
def test_broken_librisqa_names_the_file(tmp_path, break_it, message):
    root = librisqa_replica(tmp_path / "librisqa")
    break_it(root)
    with pytest.raises(LoaderError, match=message):
        librisqa.build(root, tmp_path / "suite")


# ----------------------------------------------------------------------------------- registry and command line


def test_the_suite_loaders_are_registered():
    assert {"sd-qa", "librisqa"} <= set(suite_loaders())
    assert sd_qa.DIMENSIONS == ("accent",) and librisqa.DIMENSIONS == ("gender",)


@pytest.mark.parametrize(("name", "replica"), [("sd-qa", sd_qa_replica), ("librisqa", librisqa_replica)])
def test_command_line_builds_the_suite(tmp_path, capsys, name, replica):
    source = replica(tmp_path / "source")
    assert main([name, str(source), str(tmp_path / "suite")]) == 0
    assert f"run the gate with --basis-suite {tmp_path / 'suite'}" in capsys.readouterr().out
    assert load_suite(tmp_path / "suite").sets
    assert main([name, str(tmp_path / "nowhere"), str(tmp_path / "other")]) == 1
    assert "nowhere" in capsys.readouterr().err


def test_built_suites_compose_into_one_suite_yaml_as_the_paper_runs_them(tmp_path):
    """docs/corpora.md: a suite.yaml listing the sets of several built loaders, by relative metadata paths."""
    import yaml

    sd_qa.build(sd_qa_replica(tmp_path / "SD-QA"), tmp_path / "suites" / "sd-qa")
    librisqa.build(librisqa_replica(tmp_path / "LibriSQA"), tmp_path / "suites" / "librisqa")
    sets = []
    for name in ("sd-qa", "librisqa"):
        config = yaml.safe_load((tmp_path / "suites" / name / "suite.yaml").read_text())
        sets += [entry | {"metadata": f"{name}/{entry['metadata']}"} for entry in config["sets"]]
    (tmp_path / "suites" / "suite.yaml").write_text(yaml.safe_dump({"name": "paper", "sets": sets}))
    suite = load_suite(tmp_path / "suites")
    assert [s.kind for s in suite.sets] == ["asr", "qa", "qa"]
    assert suite.dimensions("qa") == ["accent", "gender"]
    assert all(path.is_file() for s in suite.sets for path in s.table["audio"])
