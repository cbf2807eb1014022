"""Counterfactual arms made on demand (issue 46): a lazy arm is the eager arm, sample for sample; the store keeps
arms in a content-addressed folder and reads them back instead of resynthesising; a pool of workers makes the same
samples as one process; an arm holds no samples of its own, and the process's memory of arms stays within its
bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core import parallel
from harness.core.requests import Audio
from harness.data.audio import RecentSamples
from harness.data.corpus import load_corpus
from harness.data.voice_transforms import ChangeGenderSettings, arm_audio, get_transform
from harness.data.voice_transforms.arm_audio import ArmStore, lazy_arm
from harness.thresholds import packaged_thresholds

pytest.importorskip("parselmouth")

DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(DEMO)


@pytest.fixture(scope="module")
def settings():
    values = packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    return ChangeGenderSettings.from_settings(values)


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    """Each test starts with no arm in the process's memory (other tests' arms would answer for the store)."""
    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(arm_audio.MEMORY_BYTES))


def arms_of(corpus, settings, store, count, transform="gender_swap"):
    table = corpus.table.iloc[:count]
    return [
        lazy_arm(get_transform(transform), corpus.audio(u), group, settings, store)
        for u, group in zip(table.index, table["gender"])
    ]


@pytest.mark.parametrize("transform", ["identity", "gender_swap"])
def test_a_lazy_arm_is_the_eager_arm(corpus, settings, transform):
    table = corpus.table.iloc[:2]
    for utterance, group in zip(table.index, table["gender"]):
        source = corpus.audio(utterance)
        eager = get_transform(transform).apply(source, group, settings)
        lazy = lazy_arm(get_transform(transform), source, group, settings, ArmStore(None))
        assert lazy.recipe == eager.recipe and lazy.content_hash == eager.content_hash
        np.testing.assert_array_equal(lazy.samples, eager.samples)


def test_arms_are_made_once_then_read_back_from_their_folder(corpus, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("LALM_WORKERS", "1")
    store = ArmStore(tmp_path)
    arms = arms_of(corpus, settings, store, 3)
    assert store.make(arms) == 3 and store.make(arms) == 0
    files = sorted(tmp_path.rglob("*.npy"))
    assert [f.stem for f in files] == sorted(arm.content_hash for arm in arms)
    made = [arm.samples for arm in arms]

    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(arm_audio.MEMORY_BYTES))
    again = ArmStore(tmp_path)
    reread = arms_of(corpus, settings, again, 3)
    for before, arm in zip(made, reread):
        np.testing.assert_array_equal(arm.samples, before)
    assert again.made == 0


def test_a_damaged_arm_file_is_made_again(corpus, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("LALM_WORKERS", "1")
    store = ArmStore(tmp_path)
    (arm,) = arms_of(corpus, settings, store, 1)
    good = arm.samples.copy()
    path = store.path(arm)
    path.write_bytes(path.read_bytes()[:40])  # cut short
    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(arm_audio.MEMORY_BYTES))
    np.testing.assert_array_equal(arm.samples, good)
    assert store.made == 2


def test_the_pool_makes_the_samples_one_process_makes(corpus, settings, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_POOLED_JOBS", 2)
    monkeypatch.setenv("LALM_WORKERS", "2")
    pooled = ArmStore(tmp_path / "pooled")
    pooled.make(arms_of(corpus, settings, pooled, 6), progress=False)
    monkeypatch.setenv("LALM_WORKERS", "1")
    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(arm_audio.MEMORY_BYTES))
    single = ArmStore(tmp_path / "single")
    single.make(arms_of(corpus, settings, single, 6))
    pooled_files = {f.name: f.read_bytes() for f in (tmp_path / "pooled").rglob("*.npy")}
    single_files = {f.name: f.read_bytes() for f in (tmp_path / "single").rglob("*.npy")}
    assert len(pooled_files) == 6 and pooled_files == single_files


def test_an_arm_keeps_no_samples_and_the_memory_stays_within_its_bound(corpus, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("LALM_WORKERS", "1")
    store = ArmStore(tmp_path)
    arms = arms_of(corpus, settings, store, 8)
    store.make(arms)
    limit = 3 * arms[0].samples.nbytes
    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(limit))
    for arm in arms:
        assert len(arm.samples) > 0
        assert "_samples" not in arm.__dict__ and "samples" not in arm.__dict__
    assert 0 < arm_audio._MEMORY.bytes <= limit and len(arm_audio._MEMORY.entries) < len(arms)


def test_a_bad_worker_count_is_named(monkeypatch):
    monkeypatch.setenv("LALM_WORKERS", "two")
    with pytest.raises(ValueError, match="LALM_WORKERS='two'"):
        parallel.worker_count()


def test_recordings_read_once_are_kept_within_the_process_bound_not_by_each_recording(corpus, monkeypatch):
    from harness.data import audio as audio_module

    recordings = [corpus.audio(u) for u in corpus.table.index[:8]]
    limit = 3 * len(recordings[0].samples) * 4
    monkeypatch.setattr(audio_module, "RECENT_RECORDINGS", RecentSamples(limit))
    first = [recording.samples.copy() for recording in recordings]
    for recording, samples in zip(recordings, first):
        np.testing.assert_array_equal(recording.samples, samples)  # read again where it was dropped: the same
        assert "_samples" not in recording.__dict__
    assert audio_module.RECENT_RECORDINGS.bytes <= limit


def test_the_arm_folder_is_the_caches_own_unless_the_environment_names_a_shared_one(tmp_path, monkeypatch):
    monkeypatch.delenv(arm_audio.ARM_STORE_ENV, raising=False)
    assert arm_audio.arm_folder(tmp_path / "cache") == tmp_path / "cache" / arm_audio.ARM_FOLDER
    monkeypatch.setenv(arm_audio.ARM_STORE_ENV, " ")
    assert arm_audio.arm_folder(tmp_path / "cache") == tmp_path / "cache" / arm_audio.ARM_FOLDER
    monkeypatch.setenv(arm_audio.ARM_STORE_ENV, str(tmp_path / "shared"))
    assert arm_audio.arm_folder(tmp_path / "cache") == tmp_path / "shared"


def test_a_store_keeps_each_labellers_labels_of_its_arms_apart(tmp_path):
    store = ArmStore(tmp_path / "arms")
    arms = [Audio(np.zeros(160, np.float32), recipe=f"recording {index}|female|change-gender") for index in range(3)]
    assert store.labels(arms, "voice:praat:v1") == {}
    store.keep_labels([(arms[0], "male"), (arms[1], "(none)")], "voice:praat:v1")
    assert store.labels(arms, "voice:praat:v1") == {arms[0].content_hash: "male", arms[1].content_hash: "(none)"}
    assert store.labels(arms, "voice:praat:v2") == {}  # the labeller's code changed: labelled again
    memory_only = ArmStore(None)
    memory_only.keep_labels([(arms[0], "male")], "voice:praat:v1")
    assert memory_only.labels(arms, "voice:praat:v1") == {}


def test_labels_are_stored_without_fsync_and_an_empty_label_file_is_measured_again(tmp_path, monkeypatch):
    """A cold CREMA-D-sized run labels 13,104 clips: each label written durably (``fsync`` of the file and of its
    folder, a scan for stale temporaries) cost more than its measure. A label, like an arm, is written whole and
    renamed onto its name, so a reader never sees half of one; a file a crash left empty is read as no label."""
    import os

    monkeypatch.setattr(os, "fsync", lambda fd: pytest.fail("a label was fsynced"))
    store = ArmStore(tmp_path / "arms")
    arms = [Audio(np.zeros(160, np.float32), recipe=f"recording {index}|male|change-gender") for index in range(2)]
    store.keep_labels([(arms[0], "4.1 6.2 7.3 7.9"), (arms[1], "(none)")], "voice:formants:v1")
    assert store.labels(arms, "voice:formants:v1") == {arms[0].content_hash: "4.1 6.2 7.3 7.9", arms[1].content_hash: "(none)"}  # fmt: skip
    store.label_path(arms[0], "voice:formants:v1").write_text("")
    assert store.labels(arms, "voice:formants:v1") == {arms[1].content_hash: "(none)"}
    folder = store.label_path(arms[0], "voice:formants:v1").parent
    assert sorted(path.name for path in folder.iterdir()) == [f"{arms[0].content_hash}.txt"]  # no temporary left
