"""Small shared helpers: required columns, a normal quantile, JSON-safe floats, stable hashes and seeds, code
fingerprints, per-instance memos."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy import stats

T = TypeVar("T")


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


_STABLE_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def stable_json(payload: Any) -> str:
    """The JSON text :func:`stable_hash` hashes: ``json.dumps(payload, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False, default=str)``, by one encoder built once (``json.dumps`` builds one per call)."""
    return _STABLE_JSON.encode(payload)


def stable_hash(payload: Any) -> str:
    """SHA-256 (hex) of :func:`stable_json` ``(payload)`` in UTF-8: equal payloads hash equal across processes."""
    return hashlib.sha256(stable_json(payload).encode("utf-8")).hexdigest()


def module_source(module: str) -> str:
    """The source text of ``module`` (a dotted name, imported to find its file); a module without a readable
    source file (a compiled-only install) is an error naming it, since its code could not enter a cache key."""
    file = getattr(importlib.import_module(module), "__file__", None)
    if file is None or not file.endswith(".py"):
        raise ValueError(f"module {module}: no Python source file ({file}) to fingerprint its code by")
    with open(file, encoding="utf-8") as handle:
        return handle.read()


@functools.cache
def source_fingerprint(*modules: str) -> str:
    """Identifies code in a cache key: ``stable_hash([source of each of modules, in order])[:16]``, the first 16 hex
    digits of the SHA-256 (:func:`module_source`); any edit of the files, a comment's included, changes it."""
    return stable_hash([module_source(name) for name in modules])[:16]


def derived_seed(*parts: Any) -> int:
    """A 32-bit seed derived from ``parts`` (the run's seed and a case's identity), stable across processes:
    the first 8 hex digits of ``stable_hash(list(parts))``."""
    return int(stable_hash(list(parts))[:8], 16)


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


class Memo:
    """Values computed once per key and kept as long as their owner: the one way a run's context and its model pool
    cache (:mod:`harness.gate.context`). Called as ``memo(key, compute)``; a key of two parts ``(kind, name)`` can be
    listed by kind (:meth:`kept`)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def __call__(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked, its kept value after (nothing is kept when it raises)."""
        if key not in self._values:
            self._values[key] = compute()
        return self._values[key]

    def kept(self, kind: str) -> dict[Hashable, Any]:
        """Name -> value of the ``(kind, name)`` keys computed so far, in the order they were computed."""
        return {
            key[1]: value
            for key, value in self._values.items()
            if isinstance(key, tuple) and len(key) == 2 and key[0] == kind
        }

    def peek(self, key: Hashable) -> Any | None:
        """The value of ``key`` if it was computed, else None (computing nothing)."""
        return self._values.get(key)


def json_lines(text: str, not_json: Callable[[int, json.JSONDecodeError], Exception]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of a JSON Lines ``text``, numbered from 1; a line that is
    not JSON raises ``not_json(number, exc)`` (an error naming the file) from the decoding error."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise not_json(number, exc) from exc
        yield number, value
