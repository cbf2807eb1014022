"""The model interface every backend implements.

A backend is registered under a spec prefix (``sim``, ``hf``, ``vllm``, ``openai``...). Building it from
its spec is cheap and never loads weights: :meth:`Backend.fingerprint` must identify the exact model
(backend, identity, revision or a hash of its config and weight files) without loading it, because the
cache is keyed by it and a fully cached run never loads the model. :meth:`Backend.load` does the
expensive part and is called lazily, on the first cache miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

SAMPLE_RATE = 16_000


class ModelError(RuntimeError):
    """A model could not be built, loaded or asked; the message says which and why."""


@dataclasses.dataclass(frozen=True, eq=False)
class Audio:
    """Mono float32 audio at :data:`SAMPLE_RATE`, identified by a hash of its samples (not its path)."""

    samples: np.ndarray
    sample_rate: int = SAMPLE_RATE

    @property
    def content_hash(self) -> str:
        cached = self.__dict__.get("_content_hash")
        if cached is None:
            digest = hashlib.sha256()
            digest.update(str(self.sample_rate).encode())
            digest.update(np.ascontiguousarray(self.samples, dtype="<f4").tobytes())
            cached = digest.hexdigest()
            object.__setattr__(self, "_content_hash", cached)
        return cached

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    """One prompt to a model: the rendered user text, optional audio, optional system text."""

    prompt: str
    audio: Audio | None = None
    system: str | None = None

    def cache_identity(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "system": self.system,
            "audio": None if self.audio is None else self.audio.content_hash,
        }


@dataclasses.dataclass(frozen=True)
class DecodingParams:
    """Every decoding parameter, passed explicitly to the backend and hashed into the cache key.

    The default is greedy decoding; backends must not let a checkpoint's own generation defaults leak in.
    """

    max_new_tokens: int = 256
    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, source: str = "decoding parameters") -> DecodingParams:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {unknown}; valid keys are {sorted(known)}")
        return cls(**dict(values))


@runtime_checkable
class Model(Protocol):
    """A loaded model: batched text generation from (audio +) text requests."""

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        """One answer per request, in order. Raise :class:`ModelError` for a failure of the whole batch."""
        ...


class Backend(Protocol):
    """A model named by a spec string; cheap to build, loads weights only in :meth:`load`."""

    spec: str

    def fingerprint(self) -> str:
        """A stable string that changes whenever the model's weights or behaviour could change."""
        ...

    def load(self) -> Model: ...


def validated_options(spec: str, backend: str, options: Mapping[str, Any] | None, known: set[str] | frozenset[str]) -> dict[str, Any]:
    """A copy of a backend's option block; an unknown key is a :class:`ModelError` listing the valid ones."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ModelError(f"{spec}: unknown {backend} option(s) {unknown}; valid options are {sorted(known)}")
    return options


def stable_hash(payload: Any) -> str:
    """SHA-256 of a JSON rendering with sorted keys: equal payloads hash equal across processes."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
