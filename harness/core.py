"""Types and helpers that every layer of the harness shares; this module imports no other harness module.

The layers run one way, ``core -> data -> models -> extraction -> metrics -> checks -> gate -> plugin/report``,
and what more than one of them needs lives here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

def require_columns(table: Any, columns: Sequence[str], what: str = "table", *, nonempty: bool = False) -> None:
    """Raise ``ValueError`` naming ``what`` when ``table`` lacks any of ``columns`` (``TypeError`` if it is no DataFrame);
    with ``nonempty``, also when it has no rows."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(table.columns)}")
    if nonempty and table.empty:
        raise ValueError(f"{what}: the table has no rows")


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|Z| > z) = alpha`` for a standard normal ``Z`` (1.96 at ``alpha = 0.05``)."""
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def finite_or_none(value: Any) -> float | None:
    """``float(value)``, or ``None`` for ``None``, NaN and infinities (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


# --------------------------------------------------------------------------------------------------------
# Atomic output files


_TEMP_SUFFIX = ".lalm-tmp"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None):
    """Write ``path`` all at once: yield a file object on a temporary file in the same folder, then flush,
    ``fsync``, ``os.replace`` it onto ``path`` and ``fsync`` the folder.

    A process killed at any point (``kill -9``) leaves either the previous file or the complete new one, never
    a partial file under ``path``. The temporary file is ``.<name>.<pid>.<random>.lalm-tmp``; when the block
    raises it is removed and ``path`` is untouched; one left by a killed process is removed by the next
    successful write of the same ``path`` (its pid is no longer running). ``mode`` is ``"wb"`` or ``"w"``
    (text, ``encoding`` default UTF-8).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write: mode must be 'wb' or 'w', got {mode!r}")
    target = Path(path)
    temp = temporary_path(target)
    try:
        with open(temp, mode, encoding=(encoding or "utf-8") if mode == "w" else None) as handle:
            yield handle
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    commit_temporary(temp, target)


def temporary_path(target: str | os.PathLike) -> Path:
    """A new empty temporary file beside ``target`` (``.<name>.<pid>.<random>.lalm-tmp``), for
    :func:`commit_temporary` (writers that insist on a path of their own, e.g. pytest's junit XML)."""
    target = Path(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=_TEMP_SUFFIX, dir=target.parent)
    os.close(fd)
    return Path(name)


def commit_temporary(temp: str | os.PathLike, target: str | os.PathLike) -> None:
    """``fsync`` the finished ``temp``, rename it onto ``target`` (keeping ``target``'s permissions, else the
    umask's), ``fsync`` the folder and remove temporaries that killed writers of ``target`` left behind. On
    failure ``temp`` is removed and the error raised; ``target`` is then untouched."""
    temp, target = Path(temp), Path(target)
    try:
        with open(temp, "rb+") as handle:
            os.fsync(handle.fileno())
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _fsync_folder(target.parent)
    _remove_stale_temporaries(target)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Replace ``path`` by ``data`` atomically (:func:`atomic_write`); returns the path."""
    with atomic_write(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Replace ``path`` by ``text`` atomically (:func:`atomic_write`); returns the path."""
    return atomic_write_bytes(path, text.encode(encoding))


def ensure_writable(path: str | os.PathLike) -> Path:
    """Make ``path``'s folder (and its parents) when missing and check that a file can be written there, so
    that an output path is refused before any work rather than after it; raises :class:`OSError` (naming
    the path) where it cannot."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder")
    probe = target.parent / f".{target.name}.{os.getpid()}.probe.lalm-tmp"
    try:
        probe.write_bytes(b"")
    finally:
        probe.unlink(missing_ok=True)
    return target


class LockHeld(OSError):
    """:func:`file_lock` without waiting found the lock held; ``holder`` is what its holder wrote in it (its pid)."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = path, holder


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, *, wait: bool = True) -> Iterator[None]:
    """An exclusive inter-process lock on ``path`` (``flock``), removed when released, so that no lock file stays
    behind. The holder writes its pid in it. A waiter that wakes on a file already removed (or replaced) by the
    holder retries on the current one. ``wait=False`` raises :class:`LockHeld` instead of waiting."""
    import fcntl

    path = Path(path)
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            raise LockHeld(path, holder) from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()
    try:
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temporaries(target: Path) -> None:
    """Remove ``.<name>.<pid>.*.lalm-tmp`` beside ``target`` whose writing process is gone."""
    for temp in target.parent.glob(f".{glob.escape(target.name)}.*{_TEMP_SUFFIX}"):
        pid_text = temp.name[len(target.name) + 2 :].split(".", 1)[0]
        if not pid_text.isdigit() or _process_alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            temp.unlink()


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


# --------------------------------------------------------------------------------------------------------
# Secrets


REDACTED = "[REDACTED]"
_SECRET_PATTERNS = (
    # "Authorization: Bearer <token>", "'Authorization': 'Basic <token>'", JSON or header form
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?[^\s\"',;}]+"),
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]+"),
    # api-key / api_key / x-api-key headers and fields
    re.compile(r"(?i)((?:x-)?api[-_ ]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"),
    # OpenAI-style secret keys: sk-..., sk-proj-..., sess-...
    re.compile(r"\b((?:sk|sess|rk|pk)-)[A-Za-z0-9_\-]{8,}"),
)


def redact(text: Any, secrets: Sequence[str | None] = ()) -> str:
    """``str(text)`` with credentials replaced by ``[REDACTED]``: every non-empty value of ``secrets`` (e.g. the
    API key itself, however the server echoed it, and its first 6+ characters at the very end, where a body was cut
    short), then ``Authorization: <scheme> <token>``, ``Bearer <token>``,
    ``api-key``/``x-api-key``/``api_key`` headers or fields, and ``sk-``/``sess-``-like tokens (8+ characters
    after the prefix). Redacting twice changes nothing."""
    out = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(secret, REDACTED)
        for k in range(len(secret) - 1, 5, -1):  # a body cut short inside the key: its leading 6+ characters
            if out.endswith(secret[:k]):
                out = out[:-k] + REDACTED
                break
    for pattern in _SECRET_PATTERNS:
        out = pattern.sub(_redaction, out)
    return out


def _redaction(match: re.Match) -> str:
    prefix = match.group(1) or ""
    scheme = match.group(2) if (match.re.groups >= 2 and match.group(2)) else ""
    token = match.group(0)[len(prefix) :]
    if token.strip() == REDACTED or token.endswith(REDACTED):
        return match.group(0)
    return f"{prefix}{scheme + ' ' if scheme else ''}{REDACTED}"
def stable_hash(payload: Any) -> str:
    """SHA-256 of a JSON rendering with sorted keys: equal payloads hash equal across processes."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def derived_seed(*parts: Any) -> int:
    """A 32-bit seed derived from ``parts`` (the run's seed and a case's identity), stable across processes:
    the first 8 hex digits of ``stable_hash(list(parts))``."""
    return int(stable_hash(list(parts))[:8], 16)



# The BASIS-Bench evaluation modes (§3.4: modality x marker) and robustness tasks (§3.1), in report order.
MODES = ("speech-implicit", "speech-explicit", "text-implicit", "text-explicit")


def mode_has_audio(mode: str | None) -> bool:
    """Whether a BASIS evaluation mode gives the model the recording (the speech modes) or only its text."""
    return str(mode).startswith("speech-")
ROBUSTNESS_TASKS = ("asr", "sqa")
PARETO_MODE = "speech-implicit"  # the mode of the personalization-versus-ICAT Pareto plot (BASIS-Bench Figure 2)

# The status of one answer's attribute extraction, as counted in every nTVD record.
EXTRACTED = "extracted"
REFUSAL = "refusal"
UNEXTRACTABLE = "unextractable"
EMPTY = "empty"


SAMPLE_RATE = 16_000


class ModelError(RuntimeError):
    """A model could not be built, loaded or asked; the message says which and why, ``source`` (when known)
    names what failed: a server URL, a file, an option key."""

    def __init__(self, message: str = "", *, source: str | None = None):
        super().__init__(message)
        self.source = source


class ServerError(ModelError):
    """A model server could not be reached or answered with an error; ``source`` is its URL."""


class PartialGenerationError(ServerError):
    """Some requests of a batch failed; ``answers`` maps the position of each request that succeeded to its answer."""

    def __init__(self, message: str, answers: Mapping[int, str], *, source: str | None = None):
        super().__init__(message, source=source)
        self.answers = dict(answers)


class CaseNotMeasured(RuntimeError):
    """A case's data cannot support a bias verdict (e.g. nTVD undefined, no ratio fit converged, a large gap
    the design cannot test): the case is unmeasured, never a pass and never a bias fail; the message says
    why, and ``record`` (the case's results.json entry, where one was made) keeps what was computed."""

    def __init__(self, message: str, record: object | None = None):
        super().__init__(message)
        self.record = record


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
