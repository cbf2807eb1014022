"""results.json's ``metadata``: what a run ran with, as typed records (:class:`RunMetadata`).

Every nested value of the metadata is a frozen record of its own (a corpus, the thresholds file, a model's output
counts, a probe of the audio floor ...), read and written by one codec (:mod:`harness.core.json_records`) that
follows the fields' annotations, so that the JSON keeps its shape, key order included, and a reader reads
attributes. Three values stay plain JSON objects, their keys being the engines' own: ``decoding``,
``resolved_settings`` and ``compute_environment`` (and a shipped export's ``provenance``).

Files of older versions are read as far as they go: a key this version does not write is dropped, a key an older
version did not write takes its default, and an audio-floor entry of a run before issue 45 (one flat entry per
model) is read as that model's only probe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from harness.core.json_records import JsonRecord, from_json_value


@dataclasses.dataclass(frozen=True)
class OutputCounts(JsonRecord):
    """One model's outputs in the run: ``generated``, ``read`` from the cache (``read_imported`` of them imported
    entries), answered by an identical request of the same batch (``duplicates``), and the entries the run's imports
    brought (``imported``: set when the parts of a run are merged, absent from one process's part)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("imported",)

    generated: int = 0
    read: int = 0
    read_imported: int = 0
    duplicates: int = 0
    imported: int | None = None

    def plus(self, other: OutputCounts) -> OutputCounts:
        """The counts of two processes together."""
        imported = (
            None if self.imported is None and other.imported is None else (self.imported or 0) + (other.imported or 0)
        )
        return OutputCounts(
            self.generated + other.generated,
            self.read + other.read,
            self.read_imported + other.read_imported,
            self.duplicates + other.duplicates,
            imported,
        )


@dataclasses.dataclass(frozen=True)
class ModelLoad(JsonRecord):
    """One load of a model on a device (:mod:`harness.models.residency`): its memory ``share``, the seconds from the
    run's start to its load and its release (None: resident to the end), and the model it was released for."""

    spec: str
    device: str
    share: float
    loaded_s: float
    released_s: float | None = None
    released_for: str | None = None


@dataclasses.dataclass(frozen=True)
class SuiteProvenance(JsonRecord):
    """Where a built corpus or suite came from: its ``provenance.json`` (``path``) in one line (``summary``: voices,
    synthesisers, the admission filters and what they dropped; :mod:`harness.data.provenance`) and, for a suite
    built with ``--allow-engine-confound``, the dimensions whose voice bank determines the group
    (``engine_confound``, each with its cells; :mod:`harness.suite.spread`)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("engine_confound",)

    path: str
    summary: str
    engine_confound: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class CorpusEntry(JsonRecord):
    """A corpus the run measured: its manifest ``path``, content ``hash``, utterance count, audio warnings and, for
    one that ``lalm-fairness-suite build`` made, its ``provenance``."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("provenance",)

    path: str | None = None
    hash: str | None = None
    utterances: int | None = None
    audio_warnings: list[str] = dataclasses.field(default_factory=list)
    provenance: SuiteProvenance | None = None


@dataclasses.dataclass(frozen=True)
class ItemSetEntry(JsonRecord):
    """One BASIS item set's stimuli: its content ``hash`` (:attr:`harness.data.basis_suite.ItemSet.content_hash`) and
    each recording's audio hash (``<id:05d>_<speaker>`` -> hash), so that a baseline names the recordings that
    changed."""

    hash: str
    recordings: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class BasisSuiteEntry(JsonRecord):
    """The BASIS item suite the run read: its ``path``, audio warnings, for a built one its ``provenance``, and each
    item set's stimuli (``sets``: name -> :class:`ItemSetEntry`; absent in a results.json written before them)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("provenance", "sets")

    path: str | None = None
    audio_warnings: list[str] = dataclasses.field(default_factory=list)
    provenance: SuiteProvenance | None = None
    sets: dict[str, ItemSetEntry] | None = None


@dataclasses.dataclass(frozen=True)
class ThresholdsLayer(JsonRecord):
    """One thresholds file a run layered over the built-in defaults: its ``source`` and its whole ``document``."""

    source: str
    document: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ThresholdsEntry(JsonRecord):
    """The thresholds file in force: its ``source``, content ``hash``, the notes its loading made and the files
    layered over the built-in defaults (``layers``: a later release gate judges against them, issue 57)."""

    source: str | None = None
    hash: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    layers: list[ThresholdsLayer] | None = None
    """None for the built-in defaults alone, or a file written before they were recorded."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("layers",)


@dataclasses.dataclass(frozen=True)
class VibeEntry(JsonRecord):
    """The run's VIBE protocol and extractor (:class:`harness.extraction.vibe_protocol.VibeProtocol`), the extractor's
    fingerprint, where each setting came from, and the deviations from the paper in words."""

    protocol: str | None = None
    extractor: str | None = None
    extractor_fingerprint: str | None = None
    sources: dict[str, str] = dataclasses.field(default_factory=dict)
    deviations: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class SemanticEntry(JsonRecord):
    """One model's semantic covariates (:class:`harness.semantic.SemanticSetup`): whose they are (``source``), in
    words, each embedder's fingerprint by name, and the deviation from the paper, if any."""

    source: str | None = None
    described: str | None = None
    embedders: dict[str, str] = dataclasses.field(default_factory=dict)
    deviation: str | None = None


@dataclasses.dataclass(frozen=True)
class BaselineEntry(JsonRecord):
    """The ``--baseline`` run: its file (``source``), the ``model`` compared with, and what could not be paired."""

    source: str | None = None
    model: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    threshold_deviations: list[str] | None = None
    """The keys judged at the baseline's stricter (or unordered) value instead of this run's (issue 57); None where
    none was."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("threshold_deviations",)


@dataclasses.dataclass(frozen=True)
class ImportedCache(JsonRecord):
    """An ``--import-cache`` file: its entries, in all and per model."""

    file: str
    entries: int = 0
    per_model: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class BundledExport(JsonRecord):
    """A shipped export of a configured ``model`` that the run imported: its ``file``, its entries in all and per model,
    and the ``provenance`` of its making (a plain JSON object, the build script's own record; None where it has
    none)."""

    model: str
    file: str
    entries: int = 0
    per_model: dict[str, int] = dataclasses.field(default_factory=dict)
    provenance: dict[str, Any] | None = None


def joined_exports(known: Sequence[BundledExport], more: Sequence[BundledExport]) -> list[BundledExport]:
    """The shipped exports of several processes as one list: each process counts the entries it added to the shared
    cache (:meth:`harness.cache.OutputCache.import_counts`), so the counts of one export are summed."""
    joined = {(entry.model, entry.file): entry for entry in known}
    for entry in more:
        first = joined.get((entry.model, entry.file))
        if first is None:
            joined[(entry.model, entry.file)] = entry
            continue
        per_model = {model: first.per_model.get(model, 0) + entry.per_model.get(model, 0)
                     for model in {**first.per_model, **entry.per_model}}  # fmt: skip
        joined[(entry.model, entry.file)] = dataclasses.replace(
            first, entries=first.entries + entry.entries, per_model=per_model
        )
    return list(joined.values())


@dataclasses.dataclass(frozen=True)
class AudioProbe(JsonRecord):
    """One probe of the audio floor (:meth:`harness.gate.audio_floor.AudioFloor.record`): whether ``model`` hears,
    by the estimated ``audio_dependent_share`` (the largest replacement change rate less the replicate's, per arm
    in ``changed``) over ``requests`` recordings and its permutation ``p_value`` over ``permutations``
    relabellings, against the bars in force (``audio_blind_share``, ``alpha``), with the ``deviation`` it was
    measured under; or why it is ``unmeasured``. A run before issue 58 wrote ``share`` (unchanged share),
    ``unchanged``, ``statistic`` and ``sampled_alpha`` instead; they are read and written back, never set; the
    fields of issue 58 are left out of the JSON while None, so such a file writes back as it was read."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("audio_dependent_share", "changed", "alpha", "deviation")

    model: str | None = None
    probe: str | None = None
    asked: str | None = None
    decoding: str | None = None
    share: float | None = None
    unchanged: dict[str, float] | None = None
    requests: int | None = None
    statistic: float | None = None
    p_value: float | None = None
    permutations: int | None = None
    audio_blind_share: float | None = None
    sampled_alpha: float | None = None
    hears: bool | None = None
    unmeasured: str | None = None
    audio_dependent_share: float | None = None
    changed: dict[str, float] | None = None
    alpha: float | None = None
    deviation: str | None = None


def probes_by_model(data: Any, where: str, strict: bool = False) -> dict[str, dict[str, AudioProbe]]:
    """``audio_dependence``: model -> probe -> :class:`AudioProbe`; a run before issue 45 wrote one flat entry per model
    (it has ``hears``), read as that model's only probe (named by its ``probe``, else ``audio``)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object, got {data!r:.80}")
    probes = {}
    for model, entries in data.items():
        if isinstance(entries, Mapping) and "hears" in entries:
            entries = {str(entries.get("probe") or "audio"): entries}
        probes[model] = from_json_value(dict[str, AudioProbe], entries, where, model, strict)
    return probes


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunMetadata(JsonRecord):
    """What a run ran with: when (``created``), the package versions, the xdist ``workers``, the ``imported_caches``,
    ``offline``, each model's fingerprint (``models``, ``stage_models``) and ``resolved_settings``, generation
    counts (``model_calls``, ``cache_hits``, ``outputs`` per model, ``models_loaded``, ``residency``), the ``corpora``
    and ``basis_suite``, the ``thresholds`` file, ``permutations``, ``seed``, ``decoding``, the ``extractor``,
    ``vibe`` protocol, ``embedder``, ``semantic`` setups, ``judge`` (fingerprint) and ``basis_judge``, the
    ``cache_dir``, the ``baseline``, the ``bundled_outputs`` imported, a damaged cache ``cache_set_aside``, the
    ``compute_environment`` and each probed model's ``audio_dependence`` (model -> probe -> :class:`AudioProbe`)."""

    created: str | None = None
    package_versions: dict[str, str | None] = dataclasses.field(default_factory=dict)
    workers: int = 1
    imported_caches: list[ImportedCache] = dataclasses.field(default_factory=list)
    offline: bool | None = None
    models: dict[str, str] = dataclasses.field(default_factory=dict)
    stage_models: dict[str, str] = dataclasses.field(default_factory=dict)
    resolved_settings: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    model_calls: int = 0
    cache_hits: int = 0
    outputs: dict[str, OutputCounts] | None = None
    models_loaded: list[str] = dataclasses.field(default_factory=list)
    residency: list[ModelLoad] = dataclasses.field(default_factory=list)
    corpora: dict[str, CorpusEntry] = dataclasses.field(default_factory=dict)
    basis_suite: BasisSuiteEntry | None = None
    thresholds: ThresholdsEntry | None = None
    permutations: int | None = None
    seed: int | None = None
    decoding: dict[str, Any] | None = None
    extractor: str | None = None
    vibe: VibeEntry | None = None
    embedder: str | None = None
    semantic: dict[str, SemanticEntry] = dataclasses.field(default_factory=dict)
    judge: str | None = None
    basis_judge: str | None = None
    cache_dir: str | None = None
    baseline: BaselineEntry | None = None
    bundled_outputs: list[BundledExport] = dataclasses.field(default_factory=list)
    cache_set_aside: str | None = None
    compute_environment: dict[str, Any] | None = None
    audio_dependence: dict[str, dict[str, AudioProbe]] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str, strict: bool = True) -> RunMetadata:
        """The metadata of a results.json (``where`` names the file); ``strict``: a file of this schema, whose every
        key must be known."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: 'metadata' is a JSON object, got {type(data).__name__}")
        where = f"{where}, metadata"
        probes = data.get("audio_dependence")
        rest = {key: value for key, value in data.items() if key != "audio_dependence"}
        metadata = super().from_json(rest, where, strict)
        if probes is None:
            return metadata
        return dataclasses.replace(
            metadata, audio_dependence=probes_by_model(probes, f"{where}, audio_dependence", strict)
        )

    @classmethod
    def merge(
        cls, parts: Sequence[RunMetadata], imported_caches: Sequence[ImportedCache] = (), **run: Any
    ) -> RunMetadata:
        """One run's metadata from the parts of each process that ran (xdist workers and the controller): counts
        are summed (``outputs`` per model and count), the models, stage models, resolved settings, loaded models,
        residency and bundled exports of every part are united (the audio floor's probes per model and probe), and
        every other field comes from the first part that states it. Each model's ``outputs`` then gains
        ``imported``: its entries that the bundled exports (once, whichever processes imported them) and the
        ``imported_caches`` (``--import-cache`` files, with their ``per_model`` counts) brought; models the run did
        not use are not listed. ``run`` sets the fields only the controller knows (``created``, ``package_versions``,
        ``workers``)."""
        merged: dict[str, Any] = {}
        outputs: dict[str, OutputCounts] | None = None
        bundled: list[BundledExport] = []
        for part in parts:
            merged["model_calls"] = merged.get("model_calls", 0) + part.model_calls
            merged["cache_hits"] = merged.get("cache_hits", 0) + part.cache_hits
            for key in ("models", "stage_models", "resolved_settings"):
                merged[key] = {**merged.get(key, {}), **getattr(part, key)}
            probes = merged.setdefault("audio_dependence", {})
            for model, probed in part.audio_dependence.items():
                probes[model] = {**probes.get(model, {}), **probed}
            merged["residency"] = [*merged.get("residency", []), *part.residency]
            merged["models_loaded"] = sorted(set(merged.get("models_loaded", [])) | set(part.models_loaded))
            bundled = joined_exports(bundled, part.bundled_outputs)
            if part.outputs is not None:
                outputs = {} if outputs is None else outputs
                for model, counts in part.outputs.items():
                    outputs[model] = outputs[model].plus(counts) if model in outputs else counts
            for field in dataclasses.fields(cls):
                value = getattr(part, field.name)
                if field.name not in merged and field.name not in ("outputs", "bundled_outputs") and value is not None:
                    merged[field.name] = value
        if outputs is not None:
            imported = {model: 0 for model in outputs}
            for source in (*bundled, *imported_caches):
                for model, count in source.per_model.items():
                    if model in imported:
                        imported[model] += count
            outputs = {
                model: dataclasses.replace(counts, imported=(counts.imported or 0) + imported[model])
                for model, counts in outputs.items()
            }
        return cls(
            **merged | {"outputs": outputs, "bundled_outputs": bundled, "imported_caches": list(imported_caches)} | run
        )

    def audio_warnings(self) -> list[str]:
        """The silent and very short clips that the corpora and the BASIS suite reported at load."""
        lines = [line for corpus in self.corpora.values() for line in corpus.audio_warnings]
        return lines + list(self.basis_suite.audio_warnings if self.basis_suite is not None else [])

    def judge_spec(self) -> str | None:
        """The judge's spec: the model whose fingerprint is :attr:`judge`."""
        return next(
            (spec for spec, fingerprint in self.models.items() if self.judge and fingerprint == self.judge), None
        )
