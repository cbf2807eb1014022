"""The model interface every backend implements.

A backend is registered under a spec prefix (``sim``, ``hf``, ``vllm``, ``openai``...). Building it from
its spec is cheap and never loads weights: :meth:`Backend.fingerprint` must identify the exact model
(backend, identity, revision or a hash of its config and weight files) without loading it, because the
cache is keyed by it and a fully cached run never loads the model. :meth:`Backend.load` does the
expensive part and is called lazily, on the first cache miss.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.core.errors import ModelError
from harness.core.requests import DecodingParams, GenerationRequest

if TYPE_CHECKING:
    from harness.data import Corpus

DTYPES = ("auto", "float32", "bfloat16", "float16")


def resolve_dtype(spec: str, requested: Any, on_gpu: bool) -> str:
    """The dtype a backend runs: ``requested``, or for ``auto`` bfloat16 on a bf16-capable CUDA device,
    float16 on another CUDA device, float32 on a CPU.

    The harness resolves ``auto`` itself and hands the engine the result, so that no engine chooses per
    machine (vLLM's own ``auto`` picks bfloat16 on an AVX512_BF16 CPU and float32 on others), and the
    fingerprint records what ran.
    """
    if requested not in DTYPES:
        raise ModelError(f"{spec}: dtype must be one of {DTYPES}, got {requested!r}")
    if requested != "auto":
        return str(requested)
    if on_gpu:
        try:
            import torch

            if torch.cuda.is_available():
                return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        except ImportError:
            pass
    return "float32"


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (without torch, nothing runs on a GPU)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@runtime_checkable
class Model(Protocol):
    """A loaded model: batched text generation from (audio +) text requests."""

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        """One answer per request, in order. Raise :class:`ModelError` for a failure of the whole batch."""
        ...


def release_model(model: Any) -> None:
    """Give back what a loaded model holds: its own ``release()`` where it has one (a vLLM engine shut down, an
    ``hf:`` model's weights dropped), then Python's garbage and, where torch has initialised CUDA, its cache."""
    release = getattr(model, "release", None)
    if callable(release):
        release()
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


@dataclasses.dataclass(frozen=True)
class StageSpec:
    """A component model of a composite backend, as that backend runs it: spec, decoding and option block."""

    spec: str
    decoding: DecodingParams
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class CachedStage(Protocol):
    """A stage model behind the run's output cache (:class:`harness.generation.cached_model.CachedModel`)."""

    def generate(self, requests: Sequence[GenerationRequest], label: str = "") -> list[str]: ...


StageFactory = Callable[[StageSpec, int], CachedStage]
"""Builds a cached stage model from its :class:`StageSpec` and generation chunk size."""


class Backend(Protocol):
    """A model named by a spec string; cheap to build, loads weights only in :meth:`load`.

    Backends subclass this protocol explicitly, so that they inherit the defaults below. What only some backends
    do is a capability they declare by subclassing its protocol as well: :class:`HearsCorpora` (a simulator),
    :class:`ComposedOfStages`, :class:`TranscribedByStage` and :class:`SplitsOutput` (the cascade).
    """

    spec: str

    def fingerprint(self) -> str:
        """A stable string that changes whenever the model's weights or behaviour could change."""
        ...

    def load(self) -> Model: ...

    def resolved_settings(self) -> dict[str, Any]:
        """The settings this backend runs with where an option left the choice open (``auto``): the values
        its fingerprint records, for the run metadata and the report's Compute row."""
        return {}

    def unavailable(self) -> str | None:
        """Why this model cannot be loaded on this machine, found without loading it (a checkpoint path that does
        not exist, a framework not installed), or None. Asked before any case when the run may load models, so
        that it stops with one error (exit 4) rather than one unmeasured case per case."""
        return None

    def vibe_variant(self) -> dict[str, str] | None:
        """The VIBE protocol settings this model needs instead of the paper's (``protocol``, ``extractor``, and
        ``why``), or None. A declared variant is a deviation, named on the report's first screen and in
        results.json (:mod:`harness.extraction.vibe_protocol`); a thresholds file or ``--extractor`` overrides it."""
        return None

    def semantic_source(self) -> Backend | None:
        """The model whose forward pass over a text gives this model's own semantic embeddings (semantic-aware
        paper §III-B: Embed-AGG and Embed-EOWL "from the same LALM under evaluation"): a backend whose loaded model
        has ``semantic_pass()``, or None where its weights are not on this machine (the covariates then fall back
        to an external embedder, named as a deviation; :mod:`harness.semantic`)."""
        return None

    def memory_device(self) -> str | None:
        """The device whose memory the loaded model holds (``cuda``, ``cpu``), for the run's residency
        (:mod:`harness.models.residency`); None for a model that holds none in this process (a simulator, a server)."""
        return None


@runtime_checkable
class HearsCorpora(Protocol):
    """Capability: told each corpus of the session before it is asked anything. A real model has no use for it; a
    simulator learns the words of its recordings (:class:`harness.models.sim.SimulatorBackend`)."""

    def hear_corpus(self, corpus: Corpus) -> None: ...


@runtime_checkable
class PreparesRequests(Protocol):
    """Capability of a loaded model: told the requests it is about to answer (those the cache lacks), before they
    are asked chunk by chunk, so that it can do their per-clip work over the cores at once (the simulator's F0,
    :func:`harness.models.sim.prepare_f0`). What it prepares must not change any answer."""

    def prepare_requests(self, requests: Sequence[GenerationRequest], progress: bool = False) -> None: ...


@runtime_checkable
class ComposedOfStages(Protocol):
    """Capability: a composite model (the cascade) whose stages are models of their own, cached in the run's output
    cache under their own fingerprints and loaded together."""

    def compose(self, stage: StageFactory) -> None:
        """Receive the factory of cached stage models, so that the stages' outputs live in the run's cache."""
        ...

    def resident_stages(self) -> dict[str, Mapping[str, Any]]:
        """Spec -> option block of the stages that must be loaded together to answer one request; they split a
        device's memory budget."""
        ...


@runtime_checkable
class TranscribedByStage(Protocol):
    """Capability: a model whose WER checks read one of its stages (the cascade's ASR stage, asked with an empty
    prompt) instead of asking the model itself :data:`harness.tasks.asr.TRANSCRIPTION_PROMPT`."""

    def transcription_source(self) -> StageSpec: ...


@dataclasses.dataclass(frozen=True)
class AnswerParts:
    """One output of a model, in its parts: what its ASR stage ``heard`` and what its voice stage said of the
    speaker's ``voice`` (None for a stage the model does not have, or a request without audio), and the ``answer``."""

    heard: str | None
    voice: str | None
    answer: str


@runtime_checkable
class SplitsOutput(Protocol):
    """Capability: a model whose output holds what its stages said before its answer (the cascade); it splits its
    own output, so that nothing downstream parses it."""

    def answer_parts(self, text: str) -> AnswerParts: ...


def answer_parts(backend: Backend, texts: Sequence[str]) -> list[AnswerParts]:
    """Each output of ``backend`` in its parts: split by the backend where it declares :class:`SplitsOutput`, else
    the whole text is the answer."""
    if isinstance(backend, SplitsOutput):
        return [backend.answer_parts(text) for text in texts]
    return [AnswerParts(None, None, text) for text in texts]


def resident_stages(backend: Backend) -> dict[str, Mapping[str, Any]]:
    """The stages ``backend`` loads together (:class:`ComposedOfStages`); none for a model without stages."""
    return backend.resident_stages() if isinstance(backend, ComposedOfStages) else {}


def finished_answer(text: str) -> str:
    """The answer text every generating backend returns for a decoded completion.

    Trailing U+FFFD characters are dropped first: they are the decoding of a UTF-8 sequence that the token
    limit cut short, which vLLM's incremental detokeniser withholds (offline and served alike) while
    ``tokenizer.decode`` renders it; then surrounding whitespace (``str.strip``) is removed. So the same
    tokens give the same text through ``hf:``, ``vllm:`` and ``openai:`` (a server's raw reply may keep a
    leading space that transformers' decoding of the same tokens shows too).
    """
    return text.rstrip("\ufffd").strip()


def bundled_weights(spec: str, family: str, target: str, bundled: Mapping[str, Any]) -> Any:
    """The weights ``bundled[target]`` of a backend that serves bundled models only; an unknown ``target`` is a
    :class:`ModelError` listing the bundled ones."""
    if target not in bundled:
        raise ModelError(f"{spec}: unknown {family} model {target!r}; bundled models: {sorted(bundled)}")
    return bundled[target]


def option_choice(spec: str, options: Mapping[str, Any], name: str, default: str, allowed: Sequence[str]) -> str:
    """Option ``name`` (``default`` when absent) as a string, which must be one of ``allowed``
    (else a :class:`ModelError`)."""
    value = str(options.get(name, default))
    if value not in allowed:
        raise ModelError(f"{spec}: {name} must be one of {allowed}, got {value!r}")
    return value


def validated_options(
    spec: str, backend: str, options: Mapping[str, Any] | None, known: set[str] | frozenset[str]
) -> dict[str, Any]:
    """A copy of a backend's option block; an unknown key is a :class:`ModelError` listing the valid ones."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ModelError(f"{spec}: unknown {backend} option(s) {unknown}; valid options are {sorted(known)}")
    return options
