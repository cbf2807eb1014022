"""Corpus loading decodes every audio file once: truncated, non-finite and outside-the-folder audio are
refused naming file and row, silent and very short clips are reported, and the decode is memoized by content."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile

from harness.data import CorpusError, load_corpus
from harness.data.audio import (
    AUDIO_CHECKS_VERSION,
    MIN_DURATION_S,
    SILENT_PEAK_DBFS,
    AudioChecks,
    AudioError,
    FileAudio,
    inspect_audio,
    read_audio,
)
from harness.data.basis_suite import BasisError, load_suite
from harness.data.loaders._common import write_corpus

from support.corpora import HEADER, good_rows, make_corpus, small_suite, write_tone
from support.gate import gate_project

pytest_plugins = ["pytester"]


def cut_in_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flac_rows():
    return [row.replace(".wav", ".flac") for row in good_rows()]


def test_a_flac_cut_short_with_its_header_intact_is_refused_naming_row_and_file(tmp_path):
    manifest = make_corpus(tmp_path, flac_rows())
    write_tone(tmp_path / "audio" / "c_1.flac", seconds=2.0)
    cut_in_half(tmp_path / "audio" / "c_1.flac")
    assert soundfile.info(str(tmp_path / "audio" / "c_1.flac")).frames == 32000
    with pytest.raises(
        CorpusError,
        match=r"manifest.csv, row 4: audio file .*c_1.flac is truncated or corrupt: decoding fails before the end of the 32000 frames",
    ):
        load_corpus(manifest)


def test_a_wav_cut_short_is_refused_although_libsndfile_reads_its_remainder(tmp_path):
    manifest = make_corpus(tmp_path, good_rows())
    write_tone(tmp_path / "audio" / "b_1.wav", seconds=1.0)
    cut_in_half(tmp_path / "audio" / "b_1.wav")
    assert read_audio(tmp_path / "audio" / "b_1.wav").samples.size > 0
    with pytest.raises(
        CorpusError,
        match=r"manifest.csv, row 3: audio file .*b_1.wav is truncated: its WAV data chunk announces 16022 more bytes",
    ):
        load_corpus(manifest)


def test_a_wav_whose_size_a_streaming_writer_left_unknown_is_accepted(tmp_path):
    path = tmp_path / "stream.wav"
    write_tone(path, seconds=1.0)
    data = bytearray(path.read_bytes())
    offset = data.index(b"data")
    data[offset + 4 : offset + 8] = (0xFFFFFFFF).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    assert inspect_audio(path).problem is None


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_audio_is_refused_at_load_and_at_read(tmp_path, value):
    manifest = make_corpus(tmp_path, good_rows())
    samples = np.full(8000, value, dtype=np.float32)
    samples[:100] = 0.1
    soundfile.write(tmp_path / "audio" / "d_1.wav", samples, 16000, subtype="FLOAT")
    with pytest.raises(
        CorpusError, match=r"manifest.csv, row 5: audio file .*d_1.wav has 7900 of 8000 samples that are not finite"
    ):
        load_corpus(manifest)
    with pytest.raises(AudioError, match=r"d_1.wav: audio file has 7900 of 8000 samples that are not finite"):
        read_audio(tmp_path / "audio" / "d_1.wav")


def test_audio_paths_outside_the_corpus_folder_are_refused_unless_corpus_yaml_lists_their_folder(tmp_path):
    corpus_folder, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_tone(elsewhere / "b_1.wav")
    rows = good_rows()
    rows[1] = rows[1].replace("audio/b_1.wav", "../elsewhere/b_1.wav")
    corpus_folder.mkdir()
    manifest = make_corpus(corpus_folder, rows, audio_names=["audio/a_1.wav", "audio/c_1.wav", "audio/d_1.wav"])
    with pytest.raises(
        CorpusError,
        match=r"manifest.csv, row 3: audio path '../elsewhere/b_1.wav' lies outside the corpus folder .*audio_folders",
    ):
        load_corpus(manifest)
    rows[1] = rows[1].replace("../elsewhere/b_1.wav", str(elsewhere / "b_1.wav"))
    make_corpus(corpus_folder, rows, audio_names=[])
    with pytest.raises(CorpusError, match=r"row 3: audio path '/.*elsewhere/b_1.wav' lies outside the corpus folder"):
        load_corpus(manifest)
    (corpus_folder / "corpus.yaml").write_text("audio_folders: [../elsewhere]\n")
    assert load_corpus(manifest).audio("b_1").samples.size == 4800
    (corpus_folder / "corpus.yaml").write_text("audio_folders: ../elsewhere\n")
    with pytest.raises(CorpusError, match=r"corpus.yaml: audio_folders must be a list of folder paths"):
        load_corpus(manifest)


def test_a_sibling_folder_whose_name_starts_with_the_corpus_folders_is_outside_it(tmp_path):
    """Folders are compared by whole path components: ``corpus-extra/`` is not inside ``corpus/``."""
    corpus_folder, sibling = tmp_path / "corpus", tmp_path / "corpus-extra"
    sibling.mkdir()
    write_tone(sibling / "b_1.wav")
    rows = good_rows()
    rows[1] = rows[1].replace("audio/b_1.wav", "../corpus-extra/b_1.wav")
    corpus_folder.mkdir()
    manifest = make_corpus(corpus_folder, rows, audio_names=["audio/a_1.wav", "audio/c_1.wav", "audio/d_1.wav"])
    with pytest.raises(
        CorpusError, match=r"row 3: audio path '../corpus-extra/b_1.wav' lies outside the corpus folder"
    ):
        load_corpus(manifest)


def test_a_dot_dot_that_stays_inside_the_folder_is_accepted(tmp_path):
    rows = good_rows()
    rows[0] = rows[0].replace("audio/a_1.wav", "audio/../audio/a_1.wav")
    assert len(load_corpus(make_corpus(tmp_path, rows, audio_names=[r.split(",")[1] for r in good_rows()])).table) == 4


def test_loader_corpora_list_the_distribution_folder_their_audio_lies_in(tmp_path):
    source = tmp_path / "distribution" / "wav"
    source.mkdir(parents=True)
    rows = [row.split(",") for row in good_rows()]
    for row in rows:
        write_tone(source / row[1].split("/")[-1])
    table = pd.DataFrame([dict(zip(HEADER.strip().split(","), row)) for row in rows])
    table["audio"] = [f"../distribution/wav/{name.split('/')[-1]}" for name in table["audio"]]
    output = write_corpus(tmp_path / "out", table, name="tiny", dimensions=["gender"], description="")
    assert "audio_folders:\n- ../distribution/wav\n" in (output / "corpus.yaml").read_text()
    assert len(load_corpus(output).table) == 4


def test_silent_and_very_short_clips_are_reported_not_refused(tmp_path):
    rows = good_rows() + ["a_2,audio/a_2.wav,a,c2,bye,female", "c_2,audio/c_2.wav,c,c2,bye,male"]
    manifest = make_corpus(tmp_path, rows)
    for position, row in enumerate(rows):
        write_tone(tmp_path / row.split(",")[1], seconds=1.0, hz=200.0 + 7.0 * position)
    quiet = 0.5 * 10 ** (SILENT_PEAK_DBFS / 20)
    soundfile.write(tmp_path / "audio" / "b_1.wav", np.full(16000, quiet), 16000, subtype="FLOAT")
    soundfile.write(tmp_path / "audio" / "d_1.wav", np.full(16000, 4 * quiet), 16000, subtype="FLOAT")
    soundfile.write(tmp_path / "audio" / "a_2.wav", np.zeros(16000), 16000)
    write_tone(tmp_path / "audio" / "c_2.wav", seconds=MIN_DURATION_S / 2)
    corpus = load_corpus(manifest)
    assert len(corpus.table) == 6
    assert corpus.audio_warnings == (
        f"{manifest}: 2 silent clip(s) (peak below -60 dBFS): row 3 (audio/b_1.wav); row 6 (audio/a_2.wav)",
        f"{manifest}: 1 very short clip(s) (shorter than 0.5 s): row 7 (audio/c_2.wav)",
    )


def test_the_decode_is_memoized_by_content_across_loads(tmp_path):
    manifest = make_corpus(tmp_path, good_rows())
    memo = tmp_path / "cache" / "audio_checks.json"
    first = AudioChecks(memo)
    load_corpus(manifest, audio_checks=first)
    assert first.decoded == 4  # four tones of their own
    second = AudioChecks(memo)
    load_corpus(manifest, audio_checks=second)
    assert second.decoded == 0
    write_tone(tmp_path / "audio" / "c_1.wav", seconds=1.0)
    cut_in_half(tmp_path / "audio" / "c_1.wav")
    third = AudioChecks(memo)
    with pytest.raises(CorpusError, match=r"row 4: audio file .*c_1.wav is truncated"):
        load_corpus(manifest, audio_checks=third)
    assert third.decoded == 1
    with pytest.raises(CorpusError, match=r"row 4: audio file .*c_1.wav is truncated"):
        load_corpus(manifest, audio_checks=AudioChecks(memo))


def test_a_reload_reads_no_audio_and_its_audio_hashes_as_a_decode_does(tmp_path, monkeypatch):
    manifest = make_corpus(tmp_path, good_rows())
    for position, row in enumerate(good_rows()):
        write_tone(tmp_path / row.split(",")[1], seconds=1.0, hz=150.0 + 11.0 * position, rate=22_050)
    memo = tmp_path / "cache" / "audio_checks.json"
    first = AudioChecks(memo)
    decoded = {uid: read_audio(path) for uid, path in zip(*_ids_and_paths(load_corpus(manifest, audio_checks=first)))}
    assert (first.decoded, first.hashed) == (4, 4)

    def no_reading(*args, **kwargs):
        raise AssertionError("a memoised file was read")

    second = AudioChecks(memo)
    monkeypatch.setattr("harness.data.audio.read_audio", no_reading)
    monkeypatch.setattr("harness.data.audio.inspect_audio", no_reading)
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: no_reading() if self.suffix == ".wav" else read_bytes(self))
    corpus = load_corpus(manifest, audio_checks=second)
    assert (second.decoded, second.hashed) == (0, 0)
    lazy = {uid: corpus.audio(uid) for uid in corpus.table["utterance_id"]}
    assert all(isinstance(audio, FileAudio) for audio in lazy.values())
    assert {uid: audio.content_hash for uid, audio in lazy.items()} == {
        uid: audio.content_hash for uid, audio in decoded.items()
    }
    monkeypatch.undo()
    for uid, audio in lazy.items():
        assert np.array_equal(audio.samples, decoded[uid].samples) and audio.sample_rate == 16_000


def test_a_file_changed_in_place_is_hashed_and_decoded_again(tmp_path):
    manifest = make_corpus(tmp_path, good_rows())
    memo = tmp_path / "cache" / "audio_checks.json"
    load_corpus(manifest, audio_checks=AudioChecks(memo))
    changed = tmp_path / "audio" / "b_1.wav"
    before = load_corpus(manifest, audio_checks=AudioChecks(memo)).audio("b_1").content_hash
    write_tone(changed, seconds=1.0, hz=333.0)
    again = AudioChecks(memo)
    corpus = load_corpus(manifest, audio_checks=again)
    assert (again.decoded, again.hashed) == (1, 1)
    assert corpus.audio("b_1").content_hash == read_audio(changed).content_hash != before


def test_a_reloaded_basis_suite_gives_lazy_audio_of_the_same_hash(tmp_path):
    folder = small_suite(tmp_path)
    memo = tmp_path / "cache" / "audio_checks.json"
    load_suite(folder, audio_checks=AudioChecks(memo))
    again = AudioChecks(memo)
    suite = load_suite(folder, audio_checks=again)
    assert again.decoded == 0 and again.hashed == 0
    item_set = suite.sets[0]
    for row, path in zip(item_set.table["row"], item_set.table["audio"]):
        audio = item_set.audio(row)
        assert isinstance(audio, FileAudio) and audio.content_hash == read_audio(path).content_hash


def test_the_resampling_filter_is_designed_once_per_rate_pair_and_matches_scipys_own():
    from scipy.signal import resample_poly

    from harness.data.audio import resample, resampling_filter

    resampling_filter.cache_clear()
    samples = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    for _ in range(3):
        ours = resample(samples, 22_050, 16_000)
    assert np.array_equal(ours, resample_poly(samples, 320, 441).astype(np.float32))
    assert np.array_equal(resample(samples, 48_000, 16_000), resample_poly(samples, 1, 3).astype(np.float32))
    assert resampling_filter.cache_info().misses == 2 and resampling_filter.cache_info().hits == 2


def _ids_and_paths(corpus):
    return list(corpus.table["utterance_id"]), [corpus.root / relative for relative in corpus.table["audio"]]


def test_a_damaged_memo_is_ignored_and_rewritten(tmp_path):
    manifest = make_corpus(tmp_path, good_rows())
    memo = tmp_path / "audio_checks.json"
    memo.write_text("{not json")
    checks = AudioChecks(memo)
    load_corpus(manifest, audio_checks=checks)
    assert checks.decoded >= 1
    assert json.loads(memo.read_text())["version"] == AUDIO_CHECKS_VERSION
    unusable = tmp_path / "a_file"
    unusable.write_text("")
    load_corpus(manifest, audio_checks=AudioChecks(unusable / "audio_checks.json"))


def test_a_truncated_basis_recording_is_refused_naming_the_metadata_row(tmp_path):
    folder = small_suite(tmp_path)
    recording = min((folder / "stereoset" / "speech" / "gender").glob("*.flac"))
    cut_in_half(recording)
    with pytest.raises(
        BasisError, match=rf"gender.csv, row \d+: audio file .*{recording.name} is truncated or corrupt"
    ):
        load_suite(folder)


def test_the_gate_stops_with_one_line_naming_the_file_and_row(pytester, tmp_path):
    corpus_folder = tmp_path / "tiny"
    corpus_folder.mkdir()
    make_corpus(corpus_folder, flac_rows())
    write_tone(corpus_folder / "audio" / "b_1.flac", seconds=2.0)
    cut_in_half(corpus_folder / "audio" / "b_1.flac")
    project = gate_project(pytester, "test_vibe.py")
    manifest = corpus_folder / "manifest.csv"
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--model", "sim:fair", "--corpus", f"tiny={manifest}"
    )
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR)
    message = f"lalm-fairness: {manifest}, row 3: audio file {corpus_folder}/audio/b_1.flac is truncated or corrupt: decoding fails before the end of the 32000 frames"
    assert any(message in line for line in result.outlines + result.errlines)
    assert not (project.path / "results.json").exists()


def test_the_gate_lists_silent_clips_once_in_its_output_and_its_metadata(pytester, tmp_path):
    corpus_folder = tmp_path / "tiny"
    corpus_folder.mkdir()
    manifest = make_corpus(corpus_folder, good_rows())
    for position, row in enumerate(good_rows()):
        write_tone(corpus_folder / row.split(",")[1], seconds=1.0, hz=200.0 + 7.0 * position)
    soundfile.write(corpus_folder / "audio" / "d_1.wav", np.zeros(16000), 16000)
    project = gate_project(pytester, "test_vibe.py")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--model",
        "sim:fair",
        "--corpus",
        f"tiny={manifest}",
        "-k",
        "advisory and gender",
        "--report",
        "",
    )
    warning = f"lalm-fairness: warning: {manifest}: 1 silent clip(s) (peak below -60 dBFS): row 5 (audio/d_1.wav)"
    assert [line for line in result.outlines if "silent clip" in line] == [warning]
    metadata = json.loads((project.path / "results.json").read_text())["metadata"]
    assert metadata["corpora"]["tiny"]["audio_warnings"] == [warning.split("warning: ", 1)[1]]
