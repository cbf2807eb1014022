"""What every synthesised clip goes through, as the demo corpus always did (scripts/build_demo_corpus.py).

Synthesiser output -> mono float64 -> 16 kHz (polyphase, ``scipy.signal.resample_poly`` by ``16000/g : rate/g``,
``g = gcd``) -> leading and trailing silence cut (10 ms frames quieter than :data:`SILENCE_DB` below the loudest are
silence; :data:`KEEP_SILENCE_S` of it is kept each side) -> peak-normalised to :data:`PEAK_DBFS` (so the level does not
differ by voice) -> FLAC, 16-bit PCM, the strongest compression (lossless: the decoded samples are the same on every
machine). :data:`PROCESSING_VERSION` enters every clip's recipe: a change here makes every clip anew.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

SAMPLE_RATE = 16_000
PEAK_DBFS = -6.0
KEEP_SILENCE_S = 0.1
SILENCE_DB = -50.0
PROCESSING_VERSION = 1
PROCESSING = {
    "sample_rate": SAMPLE_RATE,
    "peak_dbfs": PEAK_DBFS,
    "keep_silence_s": KEEP_SILENCE_S,
    "silence_db": SILENCE_DB,
    "format": "FLAC PCM_16",
    "version": PROCESSING_VERSION,
}
"""The processing as provenance.json records it."""


def to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE:
        return samples
    common = gcd(SAMPLE_RATE, rate)
    return resample_poly(samples, SAMPLE_RATE // common, rate // common)


def trim_silence(samples: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """Cut leading/trailing silence (10 ms frames below SILENCE_DB of the loudest), keep KEEP_SILENCE_S."""
    frame = rate // 100
    frames = len(samples) // frame
    if frames == 0:
        return samples
    rms = np.sqrt(np.mean(samples[: frames * frame].reshape(frames, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms > rms.max() * 10 ** (SILENCE_DB / 20))
    if loud.size == 0:
        return samples
    keep = int(KEEP_SILENCE_S * rate)
    first = max(0, loud[0] * frame - keep)
    last = min(len(samples), (loud[-1] + 1) * frame + keep)
    return samples[first:last]


def normalise(samples: np.ndarray) -> np.ndarray:
    peak = np.abs(samples).max() if samples.size else 0.0
    return samples * (10 ** (PEAK_DBFS / 20) / peak) if peak > 0 else samples


def processed(samples: np.ndarray, rate: int) -> np.ndarray:
    """A synthesiser's mono output as it is stored: 16 kHz, trimmed, peak-normalised (float64)."""
    return normalise(trim_silence(to_16k(np.asarray(samples, dtype=np.float64), rate)))


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_flac(path: Path, samples: np.ndarray) -> None:
    """16 kHz 16-bit FLAC at the strongest compression, written to a temporary file and renamed, so that a clip
    file is whole or absent (a killed build leaves no half clip)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}-", suffix=".flac")
    os.close(handle)
    try:
        sf.write(temporary, samples, SAMPLE_RATE, format="FLAC", subtype="PCM_16", compression_level=1.0)
        os.chmod(temporary, 0o666 & ~umask())  # mkstemp makes it 0600; a clip follows the umask as any file
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
