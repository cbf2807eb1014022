"""The results.json record of each check's case: one dataclass per record kind, and the schema version.

A check's verdict carries a typed record; the plugin writes it to results.json with :meth:`CaseRecord.to_json`
and :data:`SCHEMA_VERSION`; a baseline's records are read back with :func:`record_from_json`, which names
the file, the case and the key of whatever does not fit. Nested values (per-group rows, comparisons,
charts' data) stay JSON mappings and lists: they are what the report's views read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

SCHEMA_VERSION = 2
"""Version of the results.json layout; a change to a record's fields increments it. Version 2 added each
case's ``decision`` (the whole gate's decision rule, :class:`harness.metrics.multitest.DecisionRule`) and
``floors`` (quality floors, reported apart from the bias verdict)."""

# Filled in after the check's verdict, and omitted from results.json while unset.
_WHEN_SET = ("decision", "floors", "absolute_passed", "baseline", "nodeid")


@dataclasses.dataclass(kw_only=True)
class CaseRecord:
    """What every check records of a case; ``variant`` is its task or mode (None for none).

    ``passed`` is the bias verdict: ``decision`` says how it was reached (the case's comparisons, its p-value,
    the correction, ``estimable``); ``floors`` lists the quality floors (``min_icat``, ``min_accuracy``,
    ``min_score``: a model that is merely weak), each ``{key, value, threshold, met}``, which never fail a case."""

    check: str
    id: str
    model: str
    model_fingerprint: str
    corpus: str
    dimension: str
    variant: str | None
    value: float | None
    threshold: dict[str, Any]
    passed: bool
    message: str
    decision: dict[str, Any] | None = None
    floors: list[dict[str, Any]] | None = None
    paired_data: dict[str, Any] | None = None
    absolute_passed: bool | None = None
    baseline: dict[str, Any] | None = None
    nodeid: str | None = None

    checks: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        """The results.json entry: every field, in declaration order, less the unset ones of :data:`_WHEN_SET`."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if not (field.name in _WHEN_SET and getattr(self, field.name) is None)
        }


@dataclasses.dataclass(kw_only=True)
class NtvdRecord(CaseRecord):
    checks: ClassVar[tuple[str, ...]] = ("ntvd",)

    task: str
    p: float | None
    q: float | None
    n_speakers: int
    n_groups: int
    n_permutations: int
    seed: int
    per_attribute: dict[str, float | None]
    dropped_attributes: list[str]
    answer_status: dict[str, int]
    most_divergent: dict[str, Any] | None
    tau_sensitivity: dict[str, float | None]
    refusal_ntvd: float | None
    collapsed_attributes: list[str]
    minimum_detectable_ntvd: dict[str, float | None]
    extractor: str
    canonical: dict[str, Any] | None
    example_pair: dict[str, Any] | None


@dataclasses.dataclass(kw_only=True)
class RatioRecord(CaseRecord):
    """A group ratio of expected WER or of mean judge score; ``comparisons`` holds every method's row."""

    checks: ClassVar[tuple[str, ...]] = ("wer_ratio", "score_ratio")

    ci: list[float | None]
    p: float | None
    q: float | None
    comparisons: list[dict[str, Any]]
    semantics: dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class ModeRecord(CaseRecord):
    """A BASIS case asked in one evaluation mode: per-group results and the §3.4 mode effects of its dimension."""

    mode: str
    per_group: list[dict[str, Any]]
    n_answers: int
    n_speakers: int
    mode_effects: dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class IcatRecord(ModeRecord):
    checks: ClassVar[tuple[str, ...]] = ("icat",)

    pooled_ss: float | None
    pooled_ss_ci: list[float | None]
    pooled_p: float | None
    pooled_icat: float | None
    unknown_rate: float | None
    answer_rules: dict[str, int]


@dataclasses.dataclass(kw_only=True)
class PersonalizationRecord(ModeRecord):
    checks: ClassVar[tuple[str, ...]] = ("personalization",)

    gap: dict[str, Any]
    sets: list[str]
    stereotype_icat: float | None


@dataclasses.dataclass(kw_only=True)
class ClassificationRecord(CaseRecord):
    checks: ClassVar[tuple[str, ...]] = ("classification",)

    per_label: list[dict[str, Any]]
    confusion: dict[str, dict[str, dict[str, int]]]
    gap: dict[str, Any]
    n_answers: int


@dataclasses.dataclass(kw_only=True)
class RobustnessRecord(CaseRecord):
    checks: ClassVar[tuple[str, ...]] = ("robustness",)

    task: str
    per_group: list[dict[str, Any]]
    gap: dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class ErrorRecord:
    """A gate case that raised instead of reaching a verdict (unmeasured); ``message`` is the error, ``cause``
    its kind and source, and model/corpus/dimension/variant whatever of the case is known (unset ones omitted)."""

    check: str = "error"
    id: str
    nodeid: str
    passed: bool = False
    message: str
    cause: dict[str, Any] | None = None
    model: str | None = None
    corpus: str | None = None
    dimension: str | None = None
    variant: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in dataclasses.asdict(self).items()
                if value is not None or name not in ("cause", "model", "corpus", "dimension", "variant")}


RECORD_TYPES: dict[str, type[CaseRecord]] = {
    check: kind
    for kind in (NtvdRecord, RatioRecord, IcatRecord, PersonalizationRecord, ClassificationRecord, RobustnessRecord)
    for check in kind.checks
}


def record_from_json(data: Any, where: str) -> CaseRecord | ErrorRecord:
    """The typed record of a results.json case; ``where`` (file and case) prefixes every error."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a case is a JSON object, got {type(data).__name__}")
    kind = ErrorRecord if data.get("check") == "error" else RECORD_TYPES.get(data.get("check"))
    if kind is None:
        raise ValueError(f"{where}: unknown check {data.get('check')!r}; records are of {sorted(RECORD_TYPES)}")
    fields = {field.name: field for field in dataclasses.fields(kind)}
    missing = [name for name, field in fields.items()
               if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING and name not in data]
    if missing:
        raise ValueError(f"{where}: {data['check']} record lacks key(s) {missing}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: {data['check']} record has unknown key(s) {unknown}")
    if not isinstance(data["passed"], bool):
        raise ValueError(f"{where}: key 'passed' must be true or false, got {data['passed']!r}")
    return kind(**data)


def schema_version(results: Mapping[str, Any], where: str) -> int:
    """The schema version of a results.json (files written before versioning read as 1); a newer one is an error."""
    version = results.get("schema_version", 1)
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(f"{where}: schema_version {version!r}; this lalm-fairness reads versions 1 to {SCHEMA_VERSION}")
    return version
