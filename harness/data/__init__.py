"""Corpora: registry of named corpora and the manifest loader.

A new corpus is a folder with ``corpus.yaml`` + manifest, passed as ``--corpus NAME=PATH``, or one entry
in :data:`CORPORA` for a corpus shipped with the harness.
"""

from __future__ import annotations

from pathlib import Path

from harness.data.audio import AudioChecks
from harness.data.corpus import Corpus, CorpusError, load_corpus

DEMO_CORPUS_PATH = Path(__file__).parent / "demo"

CORPORA: dict[str, Path] = {"demo": DEMO_CORPUS_PATH}


def resolve_corpus(name: str, path: str | Path | None = None, audio_checks: AudioChecks | None = None) -> Corpus:
    """Load corpus ``name`` from ``path``, or from the registry when no path is given (``audio_checks``:
    the memo of the audio decode, see :func:`load_corpus`)."""
    if path is None:
        if name not in CORPORA:
            raise CorpusError(f"unknown corpus {name!r}; registered: {sorted(CORPORA)} (or pass NAME=PATH)")
        path = CORPORA[name]
    return load_corpus(path, name=name, audio_checks=audio_checks)


__all__ = ["CORPORA", "Corpus", "CorpusError", "DEMO_CORPUS_PATH", "load_corpus", "resolve_corpus"]
