"""Corpus loaders: each turns a distribution's own layout into ``manifest.csv`` + ``corpus.yaml`` (or, for
an item set such as Spoken StereoSet, into a BASIS suite: ``suite.yaml`` and its CSVs).

A loader is ``build(source, output, **options) -> output``: it reads the corpus where it was unpacked,
writes the manifest (audio referenced where it lies, relative to ``output`` by default, never copied)
and checks the result with :func:`harness.data.corpus.load_corpus`. Errors are
:class:`~harness.data.loaders._common.LoaderError` naming the offending file (and line). A new corpus is
one module and one entry in :data:`LOADERS` (or :data:`SUITE_LOADERS`).

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

from harness.data.loaders import (
    common_voice, crema_d, fair_speech, l2_arctic, librispeech, speech_accent_archive, spoken_stereoset, vctk,
)
from harness.data.loaders._common import LoaderError

LOADERS: dict[str, Callable[..., Path]] = {
    crema_d.NAME: crema_d.build,
    speech_accent_archive.NAME: speech_accent_archive.build,
    l2_arctic.NAME: l2_arctic.build,
    librispeech.NAME: librispeech.build,
    common_voice.NAME: common_voice.build,
    vctk.NAME: vctk.build,
    fair_speech.NAME: fair_speech.build,
}

# Loaders whose output is a BASIS item suite (suite.yaml), for --basis-suite rather than --corpus.
SUITE_LOADERS: dict[str, Callable[..., Path]] = {
    spoken_stereoset.NAME: spoken_stereoset.build,
}

# The dimensions each loader can write (some on request): with the shipped demo corpus and BASIS suite,
# the dimensions a thresholds file may name whatever the session's corpora (harness.thresholds.known_dimensions).
LOADER_DIMENSIONS: dict[str, tuple[str, ...]] = {
    crema_d.NAME: tuple(crema_d.DIMENSIONS),
    speech_accent_archive.NAME: tuple(speech_accent_archive.DIMENSIONS),
    l2_arctic.NAME: tuple(l2_arctic.DIMENSIONS),
    librispeech.NAME: tuple(librispeech.DIMENSIONS),
    common_voice.NAME: tuple(common_voice.DIMENSIONS),
    vctk.NAME: tuple(vctk.DIMENSIONS),
    fair_speech.NAME: tuple(fair_speech.DIMENSIONS),
    spoken_stereoset.NAME: tuple(spoken_stereoset.DIMENSIONS),
}

# Bump when a loader's output for the same files changes, so cached builds are made again.
CACHE_FORMAT = 1
BUILT_MARKERS = ("corpus.yaml", "suite.yaml")


def build_corpus(name: str, source: str | Path, output: str | Path, **options: Any) -> Path:
    """Run the loader registered as ``name``; returns the folder holding the new corpus.yaml (suite.yaml)."""
    registry = {**LOADERS, **SUITE_LOADERS}
    if name not in registry:
        raise KeyError(f"no loader for corpus {name!r}; loaders: {sorted(registry)}")
    return registry[name](source, output, **options)


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
    name: str, path: str | Path | None, cache_dir: str | Path, registry: Mapping[str, Callable[..., Path]] = LOADERS
) -> str | Path | None:
    """``path`` itself, unless ``name`` is a loader of ``registry`` and ``path`` a folder without a
    ``corpus.yaml``/``suite.yaml``: then the unpacked distribution is built by that loader into
    ``<cache_dir>/loaders/<name>-<key>`` once and that folder is returned. The key hashes the loader name,
    :data:`CACHE_FORMAT` and :func:`source_fingerprint`, so a changed source is built again. The build
    goes to a temporary folder renamed into place, so a killed or concurrent run never leaves half a corpus."""
    if name not in registry or path is None:
        return path
    source = Path(path)
    if not source.is_dir() or any((source / marker).is_file() for marker in BUILT_MARKERS):
        return path
    key = hashlib.sha256(json.dumps([name, CACHE_FORMAT, source_fingerprint(source.resolve())]).encode()).hexdigest()[:16]
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
    if spec is None or not separator or name not in SUITE_LOADERS:
        return spec
    return prepared_source(name, path, cache_dir, SUITE_LOADERS)


__all__ = ["LOADERS", "LOADER_DIMENSIONS", "SUITE_LOADERS", "LoaderError", "build_corpus", "prepared_source", "prepared_suite"]
