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
