"""The output cache: every model answer in SQLite (WAL), keyed by what determines it.

Key = SHA-256 of (model fingerprint, full decoding parameters, rendered request — prompt, system text and
the audio's *content* hash — and a namespace such as ``generate``). The same audio at two paths is one
entry; a changed decoding parameter, prompt or checkpoint is a different one. Errors are never stored as
answers; an empty output is (it is the model's answer, counted as ``empty`` by the checks, and a re-score from a
filled plan or an export finds it: issue 59, item 4). Several processes (pytest-xdist workers) may read and write at once: WAL
mode, a busy timeout, and ``INSERT OR IGNORE`` (two writers of one key wrote the same answer).

Each entry records its ``origin``: ``generated`` (stored by a run that made it) or ``imported`` (added from a
cache export); entries of caches older than the column read as generated. :meth:`OutputCache.stats` counts
the entries per model and origin (``lalm-fairness-cache stats``, :mod:`harness.cache_cli`).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from harness.core.files import atomic_write, file_lock
from harness.core.requests import GenerationRequest
from harness.core.values import stable_hash, stable_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS outputs (
    key TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    model_fingerprint TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT 'generated'
);
"""
COLUMNS = "key, namespace, model_fingerprint, text, metadata, created, origin"
GENERATED, IMPORTED = "generated", "imported"


class CacheError(ValueError):
    """A cache file or folder cannot be used; the message names the file (and line), ``source`` the path."""

    def __init__(self, message: str, *, source: str | None = None):
        super().__init__(message)
        self.source = source


MMAP_BYTES = 512 * 2**20
"""How much of the database SQLite reads through a memory map (``PRAGMA mmap_size``) instead of a ``read`` call per
page: a re-score looks up every answer by key, and the CREMA-D-sized re-score's 312,000 lookups take about a
quarter less CPU so (its 128 MB database fits; a larger one reads the rest as before). Pages mapped count toward
the process's resident memory."""
EXPORT_FORMAT = "lalm-fairness-cache"
EXPORT_VERSION = 1
EXPORT_FIELDS = ("key", "namespace", "model_fingerprint", "text", "metadata", "created")


def cache_key(namespace: str, model_fingerprint: str, params: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    """``stable_hash({"namespace": namespace, "model": model_fingerprint, "params": dict(params), "request":
    dict(request)})`` (:func:`harness.core.values.stable_hash`)."""
    return cache_keys(namespace, model_fingerprint, params, (request,))[0]


def cache_keys(
    namespace: str, model_fingerprint: str, params: Mapping[str, Any], requests: Iterable[Mapping[str, Any]]
) -> list[str]:
    """:func:`cache_key` of each of ``requests``, byte for byte, with the part they share hashed once. With sorted
    keys the hashed text is ``{"model":M,"namespace":N,"params":P,"request":R}``: all before ``R`` is common, so one
    SHA-256 state fed that prefix is copied per request and fed ``R}`` (:func:`_request_json`), each distinct field
    of the requests (a prompt shared by a batch) escaped and encoded once."""
    common = _common_digest(namespace, model_fingerprint, params)
    encoded_fields: dict[tuple[Any, Any], bytes] = {}
    keys = []
    for request in requests:
        digest = common.copy()
        digest.update(_request_json(request, encoded_fields) + b"}")
        keys.append(digest.hexdigest())
    return keys


def _common_digest(namespace: str, model_fingerprint: str, params: Mapping[str, Any]) -> Any:
    """A SHA-256 state fed the text every key of ``(namespace, model_fingerprint, params)`` starts with."""
    head = stable_json({"model": model_fingerprint, "namespace": namespace, "params": dict(params)})
    return hashlib.sha256((head[:-1] + ',"request":').encode("utf-8"))


def generation_cache_keys(
    namespace: str, model_fingerprint: str, params: Mapping[str, Any], requests: Iterable[GenerationRequest]
) -> list[str]:
    """:func:`cache_keys` of each request's :meth:`~harness.core.requests.GenerationRequest.cache_identity`, byte for
    byte, written without the identity's mapping: its sorted text is ``{"audio":A,"prompt":P,"system":S}``, with
    ``A`` the audio's content hash (hexadecimal, which JSON writes as it is) or ``null``, and each distinct prompt
    and system text escaped once (a batch shares them); a replicate k > 0 writes ``"replicate":k,`` before
    ``"system"``."""
    common = _common_digest(namespace, model_fingerprint, params)
    prompts: dict[str, bytes] = {}
    systems: dict[str | None, bytes] = {}
    keys = []
    for request in requests:
        prompt = prompts.get(request.prompt)
        if prompt is None:
            prompt = prompts[request.prompt] = f'"prompt":{encode_basestring(request.prompt)},'.encode()
        system = systems.get(request.system)
        if system is None:
            text = "null" if request.system is None else encode_basestring(request.system)
            system = systems[request.system] = f'"system":{text}}}}}'.encode()
        audio = b'{"audio":null,' if request.audio is None else f'{{"audio":"{request.audio.content_hash}",'.encode()
        digest = common.copy()
        replicate = f'"replicate":{request.replicate},'.encode() if request.replicate else b""
        digest.update(audio + prompt + replicate + system)
        keys.append(digest.hexdigest())
    return keys


def _request_json(request: Mapping[str, Any], encoded_fields: dict[tuple[Any, Any], bytes]) -> bytes:
    """``stable_json(dict(request))`` in UTF-8. A mapping of text to text or None (a generation request's identity)
    is written directly: items sorted, each ``"key":value`` escaped by ``encode_basestring`` (what ``json``'s
    encoder calls without ``ensure_ascii``) and kept in ``encoded_fields`` for the next request with that field;
    any other key or value makes that raise ``TypeError`` (an unhashable one, the lookup), and the general encoder
    writes it. Only text fields are kept, so a field found there is text."""
    try:
        fields = []
        for item in sorted(request.items()):
            field = encoded_fields.get(item)
            if field is None:
                key, value = item
                text = f"{encode_basestring(key)}:{'null' if value is None else encode_basestring(value)}"
                field = encoded_fields[item] = text.encode("utf-8")
            fields.append(field)
    except TypeError:
        return stable_json(dict(request)).encode("utf-8")
    return b"{" + b",".join(fields) + b"}"


class OutputCache:
    """SQLite store of model outputs under ``directory/outputs.sqlite``.

    A folder that is not one (a regular file in its place) is refused with a :class:`CacheError` naming it.
    A database that SQLite reports as corrupt or as no database at all (``PRAGMA quick_check``, run once on
    opening) is set aside, renamed ``outputs.sqlite.corrupt-<UTC time>`` (:attr:`set_aside`), and the cache
    starts empty; any other SQLite error later is a :class:`CacheError` naming the database.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise CacheError(f"cache folder {self.directory} is a file, not a folder; remove it or choose another --cache-dir",
                             source=str(self.directory))  # fmt: skip
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cache folder {self.directory} cannot be made ({exc})", source=str(self.directory)
            ) from exc
        self.path = self.directory / "outputs.sqlite"
        self.set_aside: Path | None = None
        with self.lock("schema"):
            self._connection = self._open()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        try:
            connection.execute("PRAGMA busy_timeout=60000")
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            problems = [row[0] for row in connection.execute("PRAGMA quick_check").fetchall()]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError(f"quick_check: {'; '.join(map(str, problems[:3]))}")
            connection.executescript(SCHEMA)
            columns = {row[1] for row in connection.execute("PRAGMA table_info(outputs)")}
            if "origin" not in columns:
                connection.execute(f"ALTER TABLE outputs ADD COLUMN origin TEXT NOT NULL DEFAULT '{GENERATED}'")
        except BaseException:
            connection.close()
            raise
        return connection

    def _open(self) -> sqlite3.Connection:
        """The checked connection; a corrupt database is set aside and replaced by an empty one."""
        try:
            return self._connect()
        except sqlite3.OperationalError as exc:  # locked, read-only, out of space: refused, nothing is moved
            raise CacheError(f"cache database {self.path} cannot be opened ({exc})", source=str(self.path)) from exc
        except sqlite3.DatabaseError:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            self.set_aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
            for suffix in ("", "-wal", "-shm"):
                damaged = Path(f"{self.path}{suffix}")
                if damaged.exists():
                    damaged.rename(f"{self.set_aside}{suffix}")
        try:
            return self._connect()
        except sqlite3.Error as exc:
            raise CacheError(f"cache database {self.path} cannot be rebuilt ({exc})", source=str(self.path)) from exc

    @contextlib.contextmanager
    def _named_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise CacheError(f"cache database {self.path}: {exc}", source=str(self.path)) from exc

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {key: text for key, (text, _) in self.lookup(keys).items()}

    def lookup(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Key -> (text, origin) of the stored ``keys``. Looked up in the order given, 500 at a time: a batch's
        requests come in the order a run wrote them, so their rows are neighbours in the table (sorting the keys
        instead gains nothing, measured on the CREMA-D-sized re-score)."""
        found: dict[str, tuple[str, str]] = {}
        with self._named_errors():
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                placeholders = ",".join("?" * len(chunk))
                rows = self._connection.execute(
                    f"SELECT key, text, origin FROM outputs WHERE key IN ({placeholders})", chunk
                )
                found.update((key, (text, origin)) for key, text, origin in rows.fetchall())
        return found

    def put_many(self, entries: Sequence[tuple[str, str, str, str, Mapping[str, Any]]]) -> int:
        """Store (key, namespace, model_fingerprint, text, metadata) rows; an empty text is stored as the empty answer
        it is, a None (no answer) is skipped."""
        rows = [
            (key, namespace, fingerprint, text, json.dumps(dict(metadata), sort_keys=True), time.time(), GENERATED)
            for key, namespace, fingerprint, text, metadata in entries
            if text is not None
        ]
        self._insert(rows)
        return len(rows)

    def _insert(self, rows: Sequence[tuple]) -> None:
        if not rows:
            return
        with self._named_errors():
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                self._connection.executemany(
                    f"INSERT OR IGNORE INTO outputs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", rows
                )
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    def export(self, path: str | Path, keys: Iterable[str] | None = None) -> int:
        """Write the entries (all, or those of ``keys``) to one gzip JSON-lines file; returns the count."""
        path = Path(path)
        query = "SELECT key, namespace, model_fingerprint, text, metadata, created FROM outputs ORDER BY key"
        with self._named_errors():
            rows = self._connection.execute(query).fetchall()
        if keys is not None:
            wanted = set(keys)
            rows = [row for row in rows if row[0] in wanted]
        # written to a temporary file beside ``path`` and renamed: a kill leaves the old export or the new one
        with atomic_write(path, "wb") as raw, gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw) as packed, \
                io.TextIOWrapper(packed, encoding="utf-8") as handle:  # fmt: skip
            handle.write(json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "entries": len(rows)}) + "\n")
            for row in rows:
                handle.write(json.dumps(dict(zip(EXPORT_FIELDS, row)), ensure_ascii=False) + "\n")
        return len(rows)

    def import_file(self, path: str | Path) -> int:
        """Add the entries of an exported file (existing keys are kept) as ``imported``; returns the number added
        (an entry the cache held already is not counted: issue 59, item 8).

        The whole file is validated before anything is written, so a damaged file adds nothing. The count per
        model is :meth:`import_counts`.
        """
        return sum(self.import_counts(path).values())

    def import_counts(self, path: str | Path) -> dict[str, int]:
        """:meth:`import_file`, returning the number of entries added per model (the spec that generated each
        entry, from its metadata; else its model fingerprint); entries already in the cache count nowhere."""
        path = Path(path)
        if not path.is_file():
            raise CacheError(f"{path}: cache export does not exist")
        rows = []
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                header = json.loads(handle.readline() or "{}")
                if header.get("format") != EXPORT_FORMAT or header.get("version") != EXPORT_VERSION:
                    raise CacheError(
                        f"{path}: not a lalm-fairness cache export (format {EXPORT_FORMAT} v{EXPORT_VERSION})"
                    )
                for line_number, line in enumerate(handle, start=2):
                    entry = json.loads(line)
                    missing = [field for field in EXPORT_FIELDS if field not in entry]
                    if missing:
                        raise CacheError(f"{path}, line {line_number}: entry lacks {missing}")
                    rows.append((*(entry[field] for field in EXPORT_FIELDS), IMPORTED))
        except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CacheError(f"{path}: cannot be read as a cache export ({exc})") from exc
        if len(rows) != header.get("entries"):
            raise CacheError(
                f"{path}: header announces {header.get('entries')} entries, file holds {len(rows)} (truncated?)"
            )
        present = set(self.lookup([row[0] for row in rows]))
        self._insert(rows)
        counts: dict[str, int] = {}
        for row in rows:
            if row[0] not in present:
                model = entry_model(row[4], row[2])
                counts[model] = counts.get(model, 0) + 1
        return counts

    def stats(self) -> list[dict[str, Any]]:
        """Per model (spec, else fingerprint) and namespace: entries generated, imported, and in all."""
        rows = self._connection.execute("SELECT namespace, model_fingerprint, metadata, origin FROM outputs").fetchall()
        table: dict[tuple[str, str], dict[str, Any]] = {}
        for namespace, fingerprint, metadata, origin in rows:
            row = table.setdefault(
                (entry_model(metadata, fingerprint), namespace),
                {"model": entry_model(metadata, fingerprint), "namespace": namespace, GENERATED: 0, IMPORTED: 0},
            )
            row[IMPORTED if origin == IMPORTED else GENERATED] += 1
        return [row | {"entries": row[GENERATED] + row[IMPORTED]} for _, row in sorted(table.items())]

    def __len__(self) -> int:
        with self._named_errors():
            return int(self._connection.execute("SELECT COUNT(*) FROM outputs").fetchone()[0])

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """An exclusive inter-process lock, so that one worker generates what the others then read."""
        with file_lock(self.directory / f".{stable_hash(name)[:24]}.lock"):
            yield

    def close(self) -> None:
        self._connection.close()


def entry_model(metadata: str, fingerprint: str) -> str:
    """The spec an entry's metadata names (``{"spec": ...}``), else its model fingerprint."""
    try:
        spec = json.loads(metadata).get("spec")
    except (ValueError, AttributeError):
        spec = None
    return spec if isinstance(spec, str) and spec else fingerprint
