"""Whisper's log-Mel features computed the same way on every x86-64 CPU.

faster-whisper's own ``FeatureExtractor`` computes the features in float32 with three steps whose result
depends on the CPU: ``np.abs`` of the complex STFT and ``np.log10`` run NumPy's runtime-dispatched SIMD loops
(AVX-512 or AVX2 code, each rounding its own way), and the Mel projection is a float32 ``matmul``, whose
summation order is that of the BLAS kernel OpenBLAS picks for the CPU (SkylakeX, Haswell, Zen, ...). The
features then differ in their last bits between machines, and greedy decoding turns a last-bit difference
into another word often enough to matter: between outputs made on an AMD EPYC and regenerated on an Intel
Xeon with the same packages, 3 of 12 sampled transcripts differed ("milt from the sharp" / "milk from the
shop"), and on one machine asking NumPy for its AVX2 loops or OpenBLAS for its Haswell kernel changed them.

:class:`PortableFeatureExtractor` computes the same quantity (Whisper, Radford et al. 2022, §2.2: 25 ms
Hann windows every 10 ms, an 80-channel Slaney Mel filterbank, log10, clipped 8 below the maximum, then
scaled as (x + 4) / 4) with operations whose every result IEEE 754 rounds exactly:

* the Hann window and the filterbank from :mod:`math` (glibc's libm, one code path on every x86-64 CPU
  with FMA, which the numerics contract requires through AVX2);
* the STFT from ``numpy.fft.rfft`` in float64 (pocketfft, compiled for the wheel's baseline, no runtime
  dispatch);
* the power as ``re * re + im * im`` and the Mel projection as a fixed-order sum over the filterbank's
  non-zero weights, elementwise products and sums, which every SIMD width rounds alike;
* log10 by :func:`math.log10`, element by element.

Its features agree with faster-whisper's within float32 rounding of the STFT (at most about 1e-5 on the demo
corpus, where the features span about -0.5 to 1.5; the tests compare them), so the transcripts are those of
the same model, and the features are the same bits whatever SIMD code NumPy and OpenBLAS choose.
"""

from __future__ import annotations

import math

import numpy as np

FEATURES_VERSION = "portable-log-mel-1"
SAMPLING_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
N_MELS = 80
CHUNK_LENGTH_S = 30
LOG_FLOOR = 1e-10
DYNAMIC_RANGE = 8.0


def hann_window(length: int) -> np.ndarray:
    """The periodic Hann window, w[n] = 0.5 - 0.5 cos(2 pi n / N), n = 0..N-1, in float64."""
    return np.array([0.5 - 0.5 * math.cos(2.0 * math.pi * n / length) for n in range(length)], dtype=np.float64)


def mel_filterbank(sampling_rate: int = SAMPLING_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Slaney's Mel filterbank (librosa's ``htk=False, norm='slaney'``), shape (n_mels, n_fft // 2 + 1).

    Mel scale: linear below 1 kHz (200/3 Hz per Mel), logarithmic above (a factor 6.4 per 27 Mel); band m
    is the triangle between centres f[m], f[m+1], f[m+2], scaled by 2 / (f[m+2] - f[m]).
    """
    f_sp = 200.0 / 3.0
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    max_mel = min_log_mel + math.log(sampling_rate / 2.0 / min_log_hz) / logstep
    centres = []
    for index in range(n_mels + 2):
        mel = max_mel * index / (n_mels + 1)
        centres.append(f_sp * mel if mel < min_log_mel else min_log_hz * math.exp(logstep * (mel - min_log_mel)))
    bins = [k * sampling_rate / n_fft for k in range(n_fft // 2 + 1)]
    weights = np.zeros((n_mels, len(bins)), dtype=np.float64)
    for band in range(n_mels):
        low, centre, high = centres[band], centres[band + 1], centres[band + 2]
        scale = 2.0 / (high - low)
        for k, frequency in enumerate(bins):
            rising = (frequency - low) / (centre - low)
            falling = (high - frequency) / (high - centre)
            weight = min(rising, falling)
            if weight > 0.0:
                weights[band, k] = weight * scale
    return weights


class PortableFeatureExtractor:
    """A drop-in for ``faster_whisper.feature_extractor.FeatureExtractor`` (same attributes and call).

    ``__call__(waveform, padding=160, chunk_length=None)`` returns the (80, len // 160) float32 log-Mel
    spectrogram of ``waveform`` with ``padding`` zero samples appended (centred, reflect-padded STFT of
    1 + len // 160 frames, the last one dropped, as Whisper and faster-whisper do).
    """

    def __init__(
        self,
        feature_size: int = N_MELS,
        sampling_rate: int = SAMPLING_RATE,
        hop_length: int = HOP_LENGTH,
        chunk_length: int = CHUNK_LENGTH_S,
        n_fft: int = N_FFT,
    ) -> None:
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.chunk_length = chunk_length
        self.n_samples = chunk_length * sampling_rate
        self.nb_max_frames = self.n_samples // hop_length
        self.time_per_frame = hop_length / sampling_rate
        self.sampling_rate = sampling_rate
        self.window = hann_window(n_fft)
        filters = mel_filterbank(sampling_rate, n_fft, feature_size)
        self.mel_filters = filters.astype(np.float32)
        self._bands = [
            [(int(k), float(filters[band, k])) for k in np.flatnonzero(filters[band])] for band in range(feature_size)
        ]

    def __call__(self, waveform: np.ndarray, padding: int = 160, chunk_length: int | None = None) -> np.ndarray:
        if chunk_length is not None:
            self.n_samples = chunk_length * self.sampling_rate
            self.nb_max_frames = self.n_samples // self.hop_length
        samples = np.asarray(waveform, dtype=np.float32).astype(np.float64)
        if padding:
            samples = np.concatenate([samples, np.zeros(padding, dtype=np.float64)])
        power = self.power_spectrogram(samples)
        mel = np.zeros((len(self._bands), power.shape[1]), dtype=np.float64)
        for band, weights in enumerate(self._bands):
            row = mel[band]
            for k, weight in weights:
                row += weight * power[k]
        clipped = np.maximum(mel, LOG_FLOOR).ravel().tolist()
        log_mel = np.array([math.log10(value) for value in clipped], dtype=np.float64).reshape(mel.shape)
        log_mel = np.maximum(log_mel, log_mel.max() - DYNAMIC_RANGE)
        return ((log_mel + 4.0) / 4.0).astype(np.float32)

    def power_spectrogram(self, samples: np.ndarray) -> np.ndarray:
        """|STFT|^2 of the centred, reflect-padded signal, (n_fft // 2 + 1, frames - 1) in float64: Whisper
        drops the last STFT frame, faster-whisper drops it here too."""
        half = self.n_fft // 2
        if len(samples) <= half:
            raise ValueError(f"Whisper features need more than {half} samples, got {len(samples)}")
        padded = np.pad(samples, (half, half), mode="reflect")
        frames = 1 + (len(padded) - self.n_fft) // self.hop_length
        starts = np.arange(frames) * self.hop_length
        windowed = padded[starts[:, None] + np.arange(self.n_fft)[None, :]] * self.window
        spectrum = np.fft.rfft(windowed, n=self.n_fft, axis=-1)[:-1].T
        return spectrum.real * spectrum.real + spectrum.imag * spectrum.imag
