"""Whisper's log-Mel features computed alike on every CPU (harness/models/whisper_features.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.models.numerics import pin_cpu_numerics
from harness.models.whisper_features import (
    HOP_LENGTH,
    N_FFT,
    SAMPLING_RATE,
    PortableFeatureExtractor,
    hann_window,
    mel_filterbank,
)

from support.simd import available_vector_dispatch

REPO = Path(__file__).resolve().parents[2]
DEMO_AUDIO = sorted((REPO / "harness" / "data" / "demo" / "audio").glob("*.flac"))
needs_faster_whisper = pytest.mark.skipif(
    importlib.util.find_spec("faster_whisper") is None, reason="needs faster-whisper (the [demo] extra)"
)

FEATURE_HASH_SCRIPT = """
import hashlib, json, sys
import numpy as np, soundfile
from harness.models.whisper_features import PortableFeatureExtractor
extractor = PortableFeatureExtractor()
digest = hashlib.sha256()
for path in json.loads(sys.argv[1]):
    samples, _ = soundfile.read(path, dtype="float32")
    digest.update(extractor(samples).tobytes())
print(digest.hexdigest())
"""


def tone(frequency_hz: float, seconds: float = 1.0) -> np.ndarray:
    times = np.arange(int(seconds * SAMPLING_RATE)) / SAMPLING_RATE
    return (0.3 * np.sin(2 * np.pi * frequency_hz * times)).astype(np.float32)


def test_hann_window_by_hand():
    window = hann_window(4)
    assert window.tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5], abs=1e-15)


def test_filterbank_is_slaney_triangles():
    filters = mel_filterbank()
    assert filters.shape == (80, N_FFT // 2 + 1)
    assert (filters >= 0).all() and (filters.sum(axis=1) > 0).all()
    peaks = filters.argmax(axis=1)
    assert (np.diff(peaks) >= 0).all()
    below_1khz = [band for band in range(80) if peaks[band] * SAMPLING_RATE / N_FFT < 900]
    spacing = np.diff([peaks[band] for band in below_1khz])
    assert set(spacing.tolist()) <= {0, 1, 2}


def test_shape_follows_the_hop_and_drops_the_last_frame():
    extractor = PortableFeatureExtractor()
    samples = tone(440.0, 0.5)
    features = extractor(samples)
    assert features.dtype == np.float32
    assert features.shape == (80, (len(samples) + 160) // HOP_LENGTH)
    assert extractor(samples, padding=0).shape == (80, len(samples) // HOP_LENGTH)


def test_a_tone_lights_the_band_of_its_frequency():
    extractor = PortableFeatureExtractor()
    for frequency in (300.0, 1200.0, 4000.0):
        features = extractor(tone(frequency))
        loudest = int(np.median(features[:, 5:-5].argmax(axis=0)))
        band_peak_hz = mel_filterbank().argmax(axis=1)[loudest] * SAMPLING_RATE / N_FFT
        assert abs(math.log2(band_peak_hz / frequency)) < 0.15, (frequency, band_peak_hz)


def test_dynamic_range_is_clipped_to_eight_decades_below_the_peak():
    extractor = PortableFeatureExtractor()
    samples = np.concatenate([tone(500.0, 0.5), np.zeros(8000, dtype=np.float32)])
    features = extractor(samples)
    assert features.min() == pytest.approx(features.max() - 2.0, abs=1e-6)


def test_too_short_a_signal_is_a_clear_error():
    with pytest.raises(ValueError, match="more than 200 samples"):
        PortableFeatureExtractor()(np.zeros(10, dtype=np.float32), padding=0)


@needs_faster_whisper
def test_agrees_with_faster_whispers_own_extractor():
    import soundfile

    pin_cpu_numerics("the feature comparison")  # before faster-whisper imports ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    theirs, ours = FeatureExtractor(), PortableFeatureExtractor()
    assert np.abs(theirs.mel_filters - ours.mel_filters).max() < 1e-7
    worst = 0.0
    for path in DEMO_AUDIO[:: max(1, len(DEMO_AUDIO) // 12)]:
        samples, _ = soundfile.read(path, dtype="float32")
        expected, got = theirs(samples), ours(samples)
        assert expected.shape == got.shape
        worst = max(worst, float(np.abs(expected - got).max()))
    assert worst < 5e-5


def test_bit_identical_whatever_simd_numpy_and_openblas_choose():
    """The features of 12 demo recordings hash alike when NumPy's dispatch and OpenBLAS's kernel are those of
    this CPU, of an AVX2-only CPU (AVX-512 off, OpenBLAS Haswell), and of an SSE-only one: the paths that
    differ between an Intel Xeon and an AMD EPYC."""
    dispatch = available_vector_dispatch()
    avx512 = [name for name in dispatch if name.startswith("AVX512")]
    variants = {
        "native": {},
        "avx2-only": {"NPY_DISABLE_CPU_FEATURES": " ".join(avx512), "OPENBLAS_CORETYPE": "Haswell"},
        "sse-only": {"NPY_DISABLE_CPU_FEATURES": " ".join(dispatch), "OPENBLAS_CORETYPE": "Prescott"},
    }
    paths = json.dumps([str(path) for path in DEMO_AUDIO[:: max(1, len(DEMO_AUDIO) // 12)]])
    hashes = {}
    for name, settings in variants.items():
        environment = {**os.environ, **settings}
        for key in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE"):
            if not settings.get(key):
                environment.pop(key, None)
        finished = subprocess.run(
            [sys.executable, "-c", FEATURE_HASH_SCRIPT, paths],
            cwd=REPO,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert finished.returncode == 0, finished.stderr[-2000:]
        hashes[name] = finished.stdout.strip()
    assert len(set(hashes.values())) == 1, hashes


@needs_faster_whisper
def test_the_whisper_backend_uses_the_portable_extractor_and_says_so_in_its_fingerprint(monkeypatch):
    import harness.models.whisper_backend as whisper_backend
    from harness.models.whisper_backend import WhisperBackend

    backend = WhisperBackend("whisper:tiny.en", "tiny.en", {})
    fingerprint = backend.fingerprint()
    loaded = backend.load()
    assert isinstance(loaded.model.feature_extractor, PortableFeatureExtractor)
    assert loaded.model.feature_extractor.nb_max_frames == 3000
    monkeypatch.setattr(whisper_backend, "FEATURES_VERSION", whisper_backend.FEATURES_VERSION + "-other")
    assert WhisperBackend("whisper:tiny.en", "tiny.en", {}).fingerprint() != fingerprint
