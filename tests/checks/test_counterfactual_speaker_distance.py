"""Issue 61: the speaker-embedding manipulation check of the counterfactual arms. Each arm's cosine distance to its
recording is reported per direction and, with ``speaker_distance_filter``, admits recordings; where Resemblyzer is
absent the check says so in the record (never silently skipped). The arithmetic runs on tiny made-up embeddings; the
real encoder's test is skipped, naming the extra, where it is not installed."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest

from harness.checks.counterfactual.speaker_distance import (
    INSTALL,
    admitted_by_distance,
    cosine_distance,
    encoder_unavailable,
    speaker_distance_checks,
)
from harness.core.requests import Audio

HAS_RESEMBLYZER = importlib.util.find_spec("resemblyzer") is not None


def tiny_arms() -> tuple[pd.DataFrame, dict]:
    """Three recordings, each a one-sample "clip" whose value names its embedding's angle (degrees): r1 a kept
    identity and a moved swap, r2 an identity that lost the speaker, r3 a swap that did not move."""
    recordings = pd.DataFrame(
        {"source_group": ["young", "young", "elderly"], "target_group": ["elderly", "elderly", "young"]},
        index=pd.Index(["r1", "r2", "r3"]),
    )
    angles = {"original": (0, 0, 0), "identity": (5, 60, 2), "swap": (40, 45, 3), "sham": (30, 35, 20)}
    audio = {arm: {key: Audio(np.array([a], dtype=np.float32), 16_000) for key, a in zip(recordings.index, values)}
             for arm, values in angles.items()}  # fmt: skip
    return recordings, audio


def angle_embedder(samples: np.ndarray, rate: int) -> np.ndarray:
    angle = math.radians(float(samples[0]))
    return np.array([math.cos(angle), math.sin(angle)])


def test_the_cosine_distance_is_one_minus_the_cosine_and_nan_without_an_embedding():
    assert cosine_distance(np.array([1.0, 0.0]), np.array([2.0, 0.0])) == pytest.approx(0.0)
    assert cosine_distance(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == pytest.approx(1.0)
    assert cosine_distance(np.array([1.0, 0.0]), np.array([-1.0, 0.0])) == pytest.approx(2.0)
    assert math.isnan(cosine_distance(None, np.array([1.0, 0.0])))
    assert math.isnan(cosine_distance(np.zeros(2), np.array([1.0, 0.0])))


def test_each_arms_distance_to_its_recording_is_reported_per_direction_and_filters_when_asked():
    recordings, audio = tiny_arms()
    checks = speaker_distance_checks(recordings, audio, encoder="resemblyzer", filters=True,
                                     max_identity_speaker_distance=0.1, min_swap_speaker_distance=0.05,
                                     embed=angle_embedder)  # fmt: skip
    rows = checks.rows.set_index("recording")
    assert rows.loc["r1", "swap_speaker_distance"] == pytest.approx(1 - math.cos(math.radians(40)))
    assert rows.loc["r2", "identity_speaker_distance"] == pytest.approx(0.5)
    assert rows.loc["r3", "sham_speaker_distance"] == pytest.approx(1 - math.cos(math.radians(20)))
    assert checks.admitted == {"r1"}  # r2's identity lost the speaker; r3's swap did not move
    summary = {row["source_group"]: row for row in checks.to_json()["per_direction"]}
    assert summary["young"]["clips"] == 2 and summary["young"]["admitted"] == 1 and summary["elderly"]["admitted"] == 0
    assert summary["young"]["swap_speaker_distance"] == pytest.approx(
        np.median([1 - math.cos(math.radians(a)) for a in (40, 45)])
    )
    report_only = speaker_distance_checks(recordings, audio, encoder="resemblyzer", filters=False,
                                          max_identity_speaker_distance=0.1, min_swap_speaker_distance=0.05,
                                          embed=angle_embedder)  # fmt: skip
    assert report_only.admitted is None and "admitted" not in report_only.words()


def test_a_nan_distance_is_not_admitted():
    rows = pd.DataFrame({"identity_speaker_distance": [0.01, math.nan], "swap_speaker_distance": [0.3, 0.3]})
    assert admitted_by_distance(rows, 0.1, 0.0).tolist() == [True, False]


def test_without_resemblyzer_the_check_says_so_names_the_install_and_drops_nothing(monkeypatch):
    import harness.checks.counterfactual.speaker_distance as module

    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name: None)
    assert encoder_unavailable("resemblyzer") == (
        f"the speaker-distance check needs Resemblyzer, which is not installed: {INSTALL}"
    )
    recordings, audio = tiny_arms()
    checks = speaker_distance_checks(recordings, audio, encoder="resemblyzer", filters=True,
                                     max_identity_speaker_distance=0.1, min_swap_speaker_distance=0.05)  # fmt: skip
    record = checks.to_json()
    assert record["unmeasured"] == encoder_unavailable("resemblyzer") and record["version"] is None
    assert record["per_direction"] == [] and checks.admitted is None
    assert checks.words() == f"speaker distance not measured: {record['unmeasured']}"


@pytest.mark.skipif(not HAS_RESEMBLYZER, reason=f"Resemblyzer is not installed: {INSTALL}")
def test_resemblyzer_puts_an_unchanged_recording_nearer_its_source_than_another_speakers():
    import importlib.metadata
    from pathlib import Path

    from harness.data.corpus import load_corpus, read_utterance_audio

    corpus = load_corpus(Path(__file__).resolve().parents[2] / "harness" / "data" / "demo", check_audio=False)
    first, other = "spk01_s01", "spk03_s01"
    table = corpus.table
    assert table.loc[first, "gender"] != table.loc[other, "gender"]
    source, stranger = read_utterance_audio(corpus, first), read_utterance_audio(corpus, other)
    recordings = pd.DataFrame({"source_group": ["female"], "target_group": ["male"]}, index=pd.Index([first]))
    audio = {"original": {first: source}, "identity": {first: source}, "swap": {first: stranger}}
    checks = speaker_distance_checks(recordings, audio, encoder="resemblyzer", filters=True,
                                     max_identity_speaker_distance=0.01, min_swap_speaker_distance=0.05)  # fmt: skip
    row = checks.rows.iloc[0]
    assert row["identity_speaker_distance"] == pytest.approx(0.0, abs=1e-5)
    assert row["swap_speaker_distance"] > 0.05 and checks.admitted == {first}
    assert checks.version == f"resemblyzer {importlib.metadata.version('Resemblyzer')}"


def test_a_gate_run_records_the_check_or_names_the_missing_encoder(tmp_path):
    """The BASIS demo's age set cut to one item (2 young, 2 elderly voices), age arms on, ``speaker_encoder:
    resemblyzer``: the case's record carries ``speaker_distance``, measured where Resemblyzer is installed (the
    swap farther from the source than the identity arm), else naming what to install; never absent."""
    pytest.importorskip("pyworld")
    pytest.importorskip("parselmouth")
    import shutil
    from pathlib import Path

    from harness.gate import Gate, GateConfig
    from tests.support.gate import decided_record

    import support.hearing  # noqa: F401  (registers oracle:)

    demo = Path(__file__).resolve().parents[2] / "harness" / "data" / "basis_demo"
    suite = tmp_path / "suite"
    (suite / "stereoset" / "speech").mkdir(parents=True)
    table = pd.read_csv(demo / "stereoset" / "age.csv")
    table[table["id"] == 1].to_csv(suite / "stereoset" / "age.csv", index=False)
    shutil.copytree(demo / "stereoset" / "speech" / "age", suite / "stereoset" / "speech" / "age",
                    ignore=lambda _, names: [name for name in names if int(name[:5]) > 1])  # fmt: skip
    (suite / "suite.yaml").write_text(
        "name: age-tiny\nsets:\n  - {name: stereoset-age, kind: stereotype, dimension: age, labels: [elderly, young],"
        " metadata: stereoset/age.csv}\n"
    )
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text(
        "counterfactual:\n  defaults:\n    speaker_encoder: resemblyzer\n  dimensions:\n    age: {transform: age_shift}\n"
    )
    config = GateConfig(cache_dir=str(tmp_path / "cache"), bundled_exports={}, progress=False, models=("sim:fair",),
                        tasks=("story",), thresholds_path=str(thresholds), basis_suite=str(suite),
                        perceiver="oracle:age")  # fmt: skip
    gate = Gate(config)
    [case] = [case for case in gate.cases("counterfactual") if case.dimension == "age"]
    outcome = gate.outcome(case)
    record = decided_record(outcome)
    found = record.speaker_distance
    assert found.encoder == "resemblyzer" and found.filters is False
    if HAS_RESEMBLYZER:
        assert found.unmeasured is None and found.version.startswith("resemblyzer ")
        for row in found.per_direction:
            assert row.clips == 2 and row.swap_speaker_distance > row.identity_speaker_distance
    else:
        assert found.unmeasured == encoder_unavailable("resemblyzer") and found.per_direction == []
        assert "speaker distance not measured" in record.message
