"""The run's models: each backend built once per spec, each cached model made once, all behind one output cache.

A :class:`ModelPool` is what a gate run knows of models. :meth:`~ModelPool.backend` builds a spec's backend (cheap,
no weights) with its ``--model-config`` block the first time any part of the run asks, be it the check of every
named model before the first case (:func:`harness.gate.validate_models`), the VIBE protocol that reads what the
models declare, or the cached model that answers the cases; :meth:`~ModelPool.model` puts that backend behind the
output cache (:class:`~harness.generation.cached_model.CachedModel`), and :meth:`~ModelPool.transcriber` the stage
that transcribes for a composite model's WER checks. The cache is opened on first use, which imports the shipped
exports of the configured models (:func:`import_bundled_exports`). Under ``--plan`` the plugin hands the pool a
:attr:`~ModelPool.planner`, which every cached model, made before or after, plans with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.cache import OutputCache
from harness.core.files import portable_path
from harness.core.values import Memo
from harness.data import Corpus
from harness.gate.config import GateConfig, model_settings
from harness.generation.cached_model import CachedModel
from harness.generation.request_plan import Planner
from harness.models import build_backend
from harness.models.base import Backend, HearsCorpora, TranscribedByStage
from harness.models.residency import Residency
from harness.tasks.asr import TRANSCRIPTION_PROMPT

MODEL = "model"
STAGE = "stage"
CACHE = ("cache",)


class ModelPool:
    """One gate run's backends and cached models (module docstring); ``corpora`` are told to a backend that hears
    them (:class:`~harness.models.base.HearsCorpora`) when its cached model is made."""

    def __init__(self, config: GateConfig, corpora: dict[str, Corpus]):
        self.config = config
        self.corpora = corpora
        self.residency = Residency()
        self._planner: Planner | None = None
        self._memo = Memo()

    @property
    def planner(self) -> Planner | None:
        """The ``--plan`` planner the cached models plan with, or None (they generate)."""
        return self._planner

    @planner.setter
    def planner(self, planner: Planner | None) -> None:
        self._planner = planner
        for model in self.all_models():  # made while the cases were collected
            model.planner = planner

    @property
    def cache(self) -> OutputCache:
        """The run's output cache, opened on first use (which imports the shipped exports)."""
        return self._memo(CACHE, self._open_cache)[0]

    def _open_cache(self) -> tuple[OutputCache, list[dict[str, Any]]]:
        cache = OutputCache(self.config.cache_dir)
        return cache, import_bundled_exports(cache, self.config)

    @property
    def bundled_outputs(self) -> list[dict[str, Any]]:
        """The shipped exports the opened cache imported (:func:`import_bundled_exports`); none before it is opened."""
        opened = self._memo.peek(CACHE)
        return [] if opened is None else opened[1]

    @property
    def cache_set_aside(self) -> str | None:
        """Where the cache set its damaged database aside when it was opened (None: not opened, or sound)."""
        opened = self._memo.peek(CACHE)
        return None if opened is None or opened[0].set_aside is None else str(opened[0].set_aside)

    def backend(self, spec: str) -> Backend:
        """The backend of ``spec`` with its option block, built once for the run."""
        return self._memo(("backend", spec), lambda: build_backend(spec, model_settings(self.config, spec)[0]))

    def model(self, spec: str) -> CachedModel:
        """The cached model of ``spec``, made once for the run."""
        return self._memo((MODEL, spec), lambda: self._cached_model(spec))

    def _cached_model(self, spec: str) -> CachedModel:
        options, decoding, chunk_size = model_settings(self.config, spec)
        cache = self.cache
        backend = self.backend(spec)
        model = CachedModel(
            spec,
            cache,
            decoding,
            options,
            chunk_size,
            self.config.progress,
            offline=self.config.offline,
            residency=self.residency,
            planner=self.planner,
            backend=backend,
        )
        if isinstance(backend, HearsCorpora):
            for corpus in self.corpora.values():
                backend.hear_corpus(corpus)
        return model

    def transcriber(self, spec: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``spec``'s WER checks, and with what prompt.

        A model whose backend is transcribed by a stage (:class:`~harness.models.base.TranscribedByStage`, the
        cascade's ASR stage) is transcribed by that stage, asked with an empty prompt, so the WER checks read what the
        system itself heard and share the stage's cache entries; any other model is asked
        :data:`TRANSCRIPTION_PROMPT`."""
        model = self.model(spec)
        if not isinstance(model.backend, TranscribedByStage):
            return model, TRANSCRIPTION_PROMPT
        source = model.backend.transcription_source()
        stage = self._memo(
            (STAGE, source.spec),
            lambda: CachedModel(
                source.spec,
                self.cache,
                source.decoding,
                source.options,
                progress=self.config.progress,
                offline=self.config.offline,
                residency=self.residency,
                planner=self.planner,
            ),
        )
        return stage, ""

    def all_models(self) -> list[CachedModel]:
        """Every cached model this run made: the models under test, the judge, extractor and stages."""
        return [*self._memo.kept(MODEL).values(), *self._memo.kept(STAGE).values()]

    def fingerprints(self, *, stages: bool = False) -> dict[str, str]:
        """Spec -> fingerprint of the models made so far (``stages``: of the transcription stages instead)."""
        return {spec: model.fingerprint for spec, model in self._memo.kept(STAGE if stages else MODEL).items()}


def import_bundled_exports(cache: OutputCache, config: GateConfig) -> list[dict[str, Any]]:
    """Import the shipped exports of the configured models; returns each file, its entry count (in all and per
    model) and provenance.

    A missing export is skipped (its model then generates); importing is idempotent (existing keys are kept).
    """
    imported = []
    for spec in config.models:
        for path in config.bundled_exports.get(spec, ()):
            path = Path(path)
            if not path.is_file():
                continue
            provenance_path = path.parent / "provenance.json"
            provenance = json.loads(provenance_path.read_text()) if provenance_path.is_file() else None
            per_model = cache.import_counts(path)
            imported.append(
                {
                    "model": spec,
                    "file": portable_path(path),
                    "entries": sum(per_model.values()),
                    "per_model": per_model,
                    "provenance": provenance,
                }
            )
    return imported
