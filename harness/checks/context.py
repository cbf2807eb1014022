"""What a check reads of a run (:class:`CheckContext`) and of a recorded one (:class:`CompareContext`), and the
memos that keep a check's tables for one run (:func:`per_run_table`).

A run (:class:`harness.gate.context.RunContext`) implements both protocols; a recorded series
(:class:`harness.gate.series.RecordContext`) implements :class:`CompareContext`. Check instances are shared by
every run of a process, so whatever they compute lives in the run's memo.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pandas as pd

from harness.data import Corpus
from harness.data.basis_suite import BasisSuite
from harness.metrics.multitest import DecisionRule
from harness.thresholds import Thresholds

if TYPE_CHECKING:
    from harness.cache import OutputCache
    from harness.core.requests import GenerationRequest
    from harness.extraction.llm import LLMExtractor
    from harness.extraction.vibe_protocol import VibeProtocol
    from harness.generation.cached_model import CachedModel
    from harness.semantic import SemanticSetup

T = TypeVar("T")


class Embedding(Protocol):
    fingerprint: str

    def embed(self, texts: Sequence[str]) -> Any: ...


class CompareContext(Protocol):
    """What a baseline comparison reads (:meth:`Check.compare`): thresholds, seeds and the gate's decision rule.
    A run (:class:`harness.gate.context.RunContext`) and a recorded series (:class:`harness.gate.series.RecordContext`)
    implement it."""

    seed: int
    permutations: int
    thresholds: Thresholds

    def decision_rule(self, model: str) -> DecisionRule:
        """The whole gate's decision rule for one model's cases (its alpha, correction and m)."""
        ...


class CheckContext(CompareContext, Protocol):
    """What a check reads of a run, all of it shared by every check (:class:`harness.gate.context.RunContext`):
    settings, corpora, the BASIS suite, cached model outputs, the transcriber, embedder and extractor, a memo,
    fingerprints and the decision rule. A check's own requests and tables live in its folder."""

    models: tuple[str, ...]
    tasks: tuple[str, ...]
    judge: str | None
    basis_judge: str | None
    """The BASIS LLM judge's spec (``--basis-judge``), or None for the offline rule judges."""
    basis_judge_name: str
    progress: bool
    """Whether long steps show progress bars (``--progress``)."""
    perceiver: str
    """Who labels a counterfactual clip's perceived group (``--perceiver``): ``voice:praat`` or a model spec."""
    prompts_dir: Path | None
    corpora: Mapping[str, Corpus]
    basis: BasisSuite
    cache: OutputCache
    embedder: Embedding | None
    embedder_name: str
    extractor: LLMExtractor | None
    """The LLM attribute extractor of the run's VIBE setting, or None for the self-report form's field reader."""
    extractor_name: str
    vibe: VibeProtocol
    """The run's VIBE protocol and extractor."""

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this run (check instances are shared, so they keep nothing)."""
        ...

    def model(self, spec: str) -> CachedModel:
        """The cached model of ``spec``."""
        ...

    def fingerprint(self, spec: str) -> str: ...

    def outputs(
        self,
        model: str | CachedModel,
        requests: Sequence[GenerationRequest],
        label: str,
        max_new_tokens: int | None = None,
    ) -> pd.DataFrame:
        """One row per request: ``heard`` (what a cascade's ASR stage heard, else None) and ``answer``;
        ``max_new_tokens`` raises the model's token budget for these requests."""
        ...

    def corpus_audio(self, corpus_name: str) -> dict: ...

    def transcriber(self, model: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``model`` (its cascade's ASR stage, or the model itself) and with what prompt."""
        ...

    def semantics(self, model: str) -> SemanticSetup:
        """The semantic covariates' embedders of ``model``."""
        ...


def per_run_table(function: Callable[..., T]) -> Callable[..., T]:
    """Memoize a table function ``(context, *args)`` in the run's context: computed once per run and argument
    tuple, freed with the run."""

    @functools.wraps(function)
    def wrapper(context: CheckContext, *args: Hashable) -> T:
        return context.memo((function.__module__, function.__qualname__, *args), lambda: function(context, *args))

    return wrapper
