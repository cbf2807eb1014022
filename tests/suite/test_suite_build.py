"""Building suites: the layouts load as they are, the filters drop what they should and record it, rebuilds reuse
clips by recipe, and a killed build leaves a folder that does not load and that the next build continues."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from harness.data import CorpusError, load_corpus
from harness.data.basis_suite import load_suite
from harness.suite.build import Filters, build_suite
from harness.suite.cli import main
from harness.suite.voices import read_voices

from support.suite_inputs import espeak_voices, needs_espeak, write_items

pytestmark = needs_espeak
REPO = Path(__file__).resolve().parents[2]


def build(tmp_path, filters, voices=None, count=2, out="out"):
    return build_suite("corpus", write_items(tmp_path, count), read_voices(voices or espeak_voices(3)),
                       tmp_path / out, filters, progress=False, log=lambda line: None)  # fmt: skip


def clip_key(samples) -> bytes:
    return np.round(np.asarray(samples, dtype=np.float64) * 32768).astype(np.int16).tobytes()


def test_a_corpus_loads_with_its_manifest_rows_and_provenance(tmp_path):
    result = build(tmp_path, Filters(perceived=False))
    corpus = load_corpus(tmp_path / "out")
    assert len(corpus.table) == 12 and corpus.dimensions == ("gender",)
    row = corpus.table.loc["spk01_c1"]
    assert (row.speaker_id, row.gender, row.transcript, row.voice) == (
        "spk01", "female", "The bus leaves at half past seven.", "espeak-ng:en-us+f1")  # fmt: skip
    provenance = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert provenance["voices"][0]["synthesiser"].startswith("espeak-ng 1.")
    assert provenance["groups"] == {"gender": {"female": {"voices": 3, "clips": 6}, "male": {"voices": 3, "clips": 6}}}
    assert provenance["filters"]["wer"] == {"enabled": False} and result.problems == []


def test_the_wer_filter_drops_the_clips_a_fake_asr_mishears(tmp_path):
    build(tmp_path, Filters(perceived=False))  # every clip made and kept: the fake knows each by its samples
    corpus = load_corpus(tmp_path / "out")
    text_of = {clip_key(corpus.audio(uid).samples): (uid, text) for uid, text in corpus.table["transcript"].items()}
    misheard = {"spk02_c1", "spk05_c2"}

    def fake_asr(clips):
        heard = [text_of[clip_key(clip)] for clip in clips]
        return [f"{text} extra" if uid in misheard else text.upper().rstrip(".") for uid, text in heard]

    result = build(tmp_path, Filters(asr="fake:asr", transcriber=fake_asr, perceived=False))
    assert set(load_corpus(tmp_path / "out").table.index) == set(corpus.table.index) - misheard
    wer = result.provenance["filters"]["wer"]
    assert wer["asr"] == "fake:asr" and wer["checked"] == 12 and wer["dropped"] == 2
    assert {row["clip"] for row in wer["dropped_clips"]} == misheard
    assert not (tmp_path / "out" / "audio" / "spk02_c1.flac").exists()  # a dropped clip leaves the layout
    assert "WER = 0 filter (fake:asr): 2 of 12 clips dropped" in result.report
    assert result.provenance["clips"]["made"] == 0 and result.provenance["clips"]["reused"] == 12


def test_the_perceived_filter_drops_a_voice_whole_and_names_it(tmp_path):
    build(tmp_path, Filters(perceived=False))
    corpus = load_corpus(tmp_path / "out")
    group_of = {
        clip_key(corpus.audio(uid).samples): (row.speaker_id, row.gender) for uid, row in corpus.table.iterrows()
    }

    def fake_perceiver(clips, groups):  # spk03 (female) is heard as male on every clip, the others as declared
        assert groups == ["female", "male"]
        heard = [group_of[clip_key(clip)] for clip in clips]
        return ["male" if speaker == "spk03" else gender for speaker, gender in heard]

    result = build(tmp_path, Filters(perceiver_spec="fake:ears", perceiver=fake_perceiver))
    perceived = result.provenance["filters"]["perceived_group"]
    assert perceived["dropped_voices"] == ["spk03"] and perceived["dropped"] == 2
    (row,) = [row for row in perceived["voices"] if row["speaker"] == "spk03"]
    assert (row["share"], row["perceived"], row["kept"]) == (0.0, {"male": 2}, False)
    assert "spk03" not in set(load_corpus(tmp_path / "out").table["speaker_id"])
    assert any("dropped voice spk03 (female): 0 of 2 clips" in line for line in result.report)


def test_a_filter_that_leaves_a_group_one_voice_writes_nothing_loadable(tmp_path, capsys):
    result = build(tmp_path, Filters(perceiver_spec="fake:deaf", perceiver=lambda clips, groups: ["male"] * len(clips)),
                   voices=espeak_voices(2))  # fmt: skip
    assert result.problems == ["gender=female: 0 voice(s) admitted, fewer than 2"]
    assert (tmp_path / "out" / "build-report.txt").is_file() and not (tmp_path / "out" / "corpus.yaml").exists()


def test_outliers_are_listed_per_group_not_dropped(tmp_path):
    voices = espeak_voices(2) + ",espeak-ng:en-us+f3[rate=80]@gender=female,espeak-ng:en-us+f4@gender=female"
    result = build(tmp_path, Filters(perceived=False), voices=voices, count=2)
    listed = result.provenance["filters"]["outliers"]["listed"]
    assert {(row["speaker"], row["measure"]) for row in listed} >= {("spk05", "duration_s")}  # the slow reader
    assert len(load_corpus(tmp_path / "out").table) == 12  # listed, kept


def basis_items(folder: Path, sets: dict[str, tuple[str, str, list[str]]]) -> Path:
    """A BASIS item folder: ``sets`` maps a set name to (kind, metadata file under qa/, CSV lines with header)."""
    (folder / "qa").mkdir(parents=True)
    lines = [f"  - {{name: {name}, kind: {kind}, dimension: gender, labels: [female, male], metadata: qa/{file}}}"
             for name, (kind, file, _) in sets.items()]  # fmt: skip
    (folder / "suite.yaml").write_text("name: t\nsets:\n" + "\n".join(lines) + "\n")
    for _, file, rows in sets.values():
        (folder / "qa" / file).write_text("\n".join(rows) + "\n")
    return folder


def test_the_basis_layout_loads_as_a_suite(tmp_path):
    rows = [f"1,{s},{g},What is frozen water called?" for s, g in
            (("spk01", "female"), ("spk02", "female"), ("spk03", "male"), ("spk04", "male"))]  # fmt: skip
    suite = basis_items(tmp_path / "items", {
        "sqa": ("qa", "gender.csv", ["id,speaker,gender,question,answer", *(row + ",ice" for row in rows)]),
        "sqa-asr": ("asr", "gender-asr.csv", ["id,speaker,gender,transcript", *rows]),
    })  # fmt: skip
    build_suite("basis", suite, read_voices(espeak_voices(2)), tmp_path / "out", Filters(perceived=False),
                progress=False, log=lambda line: None)  # fmt: skip
    loaded = load_suite(tmp_path / "out")
    assert [s.name for s in loaded.sets] == ["sqa", "sqa-asr"] and len(loaded.item_set("sqa").table) == 4
    assert sf.info(tmp_path / "out" / "qa" / "speech" / "gender" / "00001_spk03.flac").samplerate == 16000


def test_a_basis_set_left_with_one_speaker_of_a_label_writes_nothing_loadable(tmp_path):
    """The dimension keeps 2 female voices (spk02, spk03), but set sqa read by spk01 and spk02 keeps one: the suite
    would not load, so it is not written, and the report names the set."""

    def rows(*female: str) -> list[str]:
        speakers = [(s, "female") for s in female] + [("spk04", "male"), ("spk05", "male")]
        return ["id,speaker,gender,question,answer", *(f"1,{s},{g},What is ice?,water" for s, g in speakers)]

    suite = basis_items(tmp_path / "items", {"sqa": ("qa", "a.csv", rows("spk01", "spk02")),
                                             "sqb": ("qa", "b.csv", rows("spk02", "spk03"))})  # fmt: skip
    # clips in order: spk01, spk02, spk04, spk05 (set sqa), spk03 (sqb's new one); spk01 is heard as male
    heard = ["male", "female", "male", "male", "female"]
    result = build_suite("basis", suite, read_voices(espeak_voices(3)), tmp_path / "out",
                         Filters(perceiver_spec="fake", perceiver=lambda clips, groups: heard[: len(clips)]),
                         progress=False, log=lambda line: None)  # fmt: skip
    assert result.provenance["filters"]["perceived_group"]["dropped_voices"] == ["spk01"]
    assert "set sqa: gender=female: 1 speaker(s) admitted, fewer than 2" in result.problems
    assert not (tmp_path / "out" / "suite.yaml").exists()


def test_a_killed_build_does_not_load_and_the_next_build_goes_on(tmp_path):
    """SIGINT in the middle of synthesis (one worker, so the clips come one at a time): the folder has whole clips
    and no corpus.yaml or manifest; the same command then makes only the clips that were missing."""
    items = write_items(tmp_path, 8)
    argv = ["build", "--items", str(items), "--voices", espeak_voices(3), "--out", str(tmp_path / "out"),
            "--no-wer-filter", "--no-perceived-filter", "--no-outliers", "--no-progress"]  # fmt: skip
    (tmp_path / "out" / ".suite-build" / "clips").mkdir(parents=True)  # an earlier build's folder (its clip store)
    (tmp_path / "out" / "corpus.yaml").write_text("name: stale\n")  # an earlier build's: must not survive the start
    env = {**os.environ, "PYTHONPATH": str(REPO), "LALM_WORKERS": "1"}
    # An xdist worker ignores SIGINT, and a child inherits an ignored signal (Python then installs no handler for
    # it): the build is started with the default disposition, as from a terminal.
    process = subprocess.Popen([sys.executable, "-m", "harness.suite.cli", *argv], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    store = tmp_path / "out" / ".suite-build" / "clips"

    def whole_clips() -> int:
        return sum(not path.name.startswith(".") for path in store.glob("*/*.flac"))

    deadline = time.monotonic() + 60
    while whole_clips() < 5 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    made_before = whole_clips()
    assert process.returncode == 2, err.decode()
    assert 5 <= made_before < 48 and made_before == len(
        list(store.glob("*/*"))
    )  # whole clips only: no temporary file left
    with pytest.raises(CorpusError, match="needs a corpus.yaml"):
        load_corpus(tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.csv").exists()
    assert main(argv) == 0
    provenance = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert provenance["clips"]["reused"] == made_before and provenance["clips"]["made"] == 48 - made_before
    assert len(load_corpus(tmp_path / "out").table) == 48


def test_a_changed_text_or_voice_makes_only_its_clips_anew(tmp_path):
    first = build(tmp_path, Filters(perceived=False))
    assert first.provenance["clips"]["made"] == 12
    (tmp_path / "items.csv").write_text((tmp_path / "items.csv").read_text().replace("seven", "eight"))
    voices = espeak_voices(3).replace("en-us+m3@", "en-us+m3[pitch=30]@")
    second = build_suite("corpus", tmp_path / "items.csv", read_voices(voices), tmp_path / "out",
                         Filters(perceived=False), progress=False, log=lambda line: None)  # fmt: skip
    # sentence c1 for every voice (6) and the changed voice's other sentence (1)
    assert (second.provenance["clips"]["made"], second.provenance["clips"]["reused"]) == (7, 5)


def test_asr_and_perceiver_specs_are_models_asked_through_their_backends(tmp_path, capsys):
    """``--asr`` and ``--perceiver`` take model specs: built with build_backend, asked for transcripts (an empty
    prompt) and for the perceived group (the counterfactual check's prompt), and named in provenance.json."""
    from harness.models import BACKENDS, register_backend

    register_backend("fixedasr", "support.suite_inputs:FixedTranscriber")
    register_backend("pitchears", "support.suite_inputs:PitchEars")
    try:
        status = main(["build", "--items", str(write_items(tmp_path, 2)), "--voices", espeak_voices(2), "--out",
                       str(tmp_path / "out"), "--asr", "fixedasr:c1", "--perceiver", "pitchears:x", "--no-progress"])  # fmt: skip
    finally:
        BACKENDS.pop("fixedasr")
        BACKENDS.pop("pitchears")
    assert status == 0, capsys.readouterr().err
    provenance = json.loads((tmp_path / "out" / "provenance.json").read_text())
    wer, perceived = provenance["filters"]["wer"], provenance["filters"]["perceived_group"]
    assert (wer["asr"], wer["asr_fingerprint"], wer["dropped"]) == ("fixedasr:c1", "fixedasr:c1:1", 4)
    assert {row["clip"] for row in wer["dropped_clips"]} == {f"spk0{n}_c2" for n in range(1, 5)}
    assert perceived["perceiver"] == "pitchears:x" and perceived["dropped_voices"] == []
    assert set(load_corpus(tmp_path / "out").table["content_id"]) == {"c1"}
    kept = sorted((tmp_path / "out" / ".suite-build" / "clips").glob("*/*.asr.txt"))
    assert len(kept) == 8 and {path.read_text() for path in kept} == {"the bus leaves at half past seven"}
