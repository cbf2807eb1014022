"""The output cache: every model answer in SQLite (WAL), keyed by what determines it.

Key = SHA-256 of (model fingerprint, full decoding parameters, rendered request — prompt, system text and
the audio's *content* hash — and a namespace such as ``generate``). The same audio at two paths is one
entry; a changed decoding parameter, prompt or checkpoint is a different one. Errors and empty outputs
are never stored as answers. Several processes (pytest-xdist workers) may read and write at once: WAL
mode, a busy timeout, and ``INSERT OR IGNORE`` (two writers of one key wrote the same answer).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.models.base import stable_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS outputs (
    key TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    model_fingerprint TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def cache_key(namespace: str, model_fingerprint: str, params: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    return stable_hash({"namespace": namespace, "model": model_fingerprint, "params": dict(params), "request": dict(request)})


class OutputCache:
    """SQLite store of model outputs under ``directory/outputs.sqlite``."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "outputs.sqlite"
        self._connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        self._connection.execute("PRAGMA busy_timeout=60000")
        with self.lock("schema"):
            self._connection.executescript(SCHEMA)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            placeholders = ",".join("?" * len(chunk))
            rows = self._connection.execute(f"SELECT key, text FROM outputs WHERE key IN ({placeholders})", chunk)
            found.update(rows.fetchall())
        return found

    def put_many(self, entries: Sequence[tuple[str, str, str, str, Mapping[str, Any]]]) -> int:
        """Store (key, namespace, model_fingerprint, text, metadata) rows; empty texts are skipped."""
        rows = [
            (key, namespace, fingerprint, text, json.dumps(dict(metadata), sort_keys=True), time.time())
            for key, namespace, fingerprint, text, metadata in entries
            if text is not None and text.strip()
        ]
        if rows:
            with self._connection:
                self._connection.executemany("INSERT OR IGNORE INTO outputs VALUES (?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def __len__(self) -> int:
        return int(self._connection.execute("SELECT COUNT(*) FROM outputs").fetchone()[0])

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """An exclusive inter-process lock, so that one worker generates what the others then read."""
        lock_path = self.directory / f".{stable_hash(name)[:24]}.lock"
        with open(lock_path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self) -> None:
        self._connection.close()
