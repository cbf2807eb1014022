"""Corpus loaders: each turns a distribution's own layout into ``manifest.csv`` + ``corpus.yaml``.

A loader is ``build(source, output, **options) -> output``: it reads the corpus where it was unpacked,
writes the manifest (audio referenced where it lies, relative to ``output`` by default, never copied)
and checks the result with :func:`harness.data.corpus.load_corpus`. Errors are
:class:`~harness.data.loaders._common.LoaderError` naming the offending file (and line). A new corpus is
one module and one entry in :data:`LOADERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.data.loaders import crema_d, l2_arctic, librispeech, speech_accent_archive
from harness.data.loaders._common import LoaderError

LOADERS: dict[str, Callable[..., Path]] = {
    crema_d.NAME: crema_d.build,
    speech_accent_archive.NAME: speech_accent_archive.build,
    l2_arctic.NAME: l2_arctic.build,
    librispeech.NAME: librispeech.build,
}

# The dimensions each loader can write (CREMA-D: a choice of them): with the shipped demo corpus and BASIS suite,
# the dimensions a thresholds file may name whatever the session's corpora (harness.thresholds.known_dimensions).
LOADER_DIMENSIONS: dict[str, tuple[str, ...]] = {
    crema_d.NAME: tuple(crema_d.DIMENSIONS),
    speech_accent_archive.NAME: tuple(speech_accent_archive.DIMENSIONS),
    l2_arctic.NAME: tuple(l2_arctic.DIMENSIONS),
    librispeech.NAME: tuple(librispeech.DIMENSIONS),
}


def build_corpus(name: str, source: str | Path, output: str | Path, **options: Any) -> Path:
    """Run the loader registered as ``name``; returns the folder holding the new corpus.yaml."""
    if name not in LOADERS:
        raise KeyError(f"no loader for corpus {name!r}; loaders: {sorted(LOADERS)}")
    return LOADERS[name](source, output, **options)


__all__ = ["LOADERS", "LOADER_DIMENSIONS", "LoaderError", "build_corpus"]
