"""What Whisper's portable log-Mel features cost against faster-whisper's own, on the demo corpus, in the same run.

:class:`~harness.models.whisper_features.PortableFeatureExtractor` (float64, exactly rounded elementwise steps,
a fixed-order Mel sum, ``math.log10`` per element) replaces faster-whisper's float32 NumPy/BLAS extractor so
that the features are the same bits on every CPU. Prints the seconds per recording of each over the demo
corpus's recordings (each extractor warmed up once, best of ``--repeats``), the ratio portable / faster-whisper,
the largest absolute difference between their features, and the same ratio against one Whisper transcription
(the cost that matters: features are computed once per recording).

Usage: ``python benchmarks/bench_whisper_features.py [--recordings 60] [--repeats 3]`` (needs the ``[demo]``
extra; under a minute).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import soundfile

from harness.data import DEMO_CORPUS_PATH, resolve_corpus
from harness.models.numerics import pin_cpu_numerics
from harness.models.whisper_features import PortableFeatureExtractor


def seconds_per_recording(extract, clips: list[np.ndarray], repeats: int) -> float:
    extract(clips[0])
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for clip in clips:
            extract(clip)
        best = min(best, time.perf_counter() - started)
    return best / len(clips)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    pin_cpu_numerics("bench_whisper_features")
    from faster_whisper.feature_extractor import FeatureExtractor

    from harness.core.requests import Audio, DecodingParams, GenerationRequest
    from harness.models import build_backend

    paths = list(resolve_corpus("demo", None).table["audio"])[: args.recordings]
    clips = [soundfile.read(DEMO_CORPUS_PATH / path, dtype="float32")[0] for path in paths]
    theirs, ours = FeatureExtractor(), PortableFeatureExtractor()
    baseline = seconds_per_recording(theirs, clips, args.repeats)
    portable = seconds_per_recording(ours, clips, args.repeats)
    worst = max(float(np.abs(theirs(clip) - ours(clip)).max()) for clip in clips)
    whisper = build_backend("whisper:tiny.en").load()
    started = time.perf_counter()
    for clip in clips[:10]:
        whisper.transcribe(GenerationRequest(prompt="", audio=Audio(samples=clip, sample_rate=16000)), DecodingParams())
    transcribe = (time.perf_counter() - started) / min(10, len(clips))
    print(f"recordings: {len(clips)}; repeats: {args.repeats}")
    print(f"faster-whisper features: {baseline * 1000:.2f} ms per recording")
    print(f"portable features:       {portable * 1000:.2f} ms per recording")
    print(f"ratio portable / faster-whisper: {portable / baseline:.2f}")
    print(f"largest |difference| between the two: {worst:.2e}")
    print(
        f"one transcription: {transcribe * 1000:.0f} ms; portable features as a share of it: {portable / transcribe:.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
