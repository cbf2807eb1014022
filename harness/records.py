"""What every results.json record holds, the record of an unmeasured case, and the schema version.

Each check's own record class (a :class:`CaseRecord` subclass) lives in its folder's ``record.py``. A check's
verdict carries a typed record; :mod:`harness.results` writes it with :meth:`CaseRecord.to_json` and
:data:`SCHEMA_VERSION`, and reads records back with :func:`harness.results.record_from_json`, which names
the file, the case and the key of whatever does not fit. Nested values (per-group rows, comparisons,
charts' data) stay JSON mappings and lists: they are what the report's views read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.core.values import finite_or_none

SCHEMA_VERSION = 3
"""Version of the results.json layout; a change to a record's fields increments it. Version 2 added each
case's ``decision`` (the whole gate's decision rule, :class:`harness.metrics.multitest.DecisionRule`) and
``floors`` (quality floors, reported apart from the bias verdict). Version 3 keeps an unmeasured case's check
and identity (``status: unmeasured``, where versions 1-2 wrote ``check: error``) and types the run's metadata
(:class:`harness.results.RunMetadata`); :func:`harness.results.read_results` reads versions 1-2 as 3."""


@dataclasses.dataclass(frozen=True)
class Contrast:
    """One comparison of a case's bias test: ``estimate`` with its interval and two-sided p-value (NaN/None
    when not estimable, with ``reason``), and ``relevant`` (its magnitude exceeds the case's practical
    threshold, e.g. ``|gap| > max_gap`` or a ratio outside ``[lower, upper]``)."""

    label: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    relevant: bool
    reason: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> Contrast:
        return cls(**_known_fields(cls, data, where))

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "estimate": finite_or_none(self.estimate),
            "ci_low": finite_or_none(self.ci_low),
            "ci_high": finite_or_none(self.ci_high),
            "p": finite_or_none(self.p),
            "relevant": bool(self.relevant),
            "reason": self.reason,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision:
    """A case's bias decision, its record's ``decision`` (results.json schema 2): the fields of
    :class:`harness.metrics.multitest.CaseDecision` (the case's p after the within-case step, the number of
    ``comparisons``, the gate's ``family_size``, ``p_adjusted`` after the across-case step, ``alpha``,
    ``relevant``, ``significant``, ``estimable`` with its ``reason``, the ``correction`` in words), then what
    the check tested: the ``statistic``, the ``rule``, every ``contrast``, the ``untestable`` contrasts (beyond
    the practical threshold without a p-value) and the deciding contrast's ``label``, ``estimate`` and interval.

    A decision written before the statistic was recorded has ``statistic`` None (:attr:`decided` False)."""

    p: float | None = None
    comparisons: int | None = None
    family_size: int = 1
    p_adjusted: float | None = None
    alpha: float = 0.05
    relevant: bool | None = None
    significant: bool | None = None
    estimable: bool = True
    reason: str | None = None
    correction: str | None = None
    statistic: str | None = None
    rule: str | None = None
    contrasts: tuple[Contrast, ...] = ()
    untestable: tuple[str, ...] = ()
    label: str | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def decided(self) -> bool:
        """Whether the decision names its statistic and deciding contrast (the first screen reads those)."""
        return self.statistic is not None

    def to_json(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)} | {
            "contrasts": [contrast.as_dict() for contrast in self.contrasts],
            "untestable": list(self.untestable),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Decision:
        """The decision of a results.json record; ``where`` names the file and case in errors."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: 'decision' is a JSON object, got {type(data).__name__}")
        fields = _known_fields(cls, data, f"{where}, decision")
        contrasts = fields.get("contrasts", ())
        if not isinstance(contrasts, (list, tuple)):
            raise ValueError(f"{where}, decision: 'contrasts' is a list, got {type(contrasts).__name__}")
        fields["contrasts"] = tuple(
            Contrast.from_json(c, f"{where}, decision, contrast {i}") for i, c in enumerate(contrasts)
        )
        fields["untestable"] = tuple(fields.get("untestable", ()))
        return cls(**fields)


def _known_fields(kind: type, data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    names = {field.name for field in dataclasses.fields(kind)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}")
    return dict(data)


# Filled in after the check's verdict, and omitted from results.json while unset.
_WHEN_SET = ("decision", "floors", "absolute_passed", "release", "baseline", "nodeid")


@dataclasses.dataclass(kw_only=True)
class CaseRecord:
    """What every check records of a case; ``variant`` is its task or mode (None for none).

    ``passed`` is the bias verdict: ``decision`` says how it was reached (the case's comparisons, its p-value,
    the correction, ``estimable``); ``floors`` lists the quality floors (``min_icat``, ``min_accuracy``,
    ``min_score``: a model that is merely weak), each ``{key, value, threshold, met}``, which never fail a case.
    Against a baseline, ``absolute_passed`` is the case's own criterion, ``release`` the ratchet's outcome
    (:func:`harness.gate.release_outcome`: pass, no regression, known failure, new failure or regression) and
    ``passed`` whether that outcome passes."""

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
    decision: Decision | None = None
    floors: list[dict[str, Any]] | None = None
    paired_data: dict[str, Any] | None = None
    absolute_passed: bool | None = None
    release: str | None = None
    baseline: dict[str, Any] | None = None
    nodeid: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The results.json entry: every field, in declaration order, less the unset ones of :data:`_WHEN_SET`."""
        return {
            field.name: getattr(self, field.name).to_json()
            if isinstance(getattr(self, field.name), Decision)
            else getattr(self, field.name)
            for field in dataclasses.fields(self)
            if not (field.name in _WHEN_SET and getattr(self, field.name) is None)
        }


UNMEASURED = "unmeasured"
"""The ``status`` of an unmeasured case's record (:class:`UnmeasuredRecord`)."""


@dataclasses.dataclass(kw_only=True)
class UnmeasuredRecord:
    """A gate case that raised instead of reaching a verdict: its check and identity (model, corpus, dimension,
    variant, id; None only where a file of schema 1 did not record them), ``status`` ``unmeasured``, ``message``
    the error and ``cause`` its kind and source (:class:`harness.gate.outcomes.Cause`)."""

    check: str
    id: str
    model: str | None = None
    corpus: str | None = None
    dimension: str | None = None
    variant: str | None = None
    status: str = UNMEASURED
    passed: bool = False
    message: str
    cause: dict[str, Any] | None = None
    nodeid: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            name: value
            for name, value in dataclasses.asdict(self).items()
            if value is not None or name not in ("cause", "nodeid")
        }


Record = CaseRecord | UnmeasuredRecord
"""A results.json case: measured (its check's record class) or unmeasured."""

CaseKey = tuple[str, str | None, str | None, str | None, str | None]
"""(check, model, corpus, variant, dimension): what names one case, in a run and across runs."""


def case_key(record: Record) -> CaseKey:
    """The case's identity (:data:`CaseKey`): two checks may share case ids (the WER and judge-score ratios)."""
    return (record.check, record.model, record.corpus, record.variant, record.dimension)


SPOT_CHECK = "spot-check"
"""The verdict of a run that ran fewer than every case of its gate (:class:`Scope`): no release verdict."""


@dataclasses.dataclass(frozen=True)
class Omitted:
    """A case of the full gate that did not run, and why (``reason``)."""

    check: str
    id: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Scope:
    """``gate_cases``: the number of cases of the full gate; ``ran``: how many of them ran; ``deselected``,
    ``skipped`` and ``not_collected``: the others, each with its reason; ``off``: the checks the thresholds file
    turns off (no case of theirs is in the gate)."""

    gate_cases: int
    ran: int
    deselected: tuple[Omitted, ...] = ()
    skipped: tuple[Omitted, ...] = ()
    not_collected: tuple[Omitted, ...] = ()
    off: tuple[str, ...] = ()

    @property
    def omitted(self) -> tuple[Omitted, ...]:
        return (*self.deselected, *self.skipped, *self.not_collected)

    @property
    def spot_check(self) -> bool:
        """Whether some case of the full gate did not run."""
        return bool(self.omitted)

    def title(self) -> str:
        """``SPOT CHECK — N of M cases; not a release verdict`` (only for a spot check)."""
        return f"SPOT CHECK — {self.ran} of {self.gate_cases} cases; not a release verdict"

    def to_json(self) -> dict[str, Any]:
        return {
            "gate_cases": self.gate_cases,
            "ran": self.ran,
            "spot_check": self.spot_check,
            "deselected": [entry.as_dict() for entry in self.deselected],
            "skipped": [entry.as_dict() for entry in self.skipped],
            "not_collected": [entry.as_dict() for entry in self.not_collected],
            "off": list(self.off),
        }


def schema_version(results: Mapping[str, Any], where: str) -> int:
    """The schema version of a results.json (files written before versioning read as 1); a newer one is an error."""
    version = results.get("schema_version", 1)
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(
            f"{where}: schema_version {version!r}; this lalm-fairness reads versions 1 to {SCHEMA_VERSION}"
        )
    return version


RULE_JUDGES = "rules"
"""A BASIS record's ``judge`` when the offline rule judges read its open answers."""
RULE_JUDGES_DEVIATION = (
    "BASIS open answers judged by the offline rule judges (a word-list register judge for age personalization, the "
    "gold answer as a substring for spoken QA), not the paper's LLM judge (gpt-5.4-mini, Appendix B.3): pass "
    "--basis-judge SPEC"
)
