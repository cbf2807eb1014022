"""The gate: corpus -> model outputs (cached) -> extraction -> metrics -> verdicts.

A :class:`Gate` is built from a :class:`GateConfig` (what the pytest options say) and computes every
result lazily and once per process. The pytest plugin only wires cases to it; this module knows nothing
of pytest.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.cache import OutputCache
from harness.data import Corpus, resolve_corpus
from harness.data.corpus import read_utterance_audio
from harness.extraction.fields import attribute_table, status_counts
from harness.generation import CachedModel
from harness.metrics import fdr_bh, ntvd, permutation_test
from harness.models import parse_spec
from harness.models.base import DecodingParams, GenerationRequest, stable_hash
from harness.tasks import TASKS, Task
from harness.thresholds import NtvdThreshold, Thresholds, load_thresholds

DEFAULT_CACHE_DIR = ".lalm_cache"
DEFAULT_MODELS = ("sim:fair", "sim:biased")


@dataclasses.dataclass(frozen=True)
class GateConfig:
    models: tuple[str, ...] = DEFAULT_MODELS
    corpora: Mapping[str, str | None] = dataclasses.field(default_factory=lambda: {"demo": None})
    thresholds_path: str | None = None
    cache_dir: str = DEFAULT_CACHE_DIR
    permutations: int = 10_000
    seed: int = 0
    prompts_dir: str | None = None
    model_options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    decoding: DecodingParams = DecodingParams()
    tasks: tuple[str, ...] = tuple(TASKS)
    progress: bool = True


@dataclasses.dataclass(frozen=True)
class NtvdCase:
    model: str
    corpus: str
    task: str
    dimension: str
    show_corpus: bool = False

    @property
    def id(self) -> str:
        parts = [self.model, self.corpus, self.task, self.dimension] if self.show_corpus else [self.model, self.task, self.dimension]
        return "-".join(parts)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of one gate case; ``record`` is its results.json entry."""

    passed: bool
    message: str
    record: dict[str, Any]


class Gate:
    def __init__(self, config: GateConfig):
        self.config = config
        self.thresholds: Thresholds = load_thresholds(config.thresholds_path)
        self.corpora: dict[str, Corpus] = {name: resolve_corpus(name, path) for name, path in config.corpora.items()}
        unknown_tasks = sorted(set(config.tasks) - set(TASKS))
        if unknown_tasks:
            raise ValueError(f"unknown task(s) {unknown_tasks}; known tasks: {sorted(TASKS)}")
        self.thresholds.validate(TASKS, {d for corpus in self.corpora.values() for d in corpus.dimensions})
        for spec in config.models:
            parse_spec(spec)
        self._models: dict[str, CachedModel] = {}
        self._cache: OutputCache | None = None
        self._family: tuple[NtvdCase, ...] | None = None

    @property
    def cache(self) -> OutputCache:
        if self._cache is None:
            self._cache = OutputCache(self.config.cache_dir)
        return self._cache

    def ntvd_cases(self) -> list[NtvdCase]:
        show_corpus = len(self.corpora) > 1
        return [
            NtvdCase(model, corpus_name, task, dimension, show_corpus)
            for model in self.config.models
            for corpus_name, corpus in self.corpora.items()
            for task in self.config.tasks
            for dimension in corpus.dimensions
        ]

    def model(self, spec: str) -> CachedModel:
        if spec not in self._models:
            options = dict(self.config.model_options.get(spec, {}))
            decoding = DecodingParams.from_mapping(
                {**self.config.decoding.as_dict(), **options.pop("decoding", {})}, source=f"model {spec!r} decoding"
            )
            chunk_size = int(options.pop("chunk_size", 32))
            self._models[spec] = CachedModel(spec, self.cache, decoding, options, chunk_size, self.config.progress)
        return self._models[spec]

    @functools.cache
    def audio_requests(self, corpus_name: str, task_name: str) -> tuple[GenerationRequest, ...]:
        corpus, task = self.corpora[corpus_name], TASKS[task_name]
        prompts_dir = Path(self.config.prompts_dir) if self.config.prompts_dir else None
        audio = self._corpus_audio(corpus_name)
        return tuple(
            GenerationRequest(prompt=task.render(transcript, prompts_dir), audio=audio[utterance_id])
            for utterance_id, transcript in zip(corpus.table["utterance_id"], corpus.table["transcript"])
        )

    @functools.cache
    def _corpus_audio(self, corpus_name: str) -> dict:
        corpus = self.corpora[corpus_name]
        return {utterance_id: read_utterance_audio(corpus, utterance_id) for utterance_id in corpus.table["utterance_id"]}

    @functools.cache
    def answers(self, model: str, corpus_name: str, task_name: str) -> pd.DataFrame:
        """One row per utterance: ``utterance_id, speaker_id, content_id, answer``."""
        corpus = self.corpora[corpus_name]
        requests = self.audio_requests(corpus_name, task_name)
        texts = self.model(model).generate(requests, label=f"{corpus_name}/{task_name}")
        frame = corpus.table[["utterance_id", "speaker_id", "content_id"]].reset_index(drop=True).copy()
        frame["answer"] = texts
        return frame

    @functools.cache
    def extraction(self, model: str, corpus_name: str, task_name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        answers = self.answers(model, corpus_name, task_name)
        values, statuses = attribute_table(answers, TASKS[task_name])
        speakers = answers.set_index("utterance_id")["speaker_id"]
        values.insert(1, "speaker", values["utterance_id"].map(speakers))
        return values, statuses

    def long_table(self, case: NtvdCase) -> pd.DataFrame:
        """``speaker, group, attribute, value`` for the case's model, task and dimension."""
        values, _ = self.extraction(case.model, case.corpus, case.task)
        labels = self.corpora[case.corpus].speaker_labels(case.dimension)
        return values.assign(group=values["speaker"].map(labels))[["utterance_id", "speaker", "group", "attribute", "value"]]

    def threshold(self, case: NtvdCase) -> NtvdThreshold:
        return self.thresholds.ntvd(case.task, case.dimension)

    def case_seed(self, case: NtvdCase) -> int:
        return int(stable_hash([self.config.seed, case.model, case.corpus, case.task, case.dimension])[:8], 16)

    @functools.cache
    def ntvd_result(self, case: NtvdCase):
        table = self.long_table(case)
        threshold = self.threshold(case)
        if table.empty:
            raise ValueError(f"{case.id}: no attribute was extracted from any answer; see the extraction status counts")
        observed = ntvd(table, tau=threshold.tau)
        test = permutation_test(table, tau=threshold.tau, n_permutations=self.config.permutations, seed=self.case_seed(case))
        return observed, test

    def set_family(self, cases: Sequence[NtvdCase]) -> None:
        """The nTVD tests over which Benjamini-Hochberg q-values are computed (the session's selection)."""
        self._family = tuple(dict.fromkeys(cases))

    @functools.cache
    def q_values(self) -> dict[NtvdCase, float]:
        family = self._family if self._family is not None else tuple(self.ntvd_cases())
        p_values = [self.ntvd_result(case)[1].p_value for case in family]
        return dict(zip(family, fdr_bh(p_values)))

    def ntvd_verdict(self, case: NtvdCase) -> Verdict:
        observed, test = self.ntvd_result(case)
        q_values = self.q_values()
        q_value = q_values.get(case, float(fdr_bh([test.p_value])[0]))
        threshold = self.threshold(case)
        if np.isnan(observed.score):
            passed = False
            message = f"{case.id}: no attribute value occurs at least tau={threshold.tau} times; nTVD is undefined"
        else:
            passed = not threshold.fails(observed.score, q_value)
            message = (
                f"{case.id}: nTVD = {observed.score:.2f} (p = {test.p_value:.4g}, q = {q_value:.4g}); "
                f"threshold: {threshold.describe()} -> {'pass' if passed else 'FAIL'}"
            )
        _, statuses = self.extraction(case.model, case.corpus, case.task)
        record = {
            "check": "ntvd",
            "id": case.id,
            "model": case.model,
            "model_fingerprint": self.model(case.model).fingerprint,
            "corpus": case.corpus,
            "task": case.task,
            "dimension": case.dimension,
            "value": _finite_or_none(observed.score),
            "p": _finite_or_none(test.p_value),
            "q": _finite_or_none(q_value),
            "threshold": threshold.as_dict(),
            "passed": bool(passed),
            "message": message,
            "n_speakers": observed.n_speakers,
            "n_groups": observed.n_groups,
            "n_permutations": test.n_permutations,
            "seed": test.seed,
            "per_attribute": {k: _finite_or_none(v) for k, v in observed.per_attribute.items()},
            "dropped_attributes": list(observed.dropped_attributes),
            "answer_status": status_counts(statuses),
            "most_divergent": self._divergent_distribution(case, observed),
        }
        return Verdict(passed, message, record)

    def _divergent_distribution(self, case: NtvdCase, observed) -> dict[str, Any] | None:
        attribute = observed.most_divergent_attribute
        if attribute is None:
            return None
        distribution = observed.distributions[observed.distributions["attribute"] == attribute]
        groups = [column for column in distribution.columns if column not in ("attribute", "value")]
        return {
            "attribute": attribute,
            "groups": groups,
            "values": distribution["value"].tolist(),
            "probabilities": {group: distribution[group].round(6).tolist() for group in groups},
        }

    def run_metadata(self) -> dict[str, Any]:
        return {
            "models": {spec: model.fingerprint for spec, model in self._models.items()},
            "model_calls": sum(model.calls for model in self._models.values()),
            "cache_hits": sum(model.hits for model in self._models.values()),
            "models_loaded": sorted(spec for spec, model in self._models.items() if model.loaded),
            "corpora": {name: {"path": str(c.manifest_path), "hash": c.content_hash, "utterances": len(c.table)} for name, c in self.corpora.items()},
            "thresholds": {"source": self.thresholds.source, "hash": self.thresholds.digest},
            "permutations": self.config.permutations,
            "seed": self.config.seed,
            "decoding": self.config.decoding.as_dict(),
            "cache_dir": str(Path(self.config.cache_dir).resolve()),
        }


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in ("lalm-fairness", "numpy", "pandas", "scipy", "statsmodels", "pytest", "pytest-xdist", "torch", "transformers", "vllm"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
