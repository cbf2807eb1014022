"""Cheap, exact model fingerprints: what the cache is keyed by, computed without loading weights.

* A local checkpoint directory: a hash of the *contents* of its small files (configs, tokenizer, chat
  template, processor configs) and of the *names, sizes and modification times* of its weight files
  (hashing gigabytes would not be cheap). Two different checkpoints written to one path never share a
  fingerprint: a changed config changes the hash, and rewritten weights change size or mtime.
* A hub id: the id plus the revision. When no revision is pinned, the commit that the local hub cache
  resolves ``main`` to is used if the model is cached; otherwise the fingerprint says ``unpinned``
  (a later download of a newer ``main`` would then share it: pin ``revision:`` for reproducible gates).
* Always: the backend name, the behaviour-relevant options (dtype, architecture...) and the versions
  of the libraries that compute the outputs.

Secrets never enter a fingerprint: option keys that look like credentials are refused.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.core.values import stable_hash

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx", ".npz")
# Larger non-weight files are described by stat, not read (a big tokenizer.json is still read: < 64 MiB).
MAX_HASHED_BYTES = 64 * 1024 * 1024
_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "credential", "credentials"}


def _is_weight(path: Path) -> bool:
    return path.name.endswith(WEIGHT_SUFFIXES)


def directory_digest(root: str | os.PathLike, *, exclude: Iterable[str] = (".git", ".cache", "__pycache__")) -> str:
    """Content hash of a checkpoint directory (see module doc); ``exclude`` names subfolders to skip."""
    root = Path(root)
    skipped = set(exclude)
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in skipped)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            try:
                st = path.stat()  # follows symlinks (hub snapshots link into blobs)
            except OSError:
                continue
            if _is_weight(path) or st.st_size > MAX_HASHED_BYTES:
                digest.update(f"W {rel} {st.st_size} {st.st_mtime_ns}\n".encode())
            else:
                digest.update(f"F {rel} {st.st_size}\n".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def hub_cache_revision(repo_id: str, revision: str | None = None) -> str | None:
    """The commit the local Hugging Face cache resolves ``revision`` (default ``main``) to, if cached."""
    ref = revision or "main"
    if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref):
        return ref
    home = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface")), "hub"
    )
    ref_file = Path(home) / f"models--{repo_id.replace('/', '--')}" / "refs" / ref
    try:
        return ref_file.read_text().strip() or None
    except OSError:
        return None


def library_versions(names: Iterable[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def check_no_secrets(options: Mapping[str, Any]) -> None:
    for key in options:
        parts = set(str(key).lower().replace("-", "_").split("_"))
        if parts & _SECRET_WORDS and not str(key).lower().endswith("_env"):
            raise ValueError(
                f"option {key!r} looks like a credential and would enter the model fingerprint; "
                "pass secrets through an environment variable named in an *_env option instead"
            )


def model_identity(target: str, revision: str | None = None) -> dict[str, Any]:
    """Identity of a model named by a local path or a hub id (cheap: stat + small reads only)."""
    path = Path(os.path.expanduser(target))
    if path.is_dir():
        return {"kind": "local", "digest": directory_digest(path)}
    if path.is_file():
        st = path.stat()
        return {"kind": "file", "name": path.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    resolved = hub_cache_revision(target, revision)
    return {"kind": "hub", "id": target, "revision": revision, "resolved": resolved or "unpinned"}


def model_fingerprint(
    backend: str,
    target: str,
    *,
    revision: str | None = None,
    options: Mapping[str, Any] | None = None,
    libraries: Iterable[str] = (),
    identity: Mapping[str, Any] | None = None,
) -> str:
    """``<backend>:<sha256>`` over identity, behaviour-relevant options and library versions."""
    opts = dict(options or {})
    check_no_secrets(opts)
    payload = {
        "backend": backend,
        "identity": dict(identity) if identity is not None else model_identity(target, revision),
        "options": opts,
        "libraries": library_versions(libraries),
    }
    return f"{backend}:{stable_hash(payload)}"
