"""Audio reading: any file soundfile reads, as float32 mono at 16 kHz."""

from __future__ import annotations

from math import gcd
from pathlib import Path

import numpy as np

from harness.core import SAMPLE_RATE, Audio


class AudioError(ValueError):
    """An audio file is missing, unreadable or empty; the message names the file."""


def read_audio(path: str | Path, target_rate: int = SAMPLE_RATE) -> Audio:
    """Read ``path``, mix down to mono (mean of channels) and resample to ``target_rate`` (polyphase)."""
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file does not exist")
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError or TypeError by format
        raise AudioError(f"{path}: audio file cannot be read ({exc})") from exc
    if samples.size == 0:
        raise AudioError(f"{path}: audio file has no samples")
    mono = samples.mean(axis=1, dtype=np.float32)
    return Audio(resample(mono, rate, target_rate), target_rate)


def resample(samples: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    if source_rate == target_rate:
        return np.ascontiguousarray(samples, dtype=np.float32)
    from scipy.signal import resample_poly

    divisor = gcd(int(source_rate), int(target_rate))
    return resample_poly(samples, target_rate // divisor, source_rate // divisor).astype(np.float32)
