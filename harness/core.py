"""Types and helpers that every layer of the harness shares; this module imports no other harness module.

The layers run one way, ``core -> data -> models -> extraction -> metrics -> checks -> gate -> plugin/report``,
and what more than one of them needs lives here.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


def require_columns(table: Any, columns: Sequence[str], what: str = "table") -> None:
    """Raise ``ValueError`` naming ``what`` when ``table`` lacks any of ``columns`` (``TypeError`` if it is no DataFrame)."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(table.columns)}")


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|Z| > z) = alpha`` for a standard normal ``Z`` (1.96 at ``alpha = 0.05``)."""
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def finite_or_none(value: Any) -> float | None:
    """``float(value)``, or ``None`` for ``None``, NaN and infinities (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def stable_hash(payload: Any) -> str:
    """SHA-256 of a JSON rendering with sorted keys: equal payloads hash equal across processes."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def derived_seed(*parts: Any) -> int:
    """A 32-bit seed derived from ``parts`` (the run's seed and a case's identity), stable across processes."""
    return int(stable_hash(list(parts))[:8], 16)


# The BASIS-Bench evaluation modes (§3.4: modality x marker) and robustness tasks (§3.1), in report order.
MODES = ("speech-implicit", "speech-explicit", "text-implicit", "text-explicit")
ROBUSTNESS_TASKS = ("asr", "sqa")
PARETO_MODE = "speech-implicit"  # the mode of the personalization-versus-ICAT Pareto plot (BASIS-Bench Figure 2)

# The status of one answer's attribute extraction, as counted in every nTVD record.
EXTRACTED = "extracted"
REFUSAL = "refusal"
UNEXTRACTABLE = "unextractable"
EMPTY = "empty"


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
class Field:
    """One ``Label: ...`` line of an answer: ``options`` for a closed value, else an open value of ``items`` phrases."""

    label: str
    options: tuple[str, ...] = ()
    items: int = 1

    def placeholder(self) -> str:
        """The line as a prompt asks for it: ``Label: ...``, ``Label: ..., ..., ...`` or ``Label: (a, b or c)``."""
        if self.options:
            listed = self.options[0] if len(self.options) == 1 else f"{', '.join(self.options[:-1])} or {self.options[-1]}"
            return f"{self.label}: ({listed})"
        return f"{self.label}: {', '.join(['...'] * self.items)}"


@dataclasses.dataclass(frozen=True)
class FieldsForm:
    """An answer that ends with one ``Label: value`` line per field (the VIBE tasks)."""

    fields: tuple[Field, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(field.label for field in self.fields)

    def block(self) -> str:
        """The placeholder lines a prompt lists, one per field."""
        return "\n".join(field.placeholder() for field in self.fields)


@dataclasses.dataclass(frozen=True)
class ChoiceForm:
    """An answer that is exactly one of ``options`` (a letter, a label, a score)."""

    options: tuple[str, ...]


JSON_KINDS = ("string", "array", "boolean")


@dataclasses.dataclass(frozen=True)
class JsonForm:
    """One JSON object; ``properties``: ``(key, kind)`` in order, ``kind`` one of :data:`JSON_KINDS`."""

    properties: tuple[tuple[str, str], ...]


AnswerForm = FieldsForm | ChoiceForm | JsonForm


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    """One prompt to a model: the rendered user text, optional audio, optional system text, and the form of
    answer the prompt asks for, declared by whoever wrote the prompt (None: a free answer).

    The cache key holds the prompt, system text and audio, not the form: a prompt's writer declares its form,
    so equal prompts carry equal forms. Backends that cannot constrain decoding ignore the form.
    """

    prompt: str
    audio: Audio | None = None
    system: str | None = None
    answer_form: AnswerForm | None = None

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


def memoized(method: Callable[..., Any]) -> Callable[..., Any]:
    """Memoize a method on its (hashable) arguments, per instance: the results live in the instance's own
    ``__dict__`` and are freed with it (``functools.cache`` on a method would keep every instance alive)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        store = self.__dict__.setdefault("_memoized", {})
        key = (method.__name__, *args)
        if key not in store:
            store[key] = method(self, *args)
        return store[key]

    return wrapper
