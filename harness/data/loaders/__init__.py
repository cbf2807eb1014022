"""Corpus loaders: each turns a distribution's own layout into ``manifest.csv`` + ``corpus.yaml`` (or, for
an item set such as Spoken StereoSet, into a BASIS suite: ``suite.yaml`` and its CSVs).

A loader is ``build(source, output, **options) -> output``: it reads the corpus where it was unpacked,
writes the manifest (audio referenced where it lies, relative to ``output`` by default, never copied)
and checks the result with :func:`harness.data.corpus.load_corpus`. Errors are
:class:`~harness.data.loaders._common.LoaderError` naming the offending file (and line). A new corpus is
one module and one entry in :data:`LOADERS` (or an entry point of group ``lalm_fairness.loaders``).

:func:`prepared_source` is the hook where ``--corpus NAME=DIR`` (and ``--basis-suite NAME=DIR``) are
resolved: when NAME is a loader and DIR an unpacked distribution, the loader runs once into the cache
folder and later runs reuse its output.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.data.loaders._common import LoaderError
from harness.registry import Registry

LOADERS = Registry(
    "corpus loader",
    "loaders",
    {
        "crema-d": "harness.data.loaders.crema_d",
        "speech-accent-archive": "harness.data.loaders.speech_accent_archive",
        "l2-arctic": "harness.data.loaders.l2_arctic",
        "librispeech": "harness.data.loaders.librispeech",
        "common-voice": "harness.data.loaders.common_voice",
        "vctk": "harness.data.loaders.vctk",
        "fair-speech": "harness.data.loaders.fair_speech",
        "air-bench-chat": "harness.data.loaders.air_bench_chat",
        "spoken-stereoset": "harness.data.loaders.spoken_stereoset",
        "sd-qa": "harness.data.loaders.sd_qa",
        "librisqa": "harness.data.loaders.librisqa",
        "spoken-stereoset-plus": "harness.data.loaders.spoken_stereoset_plus",
    },
)
"""Loader name -> its module, which declares ``NAME``, ``DIMENSIONS`` (what it can write, some on request),
``build(source, output, **options)`` and, for an item suite, ``PRODUCES = "suite"`` (default ``"corpus"``)."""


def produces(name: str) -> str:
    """``corpus`` (for ``--corpus``) or ``suite`` (a BASIS item suite, for ``--basis-suite``)."""
    return getattr(LOADERS.load(name), "PRODUCES", "corpus")


def corpus_loaders() -> dict[str, Callable[..., Path]]:
    """The ``build`` of every loader whose output is a corpus."""
    return {name: LOADERS.load(name).build for name in LOADERS if produces(name) == "corpus"}


def suite_loaders() -> dict[str, Callable[..., Path]]:
    """The ``build`` of every loader whose output is a BASIS item suite (suite.yaml)."""
    return {name: LOADERS.load(name).build for name in LOADERS if produces(name) == "suite"}


def loader_dimensions() -> dict[str, tuple[str, ...]]:
    """The dimensions each loader declares: with the shipped demo corpus and BASIS suite, the dimensions a
    thresholds file may name whatever the session's corpora (:func:`harness.thresholds.known_dimensions`)."""
    return {name: tuple(LOADERS.load(name).DIMENSIONS) for name in LOADERS}


# Bump when a loader's output for the same files changes, so cached builds are made again.
CACHE_FORMAT = 1
BUILT_MARKERS = ("corpus.yaml", "suite.yaml")


def build_corpus(name: str, source: str | Path, output: str | Path, **options: Any) -> Path:
    """Run the loader registered as ``name``; returns the folder holding the new corpus.yaml (suite.yaml)."""
    if name not in LOADERS:
        raise KeyError(f"no loader for corpus {name!r}; loaders: {sorted(LOADERS)}")
    return LOADERS.load(name).build(source, output, **options)


def source_fingerprint(source: Path) -> str:
    """SHA-256 of every file below ``source``: relative path, size and modification time (ns), sorted.
    A file added, removed, rewritten or touched changes it; the contents are not read. One ``stat`` per
    file through ``os.scandir``; linked folders are not entered, so a link loop cannot recurse."""
    entries: list[str] = []
    folders = [("", os.fspath(source))]
    while folders:
        prefix, folder = folders.pop()
        with os.scandir(folder) as listing:
            for entry in listing:
                relative = f"{prefix}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    folders.append((f"{relative}/", entry.path))
                elif entry.is_file():
                    status = entry.stat()
                    entries.append(f"{relative}\0{status.st_size}\0{status.st_mtime_ns}\n")
    return hashlib.sha256("".join(sorted(entries)).encode()).hexdigest()


def prepared_source(
    name: str, path: str | Path | None, cache_dir: str | Path, registry: Mapping[str, Callable[..., Path]] | None = None
) -> str | Path | None:
    """``path`` itself, unless ``name`` is a loader of ``registry`` and ``path`` a folder without a
    ``corpus.yaml``/``suite.yaml``: then the unpacked distribution is built by that loader into
    ``<cache_dir>/loaders/<name>-<key>`` once and that folder is returned. The key hashes the loader name,
    :data:`CACHE_FORMAT` and :func:`source_fingerprint`, so a changed source is built again. The build
    goes to a temporary folder renamed into place, so a killed or concurrent run never leaves half a corpus."""
    registry = corpus_loaders() if registry is None else registry
    if name not in registry or path is None:
        return path
    source = Path(path)
    if not source.is_dir() or any((source / marker).is_file() for marker in BUILT_MARKERS):
        return path
    key = hashlib.sha256(json.dumps([name, CACHE_FORMAT, source_fingerprint(source.resolve())]).encode()).hexdigest()[
        :16
    ]
    target = Path(cache_dir) / "loaders" / f"{name}-{key}"
    if any((target / marker).is_file() for marker in BUILT_MARKERS):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        registry[name](source.resolve(), building, relative_audio=False)
        os.replace(building, target)
    except OSError:
        if not any((target / marker).is_file() for marker in BUILT_MARKERS):
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def prepared_suite(spec: str | Path | None, cache_dir: str | Path) -> str | Path | None:
    """``--basis-suite`` as given, or, for ``NAME=DIR`` with NAME a suite loader (``spoken-stereoset``),
    the suite that loader built from DIR into the cache (:func:`prepared_source`)."""
    name, separator, path = str(spec).partition("=")
    loaders = suite_loaders()
    if spec is None or not separator or name not in loaders:
        return spec
    return prepared_source(name, path, cache_dir, loaders)


__all__ = [
    "LOADERS",
    "LoaderError",
    "build_corpus",
    "corpus_loaders",
    "loader_dimensions",
    "prepared_source",
    "prepared_suite",
    "produces",
    "suite_loaders",
]
