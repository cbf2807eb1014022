"""The run context: what every check shares in one gate run, and nothing any one check owns.

A :class:`RunContext` holds the settings, the thresholds, the corpora and the BASIS suite; the output cache
and the cached models (:meth:`outputs` asks a model, through the cache, for a list of requests); the
transcriber, the semantic embedder and the attribute extractor; a per-run memo (:meth:`memo`) in which the
checks keep their tables; the models' fingerprints; and the gate's decision rule. It implements
:class:`harness.checks.base.CheckContext` whole. Each check builds its own requests and tables from it in its
folder (``harness/checks/<name>/tables.py``).

A cascade's output holds what its ASR stage heard before its answer; the cascade splits its own output
(:class:`~harness.models.base.SplitsOutput`) where :meth:`outputs` asks it, so that every table carries ``heard``
and ``answer`` and nothing downstream parses it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from harness.cache import OutputCache
from harness.core.errors import ModelError
from harness.core.files import portable_path
from harness.core.requests import GenerationRequest
from harness.core.values import memoized
from harness.data import Corpus, resolve_corpus
from harness.data.audio import AUDIO_CHECKS_FILE, AudioChecks
from harness.data.basis_suite import BasisSuite, resolve_suite
from harness.data.corpus import read_utterance_audio
from harness.data.loaders import prepared_source, prepared_suite
from harness.gate.config import GateConfig, model_settings
from harness.gate.vibe_protocol import VIBE_SECTION, VibeProtocol, resolve_vibe_protocol
from harness.generation.cached_model import CachedModel
from harness.generation.request_plan import Planner
from harness.metrics.multitest import DecisionRule
from harness.models import build_backend
from harness.models.base import HearsCorpora, TranscribedByStage, answer_parts
from harness.models.residency import Residency
from harness.semantic import (
    MINILM,
    Embedder,
    SemanticSetup,
    build_embedder,
    minilm_embedder,
    minilm_installed,
    own_embedders,
)
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, Thresholds

T = TypeVar("T")


class RunContext:
    """One gate run's shared settings, data, models and memo. ``family_sizes`` maps each model to the number of
    its bias cases in the session (the gate's families, read when a decision is made)."""

    def __init__(self, config: GateConfig, thresholds: Thresholds, family_sizes: Mapping[str, int]):
        self.config = config
        self.thresholds = thresholds
        self.family_sizes = family_sizes
        audio_checks = AudioChecks(Path(config.cache_dir) / AUDIO_CHECKS_FILE)
        self.corpora: dict[str, Corpus] = {
            name: resolve_corpus(name, prepared_source(name, path, config.cache_dir), audio_checks)
            for name, path in config.corpora.items()
        }
        self.basis: BasisSuite = resolve_suite(prepared_suite(config.basis_suite, config.cache_dir), audio_checks)
        self.models: tuple[str, ...] = config.models
        self.tasks: tuple[str, ...] = config.tasks
        self.seed: int = config.seed
        self.permutations: int = config.permutations
        self.judge: str | None = config.judge
        self.basis_judge: str | None = None if config.basis_judge == "rules" else config.basis_judge
        self.perceiver: str = config.perceiver
        self.prompts_dir: Path | None = Path(config.prompts_dir) if config.prompts_dir else None
        self.bundled_outputs: list[dict[str, Any]] = []
        self._models: dict[str, CachedModel] = {}
        self._stages: dict[str, CachedModel] = {}
        self.residency = Residency()
        self.planner: Planner | None = None
        self._cache: OutputCache | None = None
        self._results: dict[Hashable, Any] = {}

    def decision_rule(self, model: str) -> DecisionRule:
        """The whole gate's decision rule for ``model``'s cases (thresholds.yaml ``gate``; m = its cases)."""
        settings = self.thresholds.values(GATE_SECTION, GATE_SCHEMA, None, "")
        return DecisionRule(
            alpha=float(settings["alpha"]),
            family_size=max(1, self.family_sizes.get(model, 1)),
            correction=settings["correction"],
        )

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this run (the checks' tables and intermediate results)."""
        if key not in self._results:
            self._results[key] = compute()
        return self._results[key]

    @property
    def progress(self) -> bool:
        return self.config.progress

    @property
    def cache(self) -> OutputCache:
        if self._cache is None:
            self._cache = OutputCache(self.config.cache_dir)
            self.bundled_outputs = import_bundled_exports(self._cache, self.config)
        return self._cache

    @property
    def cache_set_aside(self) -> str | None:
        """Where the cache set its damaged database aside when it was opened (None: not opened, or sound)."""
        return None if self._cache is None or self._cache.set_aside is None else str(self._cache.set_aside)

    def model(self, spec: str) -> CachedModel:
        if spec not in self._models:
            options, decoding, chunk_size = model_settings(self.config, spec)
            self._models[spec] = CachedModel(
                spec,
                self.cache,
                decoding,
                options,
                chunk_size,
                self.config.progress,
                offline=self.config.offline,
                residency=self.residency,
                planner=self.planner,
            )
            backend = self._models[spec].backend
            if isinstance(backend, HearsCorpora):
                for corpus in self.corpora.values():
                    backend.hear_corpus(corpus)
        return self._models[spec]

    def fingerprint(self, spec: str) -> str:
        return self.model(spec).fingerprint

    def all_models(self) -> list[CachedModel]:
        """Every cached model this run built: the models under test, the judge, extractor and stages."""
        return [*self._models.values(), *self._stages.values()]

    def fingerprints(self, *, stages: bool = False) -> dict[str, str]:
        """Spec -> fingerprint of the models built so far (``stages``: of the transcription stages instead)."""
        return {spec: model.fingerprint for spec, model in (self._stages if stages else self._models).items()}

    def outputs(
        self,
        model: str | CachedModel,
        requests: Sequence[GenerationRequest],
        label: str,
        max_new_tokens: int | None = None,
    ) -> pd.DataFrame:
        """One row per request: ``heard`` (what a cascade's ASR stage heard, else None), ``voice`` (what its voice
        stage said of the speaker's voice, else None) and ``answer``.
        ``max_new_tokens`` raises the model's token budget to it for these requests (a task's own budget)."""
        cached = self.model(model) if isinstance(model, str) else model
        decoding = None
        if max_new_tokens is not None and max_new_tokens > cached.decoding.max_new_tokens:
            decoding = dataclasses.replace(cached.decoding, max_new_tokens=max_new_tokens)
        parts = answer_parts(cached.backend, cached.generate(list(requests), label=label, decoding=decoding))
        return pd.DataFrame(
            {
                "heard": [part.heard for part in parts],
                "voice": [part.voice for part in parts],
                "answer": [part.answer for part in parts],
            }
        )

    @memoized
    def corpus_audio(self, corpus_name: str) -> dict:
        """Utterance id -> its audio, for every utterance of the corpus."""
        corpus = self.corpora[corpus_name]
        return {
            utterance_id: read_utterance_audio(corpus, utterance_id) for utterance_id in corpus.table["utterance_id"]
        }

    def transcriber(self, model: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``model``'s WER checks, and with what prompt.

        A model whose backend names a transcription source (the cascade: its ASR stage) is transcribed by
        that source, asked with an empty prompt, so the WER checks read what the system itself heard and share
        the stage's cache entries; any other model is asked :data:`TRANSCRIPTION_PROMPT`.
        """
        backend = self.model(model).backend
        if not isinstance(backend, TranscribedByStage):
            return self.model(model), TRANSCRIPTION_PROMPT
        source = backend.transcription_source()
        if source.spec not in self._stages:
            self._stages[source.spec] = CachedModel(
                source.spec,
                self.cache,
                source.decoding,
                source.options,
                progress=self.config.progress,
                offline=self.config.offline,
                residency=self.residency,
                planner=self.planner,
            )
        return self._stages[source.spec], ""

    @property
    def embedder(self) -> Embedder | None:
        """Semantic embedder (``--embedder``); ``auto`` is MiniLM when its extra is installed, else none."""
        if "_embedder" not in self.__dict__:
            spec = self.config.embedder
            if spec in ("auto", "model"):
                spec = "minilm" if minilm_installed() else "none"
            self.__dict__["_embedder"] = build_embedder(spec)
        return self.__dict__["_embedder"]

    def semantics(self, model: str) -> SemanticSetup:
        """The semantic covariates of ``model`` (:mod:`harness.semantic`): under ``--embedder auto`` its own
        Embed-AGG and Embed-EOWL where its weights are here, else MiniLM (when installed) or none, as a deviation;
        any other ``--embedder`` for every model."""
        memo = self.__dict__.setdefault("_semantics", {})
        if model not in memo:
            memo[model] = self._semantic_setup(model)
        return memo[model]

    def semantic_setups(self) -> dict[str, SemanticSetup]:
        """The semantic setups of the models the run has asked for so far."""
        return dict(self.__dict__.get("_semantics", {}))

    def _semantic_setup(self, model: str) -> SemanticSetup:
        spec = self.config.embedder
        cached = self.model(model)
        if spec not in ("auto", "model"):
            embedder = build_embedder(spec)
            embedders = () if embedder is None else (embedder,)
            described = "none" if embedder is None else f"{embedder.name} ({embedder.spec})"
            return SemanticSetup(
                embedders,
                "override",
                described,
                f"semantic covariates chosen by --embedder {spec} ({described}), not the model under test's own "
                "Embed-AGG and Embed-EOWL (semantic-aware paper §III-B)",
            )
        embedders = own_embedders(cached)
        if embedders:
            return SemanticSetup(
                embedders,
                "model",
                f"the model under test's own Embed-AGG and Embed-EOWL ({cached.backend.semantic_source().spec})",
            )
        if spec == "model":
            raise ModelError(f"--embedder model: {model} has no weights on this machine to take embeddings from")
        fallback = minilm_embedder() if minilm_installed() else None
        described = f"{MINILM} (all-MiniLM-L6-v2)" if fallback else "none"
        return SemanticSetup(
            () if fallback is None else (fallback,),
            "fallback",
            described,
            f"semantic covariates of {model}: {described}, not the model's own Embed-AGG and Embed-EOWL (semantic-aware "
            "paper §III-B): its weights are not on this machine",
        )

    @property
    def basis_judge_name(self) -> str:
        """``rules`` (the offline rule judges) or the fingerprint of the BASIS LLM judge (``--basis-judge``)."""
        return "rules" if self.basis_judge is None else f"{self.basis_judge} ({self.fingerprint(self.basis_judge)})"

    @property
    def embedder_name(self) -> str:
        return "none" if self.embedder is None else self.embedder.fingerprint

    @property
    def vibe(self) -> VibeProtocol:
        """The run's VIBE protocol and extractor (:mod:`harness.gate.vibe_protocol`): ``--extractor``, the thresholds
        file's ``vibe.defaults``, what the models declare, or the paper's."""
        if "_vibe" not in self.__dict__:
            declared = {}
            for spec in self.config.models:
                try:
                    declared[spec] = build_backend(spec, model_settings(self.config, spec)[0]).vibe_variant()
                except (ModelError, ValueError):
                    declared[spec] = None
            self.__dict__["_vibe"] = resolve_vibe_protocol(
                cli_extractor=self.config.extractor,
                explicit=self.thresholds.explicit(VIBE_SECTION),
                explicit_source=self.thresholds.source,
                declared=declared,
            )
        return self.__dict__["_vibe"]

    @property
    def extractor(self):
        """The field reader (None) under the self-report form's ``rules``, else the LLM extractor of the run's VIBE
        setting (:attr:`vibe`), through the cache."""
        if self.vibe.uses_rules:
            return None
        if "_extractor" not in self.__dict__:
            from harness.extraction.llm import LLMExtractor

            self.__dict__["_extractor"] = LLMExtractor(self.model(self.vibe.extractor))
        return self.__dict__["_extractor"]

    @property
    def extractor_name(self) -> str:
        return "rules" if self.extractor is None else self.extractor.fingerprint


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
