"""The run context: what every check shares in one gate run, and nothing any one check owns.

A :class:`RunContext` holds the settings, the thresholds, the corpora and the BASIS suite; the run's models, in its
:class:`~harness.gate.model_pool.ModelPool` (:meth:`outputs` asks a model, through the output cache, for a list of
requests); the transcriber, the semantic embedder and the attribute extractor; the run's one memo (:attr:`memo`), in
which the checks keep their tables and the context what it computes once; and the gate's decision rule. It implements
:class:`harness.checks.context.CheckContext` whole. Each check builds its own requests and tables from it in its
folder (``harness/checks/<name>/tables.py``).

A cascade's output holds what its ASR stage heard before its answer; the cascade splits its own output
(:class:`~harness.models.base.SplitsOutput`) where :meth:`outputs` asks it, so that every table carries ``heard``
and ``answer`` and nothing downstream parses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from harness.cache import OutputCache
from harness.core.errors import ModelError
from harness.core.requests import Audio, GenerationRequest
from harness.core.values import Memo
from harness.data import Corpus, resolve_corpus
from harness.data.audio import AUDIO_CHECKS_FILE, AudioChecks
from harness.data.basis_suite import BasisSuite, resolve_suite
from harness.data.corpus import read_utterance_audio
from harness.data.loaders import prepared_source, prepared_suite
from harness.extraction.vibe_protocol import VIBE_SECTION, VibeProtocol, resolve_vibe_protocol
from harness.gate.config import GateConfig
from harness.gate.model_pool import ModelPool
from harness.generation.cached_model import CachedModel
from harness.metrics.multitest import DecisionRule
from harness.models.base import answer_parts
from harness.semantic import (
    MINILM,
    Embedder,
    SemanticSetup,
    build_embedder,
    minilm_embedder,
    minilm_installed,
    own_embedders,
)
from harness.thresholds import Thresholds

if TYPE_CHECKING:
    from harness.extraction.llm import LLMExtractor


class RunContext:
    """One gate run's shared settings, data, models and memo. ``family_sizes`` maps each model to the number of
    its bias cases in the session (the gate's families, read when a decision is made). Its models are its
    :attr:`pool`'s (:class:`~harness.gate.model_pool.ModelPool`); everything it computes once is kept in
    :attr:`memo`, the one memo of the run, which the checks share."""

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
        self.progress: bool = config.progress
        self.pool = ModelPool(config, self.corpora)
        self.memo = Memo()
        """``memo(key, compute)``: ``compute()`` once per ``key`` for this run (the checks' tables and intermediate
        results, and the context's own: keys of two parts whose first is :data:`OWN`)."""

    def decision_rule(self, model: str) -> DecisionRule:
        """The whole gate's decision rule for ``model``'s cases (thresholds.yaml ``gate``; m = its cases)."""
        settings = self.thresholds.gate()
        return DecisionRule(
            alpha=settings.alpha,
            family_size=max(1, self.family_sizes.get(model, 1)),
            correction=settings.correction,
            tests_per_case=getattr(self.family_sizes, "tests_per_case", 1),
        )

    @property
    def cache(self) -> OutputCache:
        """The run's output cache (its pool's)."""
        return self.pool.cache

    def model(self, spec: str) -> CachedModel:
        """The cached model of ``spec`` (its pool's)."""
        return self.pool.model(spec)

    def fingerprint(self, spec: str) -> str:
        return self.model(spec).fingerprint

    def transcriber(self, model: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``model``'s WER checks, and with what prompt (:meth:`ModelPool.transcriber`)."""
        return self.pool.transcriber(model)

    def outputs(
        self,
        model: str | CachedModel,
        requests: Sequence[GenerationRequest],
        label: str,
        max_new_tokens: int | None = None,
    ) -> pd.DataFrame:
        """One row per request: ``heard`` (what a cascade's ASR stage heard, else None), ``voice`` (what its voice
        stage said of the speaker's voice, else None) and ``answer``, as the model's backend splits its output
        (:func:`~harness.models.base.answer_parts`). ``max_new_tokens`` raises the model's token budget to it for
        these requests (a task's own budget)."""
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

    def corpus_audio(self, corpus_name: str) -> dict[str, Audio]:
        """Utterance id -> its audio, for every utterance of the corpus."""
        corpus = self.corpora[corpus_name]
        return self.memo(
            (OWN, f"audio of {corpus_name}"),
            lambda: {
                utterance_id: read_utterance_audio(corpus, utterance_id)
                for utterance_id in corpus.table["utterance_id"]
            },
        )

    @property
    def embedder(self) -> Embedder | None:
        """Semantic embedder (``--embedder``); ``auto`` is MiniLM when its extra is installed, else none."""
        return self.memo((OWN, "embedder"), lambda: build_embedder(chosen_embedder(self.config.embedder)))

    @property
    def embedder_name(self) -> str:
        return "none" if self.embedder is None else self.embedder.fingerprint

    def semantics(self, model: str) -> SemanticSetup:
        """The semantic covariates of ``model`` (:mod:`harness.semantic`): under ``--embedder auto`` its own
        Embed-AGG and Embed-EOWL where its weights are here, else MiniLM (when installed) or none, as a deviation;
        any other ``--embedder`` for every model. The setups asked so far are :func:`semantic_setups`."""
        return self.memo((SEMANTICS, model), lambda: semantic_setup(self.config.embedder, model, self.model(model)))

    @property
    def basis_judge_name(self) -> str:
        """``rules`` (the offline rule judges) or the fingerprint of the BASIS LLM judge (``--basis-judge``)."""
        return "rules" if self.basis_judge is None else f"{self.basis_judge} ({self.fingerprint(self.basis_judge)})"

    @property
    def vibe(self) -> VibeProtocol:
        """The run's VIBE protocol and extractor (:mod:`harness.extraction.vibe_protocol`): ``--extractor``, the
        thresholds file's ``vibe.defaults``, what the models declare, or the paper's."""
        return self.memo(
            (OWN, "vibe"),
            lambda: resolve_vibe_protocol(
                cli_extractor=self.config.extractor,
                explicit=self.thresholds.explicit(VIBE_SECTION),
                explicit_source=self.thresholds.source,
                declared={spec: declared_vibe(self.pool, spec) for spec in self.config.models},
            ),
        )

    @property
    def extractor(self) -> LLMExtractor | None:
        """The field reader (None) under the self-report form's ``rules``, else the LLM extractor of the run's VIBE
        setting (:attr:`vibe`), through the cache."""
        if self.vibe.uses_rules:
            return None
        from harness.extraction.llm import LLMExtractor  # loaded only for a run that extracts with an LLM

        return self.memo((OWN, "extractor"), lambda: LLMExtractor(self.model(self.vibe.extractor)))

    @property
    def extractor_name(self) -> str:
        return "rules" if self.extractor is None else self.extractor.fingerprint


OWN = "run context"
"""The first part of the keys under which the context keeps its own values in its memo (the checks use others)."""
SEMANTICS = "semantic setup"
"""The first part of the keys of the models' semantic setups in the run's memo (:func:`semantic_setups`)."""


def declared_vibe(pool: ModelPool, spec: str) -> dict[str, str] | None:
    """The VIBE variant the backend of ``spec`` declares; None for a model that cannot be built (the run stops on it
    before any case, naming why)."""
    try:
        return pool.backend(spec).vibe_variant()
    except (ModelError, ValueError):
        return None


def semantic_setups(context: RunContext) -> dict[str, SemanticSetup]:
    """The semantic setups of the models the run has asked for so far (:meth:`RunContext.semantics`)."""
    return dict(context.memo.kept(SEMANTICS))


def chosen_embedder(spec: str) -> str:
    """The embedder ``--embedder`` names for every model: ``auto`` and ``model`` mean MiniLM when its extra is
    installed, else none (a model's own embeddings are :func:`semantic_setup`'s)."""
    if spec in ("auto", "model"):
        return "minilm" if minilm_installed() else "none"
    return spec


def semantic_setup(spec: str, model: str, cached: CachedModel) -> SemanticSetup:
    """The semantic covariates of ``model`` (its cached model ``cached``) under ``--embedder spec``: any embedder it
    names for every model; under ``auto`` or ``model`` the model's own Embed-AGG and Embed-EOWL where its weights are
    here; else (``auto``) MiniLM when installed, or none, as a deviation."""
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
