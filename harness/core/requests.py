"""What a model is asked: audio, a generation request and the decoding parameters."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core.answers import AnswerForm

SAMPLE_RATE = 16_000


@dataclasses.dataclass(frozen=True, eq=False)
class Audio:
    """Mono float32 audio at :data:`SAMPLE_RATE`, identified by a hash of its samples (not its path), or, for audio
    derived from a recording by a deterministic recipe, by that ``recipe``.

    ``recipe`` names how the audio was made (:meth:`harness.data.voice_transforms.VoiceTransform.apply`: the source
    recording's content hash, the transform, its version, settings and code, and the resynthesiser's version). Such
    audio is identified by its recipe, not its samples: Praat's resynthesis differs in the last bits between CPUs, so
    a sample hash would make an output made on one machine unfindable on another, while the recipe names the same
    counterfactual recording everywhere, as a recording's own hash does."""

    samples: np.ndarray
    sample_rate: int = SAMPLE_RATE
    recipe: str | None = None

    @property
    def content_hash(self) -> str:
        cached = self.__dict__.get("_content_hash")
        if cached is None:
            digest = hashlib.sha256()
            digest.update(str(self.sample_rate).encode())
            if self.recipe is not None:
                digest.update(b"recipe:" + self.recipe.encode())
            else:
                digest.update(np.ascontiguousarray(self.samples, dtype="<f4").tobytes())
            cached = digest.hexdigest()
            object.__setattr__(self, "_content_hash", cached)
        return cached

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate


def prepare_audio(audios: Sequence[Audio | None], progress: bool = True) -> None:
    """Let audio made on demand make itself in bulk before it is read one clip at a time: each audio class with a
    ``prepare_many(audios)`` class method (a counterfactual arm, :class:`harness.data.voice_transforms.arm_audio.
    ArmAudio`, made over the cores, with a progress bar when ``progress``) is handed its members of ``audios``; other
    audio needs nothing."""
    by_kind: dict[type, list[Audio]] = {}
    for audio in audios:
        if audio is not None and hasattr(type(audio), "prepare_many"):
            by_kind.setdefault(type(audio), []).append(audio)
    for kind, members in by_kind.items():
        kind.prepare_many(members, progress)


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    """One prompt to a model: the rendered user text, optional audio, optional system text, and the form of
    answer the prompt asks for, declared by whoever wrote the prompt (None: a free answer).

    The cache key holds the prompt, system text and audio, not the form: a prompt's writer declares its form,
    so equal prompts carry equal forms. Backends that cannot constrain decoding ignore the form.

    ``replicate`` (issue 58) asks the same request again as a request of its own: replicate k > 0 adds
    ``"replicate": k`` to the cache key (replicate 0, every other request, keys as before), so a cache or a plan
    never answers it with the original's answer and a nondeterministic backend is really asked twice (the audio
    floor's replicate arm, :mod:`harness.gate.audio_floor`). Backends never see it: they answer the request.
    """

    prompt: str
    audio: Audio | None = None
    system: str | None = None
    answer_form: AnswerForm | None = None
    replicate: int = 0

    def cache_identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "prompt": self.prompt,
            "system": self.system,
            "audio": None if self.audio is None else self.audio.content_hash,
        }
        if self.replicate:
            identity["replicate"] = self.replicate
        return identity


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
