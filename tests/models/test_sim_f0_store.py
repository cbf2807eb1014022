"""The simulators' F0 store (``$LALM_SIM_F0_STORE``): a clip's median F0 is measured once across processes, and a
kept value is exactly the measured one (NaN included); an unreadable entry is measured again."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.core.requests import SAMPLE_RATE, Audio
from harness.models import sim


def tone(hz: float, seconds: float = 0.5) -> Audio:
    times = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return Audio(samples=(0.3 * np.sin(2 * np.pi * hz * times)).astype(np.float32), sample_rate=SAMPLE_RATE)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(sim.F0_STORE_ENV, str(tmp_path / "f0"))
    monkeypatch.setattr(sim, "_F0_HZ", {})
    return tmp_path / "f0"


def test_a_clips_f0_is_measured_once_and_read_back_exactly(store, monkeypatch):
    clips = [tone(180.0), Audio(samples=np.zeros(8000, dtype=np.float32), sample_rate=SAMPLE_RATE)]
    measured = [sim.median_f0_hz(clip) for clip in clips]
    assert 170 < measured[0] < 190 and math.isnan(measured[1])
    assert [sim.stored_f0_hz(clip) for clip in clips][0] == measured[0]
    assert sorted(path.name for path in store.iterdir()) == sorted(f"{clip.content_hash}.f0" for clip in clips)
    monkeypatch.setattr(sim, "_F0_HZ", {})  # another process: only the folder is shared
    monkeypatch.setattr(sim, "median_f0_hz", lambda audio: pytest.fail("measured again"))
    again = [sim.stored_f0_hz(clip) for clip in clips]
    assert again[0] == measured[0] and math.isnan(again[1])


def test_an_unreadable_entry_is_measured_again_and_replaced(store):
    clip = tone(220.0)
    store.mkdir()
    (store / f"{clip.content_hash}.f0").write_text("not a number")
    assert sim.stored_f0_hz(clip) == sim.median_f0_hz(clip)
    assert float((store / f"{clip.content_hash}.f0").read_text()) == sim.median_f0_hz(clip)


def test_without_a_folder_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(sim.F0_STORE_ENV, raising=False)
    monkeypatch.setattr(sim, "_F0_HZ", {})
    monkeypatch.chdir(tmp_path)
    assert sim.stored_f0_hz(tone(150.0)) == sim.median_f0_hz(tone(150.0))
    assert list(tmp_path.iterdir()) == []


def test_the_f0_prepared_over_the_cores_is_the_f0_of_this_process_bit_for_bit(tmp_path, monkeypatch):
    """A simulator answers one request at a time, so a cold CREMA-D-sized run measured the F0 of its 26,208 clips
    (four arms) on the gate's one core: :func:`sim.prepare_f0` measures them in workers, each reading a stored arm or
    a recording from its file, and the gate's process then finds every value kept, the one it would have measured."""
    pytest.importorskip("parselmouth")
    from pathlib import Path

    from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
    from harness.core import parallel
    from harness.data.corpus import load_corpus
    from harness.data.voice_transforms import ChangeGenderSettings, get_transform
    from harness.data.voice_transforms.arm_audio import ArmStore, lazy_arm
    from harness.thresholds import packaged_thresholds

    monkeypatch.setattr(parallel, "MIN_POOLED_JOBS", 2)
    monkeypatch.setenv("LALM_WORKERS", "2")
    monkeypatch.delenv(sim.F0_STORE_ENV, raising=False)
    monkeypatch.setattr(sim, "_F0_HZ", {})
    corpus = load_corpus(Path(sim.__file__).resolve().parents[1] / "data" / "demo")
    settings = ChangeGenderSettings.from_settings(
        packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    )
    store = ArmStore(tmp_path / "arms")
    table = corpus.table.iloc[:3]
    arms = [lazy_arm(get_transform("gender_swap"), corpus.audio(u), g, settings, store) for u, g in zip(table.index, table["gender"])]  # fmt: skip
    store.make(arms)
    clips = [
        *arms,
        *(corpus.audio(u) for u in table.index),
        tone(180.0),
        Audio(np.zeros(8000, np.float32), SAMPLE_RATE),
    ]
    measured = [sim.median_f0_hz(clip) for clip in clips]
    assert sim.prepare_f0([*clips, None, clips[0]]) == len(clips)
    monkeypatch.setattr(sim, "median_f0_hz", lambda audio: pytest.fail("measured in the gate's process"))
    np.testing.assert_array_equal([sim.stored_f0_hz(clip) for clip in clips], measured)
    assert sim.prepare_f0(clips) == 0


def test_a_simulator_is_told_the_missing_requests_before_it_answers_them(tmp_path, monkeypatch):
    """The output cache hands a model that prepares requests (:class:`harness.models.base.PreparesRequests`) every
    request it lacks before the first chunk; the answers are those of a simulator that prepares nothing."""
    from harness.cache import OutputCache
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation.cached_model import CachedModel

    monkeypatch.delenv(sim.F0_STORE_ENV, raising=False)
    monkeypatch.setattr(sim, "_F0_HZ", {})
    prepared = []
    monkeypatch.setattr(sim, "prepare_f0", lambda audios, progress=False: prepared.append(list(audios)))
    prompt = "Tell a fictional story about the speaker."
    requests = [GenerationRequest(prompt, tone(hz)) for hz in (110.0, 150.0, 190.0, 230.0, 270.0)]
    cached = CachedModel("sim:biased", OutputCache(tmp_path / "cache"), DecodingParams(), chunk_size=2, progress=False)
    answers = cached.generate(requests)
    assert prepared == [[request.audio for request in requests]]
    assert answers == sim.SimulatorBackend("sim:biased", "biased", {}).load().generate(requests, DecodingParams())
    assert cached.generate(requests) == answers and len(prepared) == 1  # all cached: nothing to prepare
