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

import pandas as pd

from harness.cache import OutputCache
from harness.data import Corpus, resolve_corpus
from harness.data.corpus import read_utterance_audio
from harness.checks import Case, Verdict, all_checks, get_check
from harness.extraction.fields import attribute_table
from harness.generation import CachedModel
from harness.models import parse_spec
from harness.models.base import DecodingParams, GenerationRequest
from harness.tasks import TASKS
from harness.thresholds import Thresholds, load_thresholds

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
    offline: bool = False


class Gate:
    def __init__(self, config: GateConfig):
        self.config = config
        self.thresholds: Thresholds = load_thresholds(config.thresholds_path)
        self.corpora: dict[str, Corpus] = {name: resolve_corpus(name, path) for name, path in config.corpora.items()}
        unknown_tasks = sorted(set(config.tasks) - set(TASKS))
        if unknown_tasks:
            raise ValueError(f"unknown task(s) {unknown_tasks}; known tasks: {sorted(TASKS)}")
        checks = all_checks()
        self.thresholds.validate(
            {check.name: check.schema for check in checks},
            {check.name: check.variants(self) for check in checks},
            {dimension for corpus in self.corpora.values() for dimension in corpus.dimensions},
        )
        for spec in config.models:
            parse_spec(spec)
        self._models: dict[str, CachedModel] = {}
        self._cache: OutputCache | None = None
        self._families: dict[str, tuple[Case, ...]] = {}

    @property
    def cache(self) -> OutputCache:
        if self._cache is None:
            self._cache = OutputCache(self.config.cache_dir)
        return self._cache

    def cases(self, check: str) -> list[Case]:
        return get_check(check).cases(self)

    def model(self, spec: str) -> CachedModel:
        if spec not in self._models:
            options = dict(self.config.model_options.get(spec, {}))
            decoding = DecodingParams.from_mapping(
                {**self.config.decoding.as_dict(), **options.pop("decoding", {})}, source=f"model {spec!r} decoding"
            )
            chunk_size = int(options.pop("chunk_size", 32))
            self._models[spec] = CachedModel(
                spec, self.cache, decoding, options, chunk_size, self.config.progress, offline=self.config.offline
            )
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

    def group_table(self, model: str, corpus_name: str, task_name: str, dimension: str) -> pd.DataFrame:
        """``utterance_id, speaker, group, attribute, value``: the extracted values with each speaker's group."""
        values, _ = self.extraction(model, corpus_name, task_name)
        labels = self.corpora[corpus_name].speaker_labels(dimension)
        return values.assign(group=values["speaker"].map(labels))[["utterance_id", "speaker", "group", "attribute", "value"]]

    def set_family(self, check: str, cases: Sequence[Case]) -> None:
        """The selected cases of a check in this session (e.g. the family of a multiple-testing correction)."""
        self._families[check] = tuple(dict.fromkeys(cases))

    def family(self, check: str) -> tuple[Case, ...]:
        if check not in self._families:
            self._families[check] = tuple(self.cases(check))
        return self._families[check]

    def verdict(self, case: Case) -> Verdict:
        return get_check(case.check).verdict(self, case, self.family(case.check))

    def served_keys(self) -> set[str]:
        """The cache keys of every output this process used (for --export-cache)."""
        return set().union(*(model.served_keys for model in self._models.values()))

    def run_metadata(self) -> dict[str, Any]:
        return {
            "offline": self.config.offline,
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
