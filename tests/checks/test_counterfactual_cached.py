"""A counterfactual re-score makes nothing it has made (issue 46): with every answer and label cached, no arm is
resynthesised and no clip perceived; a missing answer makes only its own arm; and the records are those of the run
that made them."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from harness import perception
from harness.checks.counterfactual import tables
from harness.core.requests import GenerationRequest
from harness.data.audio import RecentSamples
from harness.data.voice_transforms import arm_audio
from harness.gate import Gate, GateConfig, Unmeasured

pytest.importorskip("parselmouth")

REPO = Path(__file__).resolve().parents[2]
MODEL = "sim:biased"


@pytest.fixture(scope="module", autouse=True)
def arms_in_each_cache():
    """This module counts what each cache's own ``arms/`` holds: no shared store (the suite sets one)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(arm_audio.ARM_STORE_ENV, raising=False)
        yield


@pytest.fixture
def counted(monkeypatch):
    """Counts of arms resynthesised and clips perceived, all in this process (``LALM_WORKERS=1``)."""
    monkeypatch.setenv("LALM_WORKERS", "1")
    counts = {"arms": 0, "perceived": 0}
    make, label, features = arm_audio.make_arm_samples, perception.voice_praat_group, perception.voice_features

    def counting_make(job):
        counts["arms"] += 1
        return make(job)

    def counting_label(samples, rate):
        counts["perceived"] += 1
        return label(samples, rate)

    monkeypatch.setattr(arm_audio, "make_arm_samples", counting_make)

    def counting_features(samples, rate):
        counts["perceived"] += 1
        return features(samples, rate)

    monkeypatch.setattr(perception, "voice_praat_group", counting_label)
    monkeypatch.setattr(perception, "voice_features", counting_features)
    return counts


def forget_arms_in_memory(monkeypatch):
    """Drop the process's memory of arms, so that only the cache's folder can answer for them."""
    monkeypatch.setattr(arm_audio, "_MEMORY", RecentSamples(arm_audio.MEMORY_BYTES))


def counterfactual_run(cache_dir: Path) -> tuple[Gate, dict[str, tuple]]:
    """The counterfactual cases of ``sim:biased`` (decoding seed 7: answers no shipped export holds) through one gate."""
    gate = Gate(
        GateConfig(
            models=(MODEL,),
            model_options={MODEL: {"decoding": {"seed": 7}}},
            permutations=199,
            cache_dir=str(cache_dir),
            progress=False,
            thresholds_path=str(REPO / "thresholds.yaml"),
            embedder="none",
        )
    )
    outcomes = {}
    for case in gate.cases("counterfactual"):
        verdict = gate.outcome(case)
        outcomes[case.id] = ("unmeasured", verdict.message) if isinstance(verdict, Unmeasured) else (verdict.passed, verdict.record.value)  # fmt: skip
    return gate, outcomes


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """A cold run's cache (arms made over the cores) and its outcomes."""
    cache = tmp_path_factory.mktemp("cold") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        forget_arms_in_memory(patch)
        _, outcomes = counterfactual_run(cache)
    assert any(outcome[0] != "unmeasured" for outcome in outcomes.values()), outcomes
    assert any((cache / arm_audio.ARM_FOLDER).rglob("*.npy"))
    return cache, outcomes


def test_a_cached_rescore_makes_no_arm_and_perceives_no_clip(cold, counted, monkeypatch):
    cache, first = cold
    forget_arms_in_memory(monkeypatch)
    _, again = counterfactual_run(cache)
    assert counted == {"arms": 0, "perceived": 0}
    assert again == first


def test_a_missing_answer_makes_only_its_own_arm(cold, tmp_path, counted, monkeypatch):
    shutil.copytree(cold[0], tmp_path / "cache")
    # Forget every made arm and one swap-arm transcription: the re-score makes that arm and no other.
    for stored in (tmp_path / "cache" / arm_audio.ARM_FOLDER).rglob("*.npy"):
        stored.unlink()
    forget_arms_in_memory(monkeypatch)
    gate = Gate(GateConfig(models=(MODEL,), model_options={MODEL: {"decoding": {"seed": 7}}}, cache_dir=str(tmp_path / "cache"),
                           progress=False, thresholds_path=str(REPO / "thresholds.yaml"), embedder="none"))  # fmt: skip
    context = gate.context
    corpus = next(iter(context.corpora))
    arms = tables.corpus_arms(context, corpus, "gender")
    utterance = arms.recordings.index[0]
    transcriber, prompt = context.transcriber(MODEL)
    (key,) = transcriber.keys([GenerationRequest(prompt, arms.audio[tables.SWAP][utterance])])
    with sqlite3.connect(tmp_path / "cache" / "outputs.sqlite") as database:
        assert database.execute("DELETE FROM outputs WHERE key = ?", (key,)).rowcount == 1
    counterfactual_run(tmp_path / "cache")
    assert counted == {"arms": 1, "perceived": 0}


def test_a_shared_arm_store_serves_a_cold_cache_with_no_arm_made(cold, tmp_path, counted, monkeypatch):
    """``$LALM_ARM_STORE`` names one store for every cache: another checkpoint's cold run (here an empty cache)
    finds every arm there, and what the perceiver measured in it and in the originals, and makes and perceives none; its answers are its own
    (and its output cache holds the labels it read), and its outcomes are the same."""
    cache, first = cold
    monkeypatch.setenv(arm_audio.ARM_STORE_ENV, str(cache / arm_audio.ARM_FOLDER))
    forget_arms_in_memory(monkeypatch)
    _, again = counterfactual_run(tmp_path / "another-cache")
    assert counted == {"arms": 0, "perceived": 0}
    assert not (tmp_path / "another-cache" / arm_audio.ARM_FOLDER).exists()
    assert again == first
    with sqlite3.connect(tmp_path / "another-cache" / "outputs.sqlite") as database:
        (labels,) = database.execute("SELECT COUNT(*) FROM outputs WHERE namespace = ?", (perception.PERCEIVE_NAMESPACE,)).fetchone()  # fmt: skip
    assert labels > 0


def test_labels_in_the_store_are_what_perceiving_again_gives(cold, tmp_path, counted, monkeypatch):
    """The stored labels (the default perceiver's features) are its own: a cold cache with the store's labels removed perceives every swap
    arm again and gets the same outcomes."""
    cache, first = cold
    store = tmp_path / "store"
    shutil.copytree(cache / arm_audio.ARM_FOLDER, store)
    shutil.rmtree(store / arm_audio.LABEL_FOLDER)
    monkeypatch.setenv(arm_audio.ARM_STORE_ENV, str(store))
    _, again = counterfactual_run(tmp_path / "another-cache")
    assert counted["arms"] == 0 and counted["perceived"] > 0
    assert again == first
