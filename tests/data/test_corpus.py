"""Corpus loading: the demo corpus, and every bad input named by file and row."""

import json

import numpy as np
import pytest

from harness.data import DEMO_CORPUS_PATH, CorpusError, load_corpus, resolve_corpus
from harness.data.audio import read_audio

from support.corpora import HEADER, good_rows, make_corpus, write_tone


def test_one_recording_listed_for_two_speakers_is_reported_naming_both_rows(tmp_path):
    """Issue 23: bit-identical recordings of different speakers break the speaker-level permutation test."""
    manifest = make_corpus(tmp_path, good_rows())
    assert not any("bit-identical" in line for line in load_corpus(manifest).audio_warnings)
    (tmp_path / "audio" / "c_1.wav").write_bytes((tmp_path / "audio" / "a_1.wav").read_bytes())
    (warning,) = [line for line in load_corpus(manifest).audio_warnings if "bit-identical" in line]
    assert f"{manifest}: 1 recording(s) bit-identical to another speaker's: row 4 (c) = row 2 (a);" in warning
    assert "p-values are not valid" in warning


def test_demo_corpus_meets_its_design():
    corpus = resolve_corpus("demo")
    table = corpus.table
    assert corpus.dimensions == ("gender", "accent")
    assert table["speaker_id"].nunique() >= 24
    assert set(table["gender"]) == {"female", "male"}
    assert table["accent"].nunique() >= 4
    assert (table.groupby("speaker_id")["content_id"].nunique() == 12).all()
    assert table.groupby("content_id")["transcript"].nunique().eq(1).all()
    size = sum(path.stat().st_size for path in DEMO_CORPUS_PATH.rglob("*") if path.is_file())
    assert size < 15 * 1024 * 1024
    audio = corpus.audio(table.index[0])
    assert audio.sample_rate == 16000 and audio.samples.dtype == np.float32 and audio.samples.ndim == 1


def test_loads_a_valid_manifest_and_treats_extra_columns_as_dimensions(tmp_path):
    corpus = load_corpus(make_corpus(tmp_path, good_rows()))
    assert corpus.dimensions == ("gender",)
    assert corpus.groups("gender") == ["female", "male"]
    assert corpus.speaker_labels("gender")["c"] == "male"


def test_jsonl_manifest(tmp_path):
    make_corpus(tmp_path, good_rows())
    manifest = tmp_path / "manifest.jsonl"
    keys = HEADER.strip().split(",")
    manifest.write_text("".join(json.dumps(dict(zip(keys, row.split(",")))) + "\n" for row in good_rows()))
    assert len(load_corpus(manifest).table) == 4


def test_missing_column_is_named(tmp_path):
    manifest = make_corpus(
        tmp_path,
        [r.rsplit(",", 2)[0] + ",female" for r in good_rows()],
        header="utterance_id,audio,speaker_id,transcript,gender\n",
    )
    with pytest.raises(CorpusError, match=r"manifest.csv: missing column\(s\) \['content_id'\]"):
        load_corpus(manifest)


def test_duplicate_utterance_id_names_both_rows(tmp_path):
    rows = good_rows() + [good_rows()[0]]
    with pytest.raises(CorpusError, match=r"manifest.csv, row 6: duplicate utterance_id 'a_1' \(first at row 2\)"):
        load_corpus(
            make_corpus(
                tmp_path, rows, audio_names=["audio/a_1.wav", "audio/b_1.wav", "audio/c_1.wav", "audio/d_1.wav"]
            )
        )


def test_missing_audio_names_the_row_and_file(tmp_path):
    manifest = make_corpus(tmp_path, good_rows(), audio_names=["audio/a_1.wav", "audio/b_1.wav", "audio/c_1.wav"])
    with pytest.raises(CorpusError, match=r"manifest.csv, row 5: audio file .*d_1.wav does not exist"):
        load_corpus(manifest)


def test_unreadable_audio_names_the_row(tmp_path):
    manifest = make_corpus(tmp_path, good_rows())
    (tmp_path / "audio" / "b_1.wav").write_bytes(b"not audio at all")
    with pytest.raises(CorpusError, match=r"manifest.csv, row 3: audio file .*b_1.wav cannot be read"):
        load_corpus(manifest)


def test_speaker_with_two_labels_names_both_rows(tmp_path):
    rows = good_rows() + ["a_2,audio/a_2.wav,a,c2,bye,male"]
    with pytest.raises(CorpusError, match=r"row 6: speaker 'a' has gender 'male' here but 'female' at row 2"):
        load_corpus(make_corpus(tmp_path, rows))


def test_dimension_with_one_group(tmp_path):
    rows = [row.replace("male", "x").replace("fex", "x") for row in good_rows()]
    with pytest.raises(CorpusError, match=r"dimension 'gender' has 1 group\(s\) \['x'\]; at least 2"):
        load_corpus(make_corpus(tmp_path, rows))


def test_group_with_one_speaker(tmp_path):
    rows = good_rows()[:3]
    with pytest.raises(CorpusError, match=r"row 4: gender group 'male' has 1 speaker\(s\); at least 2"):
        load_corpus(make_corpus(tmp_path, rows))


def test_corpus_yaml_selects_dimensions_and_rejects_unknown_keys(tmp_path):
    rows = [row + ",note" for row in good_rows()]
    manifest = make_corpus(tmp_path, rows, header=HEADER.strip() + ",comment\n")
    (tmp_path / "corpus.yaml").write_text("name: tiny\nmanifest: manifest.csv\ndimensions: [gender]\n")
    corpus = load_corpus(tmp_path)
    assert corpus.name == "tiny" and corpus.dimensions == ("gender",) and "comment" in corpus.table
    (tmp_path / "corpus.yaml").write_text("name: tiny\nmanifest: manifest.csv\n")
    with pytest.raises(CorpusError, match=rf"{manifest}: dimension 'comment' has 1 group\(s\)"):
        load_corpus(tmp_path)
    (tmp_path / "corpus.yaml").write_text("name: tiny\ndimension: [gender]\n")
    with pytest.raises(CorpusError, match=r"corpus.yaml: unknown key\(s\) \['dimension'\]"):
        load_corpus(tmp_path)


def test_audio_is_resampled_to_16k_mono(tmp_path):
    write_tone(tmp_path / "stereo.wav", seconds=0.5, rate=44100, channels=2)
    audio = read_audio(tmp_path / "stereo.wav")
    assert audio.sample_rate == 16000
    assert audio.samples.shape == (8000,)


def test_content_hash_follows_samples_not_path(tmp_path):
    write_tone(tmp_path / "one.wav")
    write_tone(tmp_path / "two.wav")
    write_tone(tmp_path / "three.wav", seconds=0.31)
    assert read_audio(tmp_path / "one.wav").content_hash == read_audio(tmp_path / "two.wav").content_hash
    assert read_audio(tmp_path / "one.wav").content_hash != read_audio(tmp_path / "three.wav").content_hash
