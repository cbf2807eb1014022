"""Issue 61, item 4: voices are the speakers. A suite with one voice per accent can give no accent verdict, however
far its accents' answers differ: every test over an accent permutes, resamples or models whole voices, so one voice
per group is one unit per group. The builder and the loader refuse it, the nTVD test over voices cannot go below
p = 1 on it, and the least design the loader takes (2 voices per accent, each accent one gender, so that sim:biased's
pitch-driven answers differ by accent on every utterance) leaves every accent case unmeasured, none failed."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.data import load_corpus
from harness.metrics.ntvd import permutation_test
from harness.suite.cli import main as suite_main

from support.gate import gate_project
from support.suite_inputs import needs_espeak, write_items

pytest_plugins = ["pytester"]
DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"


@needs_espeak
def test_the_builder_refuses_one_voice_per_accent(tmp_path, capsys):
    voices = "espeak-ng:en-us+f1@accent=us,espeak-ng:en-gb+m1@accent=gb"
    assert suite_main(["build", "--items", str(write_items(tmp_path)), "--voices", voices, "--out",
                       str(tmp_path / "suite"), "--no-wer-filter", "--no-perceived-filter", "--no-outliers"]) == 4  # fmt: skip
    assert "dimension 'accent' needs at least 2 voices in each of at least 2 groups" in capsys.readouterr().err


@needs_espeak
def test_one_voice_is_one_speaker_the_builder_refuses_a_voice_given_twice_under_two_speaker_ids(tmp_path, capsys):
    # the same sound twice makes the same clips: two speakers of a group would be one voice counted twice
    voices = ("espeak-ng:en-us+f1@accent=us@speaker=a,espeak-ng:en-us+f1@accent=us@speaker=b,"
              "espeak-ng:en-gb+m1@accent=gb,espeak-ng:en-gb+m2@accent=gb")  # fmt: skip
    assert suite_main(["build", "--items", str(write_items(tmp_path)), "--voices", voices, "--out",
                       str(tmp_path / "suite"), "--no-wer-filter", "--no-perceived-filter", "--no-outliers"]) == 4  # fmt: skip
    assert ("voice spec 'espeak-ng:en-us+f1@accent=us' (speaker b) sounds as speaker a does: one voice is one "
            "speaker") in capsys.readouterr().err  # fmt: skip


def one_accent_corpus(folder: Path, speakers: dict[str, str]) -> Path:
    """A corpus of the demo's recordings of ``speakers`` (speaker id -> the accent it is labelled with)."""
    (folder / "audio").mkdir(parents=True)
    with open(DEMO / "manifest.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["speaker_id"] in speakers]
    with open(folder / "manifest.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["utterance_id", "audio", "speaker_id", "content_id", "transcript", "accent"])
        for row in rows:
            shutil.copy(DEMO / row["audio"], folder / row["audio"])
            writer.writerow([row["utterance_id"], row["audio"], row["speaker_id"], row["content_id"],
                             row["transcript"], speakers[row["speaker_id"]]])  # fmt: skip
    (folder / "corpus.yaml").write_text("name: accents\nmanifest: manifest.csv\ndimensions: [accent]\n")
    return folder


def test_the_loader_refuses_a_corpus_of_one_voice_per_accent(tmp_path):
    corpus = one_accent_corpus(tmp_path / "one", {"spk01": "us", "spk07": "british"})
    with pytest.raises(ValueError, match="has 1 speaker\\(s\\); at least 2 are needed for a speaker-level test"):
        load_corpus(corpus)


def test_a_permutation_over_one_voice_per_accent_cannot_go_below_p_one():
    # 2 accents x 1 voice x 200 answers, every answer of one accent "a", of the other "b": an nTVD of 100
    rows = [(speaker, accent, "field", value) for speaker, accent, value in (("v1", "us", "a"), ("v2", "gb", "b"))
            for _ in range(200)]  # fmt: skip
    result = permutation_test(pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"]), tau=1,
                              n_permutations=99)  # fmt: skip
    assert result.observed == pytest.approx(100.0)
    assert result.floor.design_p == 1.0 and result.p_value == 1.0 and np.all(result.null == result.observed)


def test_two_voices_per_accent_split_by_gender_leave_sim_biased_accent_case_unmeasured(pytester):
    gate_project(pytester, "test_vibe.py")
    corpus = one_accent_corpus(pytester.path / "accents", {"spk01": "us", "spk02": "us",
                                                           "spk07": "british", "spk08": "british"})  # fmt: skip
    pytester.runpytest_inprocess("--model", "sim:biased", "--corpus", f"accents={corpus}", "-k",
                                 "accent and advisory", "-p", "no:cacheprovider")  # fmt: skip
    (case,) = [case for case in json.loads((pytester.path / "results.json").read_text())["cases"]
               if case.get("dimension") == "accent"]  # fmt: skip
    # the accents' answers differ far beyond the bar, and the permutation over 2 + 2 voices cannot say so
    assert case["status"] == "unmeasured" and case["cause"]["kind"] == "design"
    assert case["measured"]["value"] > 20, case["measured"]["value"]  # max_ntvd, the bar: 20
    assert "a group permutation of 2 + 2 speakers in 2 groups gives p >= 0.333" in case["message"]
