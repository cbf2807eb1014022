"""What every results.json record holds, the record of an unmeasured case, and the schema version.

Each check's own record class (a :class:`CaseRecord` subclass) lives in its folder's ``record.py``. A check's
verdict carries a typed record; :mod:`harness.results` writes it with :meth:`CaseRecord.to_json` and
:data:`SCHEMA_VERSION`, and reads records back with :func:`harness.results.record_from_json`, which names
the file, the case and the key of whatever does not fit. A record's nested values that every check shares are
records too, each with ``to_json``/``from_json``: its :class:`Decision`, its quality floors (:class:`QualityFloor`),
its comparison with a baseline (:class:`BaselineComparison`, a :class:`Comparison` with the baseline's source and
model) and its thresholds (:class:`StatedThreshold`: the check's typed thresholds). A check's own nested values
(per-group rows, charts' data) stay JSON mappings and lists: they are what the report's views read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from harness.core.json_records import JsonRecord, field_types, from_json_value, row_fields
from harness.metrics.permutation_floor import PermutationFloor
from harness.thresholds import Bound, SignificanceRule

SCHEMA_VERSION = 3
"""Version of the results.json layout; a change to a record's fields increments it. Version 2 added each
case's ``decision`` (the whole gate's decision rule, :class:`harness.metrics.multitest.DecisionRule`) and
``floors`` (quality floors, reported apart from the bias verdict). Version 3 keeps an unmeasured case's check
and identity (``status: unmeasured``, where versions 1-2 wrote ``check: error``) and types the run's metadata
(:class:`harness.results.RunMetadata`); :func:`harness.results.read_results` reads versions 1-2 as 3."""


@dataclasses.dataclass(frozen=True)
class Contrast(JsonRecord):
    """One comparison of a case's bias test: ``estimate`` with its interval and two-sided p-value (NaN/None
    when not estimable, with ``reason``), and ``relevant`` (its magnitude exceeds the case's practical
    threshold, e.g. ``|gap| > max_gap`` or a ratio outside ``[lower, upper]``).

    ``min_p`` is the smallest p-value the test's design can return on the units it kept (after every drop):
    ``floor.min_p`` for a permutation test (:class:`PermutationFloor`, whose ``floor`` says the design), an exact
    test's own minimum, or None where the test has no design floor (an asymptotic Wald or bootstrap-t p: the
    mixed-effects ratios, the BASIS crossed bootstrap). A contrast whose ``min_p`` cannot reach the gate's
    corrected alpha cannot be significant (:func:`harness.checks.verdict.bias_decision`)."""

    label: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    relevant: bool
    reason: str | None = None
    min_p: float | None = None
    floor: PermutationFloor | None = None
    bar: float | None = None
    """The effect the contrast must be able to detect, on its estimate's scale (its practical threshold: points,
    nTVD, or the ratio factor ``min(upper, 1 / lower)``); None where no bar applies."""
    detectable: float | None = None
    """The smallest true effect its test detects with 80% power at the corrected alpha the gate applied
    (:mod:`harness.metrics.detectable`), set when the case is decided; None before, or where unknown."""
    powered: bool | None = None
    """Whether ``detectable`` is within ``bar`` (set when decided)."""
    sensitivity: Any = dataclasses.field(default=None, compare=False, repr=False)
    """The test's :class:`~harness.metrics.detectable.DetectsEffects` (in memory only, never written)."""

    WRITTEN_TOGETHER: ClassVar[tuple[tuple[str, ...], ...]] = (("min_p", "floor"), ("bar", "detectable", "powered"))
    """A contrast without a design floor (or not judged for power: a record written before issue 57, or a contrast
    without a bar) is written as before they were recorded, and read back with None."""
    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ("sensitivity",)

    @classmethod
    def with_floor(
        cls,
        label: str,
        estimate: float | None,
        p: float | None,
        relevant: bool,
        floor: PermutationFloor,
        *,
        bar: float | None = None,
        sensitivity: Any = None,
    ) -> Contrast:
        """A permutation test's contrast (no interval), with its design's smallest p, its bar and sensitivity."""
        return cls(
            label, estimate, None, None, p, relevant, min_p=floor.min_p, floor=floor, bar=bar, sensitivity=sensitivity
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuleDecision:
    """What a decision by the gate's decision rule states, as a record holds it (the fields of
    :class:`harness.metrics.multitest.DecisionFields`, in order): the p after the within-case step, the number of
    ``comparisons``, the gate's ``family_size``, ``p_adjusted`` after the across-case step, ``alpha``, ``relevant``,
    ``significant``, ``estimable`` with its ``reason`` and the ``correction`` in words. A case's bias decision
    (:class:`Decision`) and a baseline comparison's (:class:`RegressionDecision`) add what each decided on."""

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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision(RuleDecision, JsonRecord):
    """A case's bias decision, its record's ``decision`` (results.json schema 2): the :class:`RuleDecision` fields of
    :class:`harness.metrics.multitest.CaseDecision`, then what the check tested: the ``statistic``, the ``rule``,
    every ``contrast``, the ``untestable`` contrasts (beyond the practical threshold without a p-value) and the
    deciding contrast's ``label``, ``estimate`` and interval.

    A decision written before the statistic was recorded has ``statistic`` None (:attr:`decided` False)."""

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


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityFloor(JsonRecord):
    """A quality floor of a case (``min_icat``, ``min_accuracy``, ``min_score``, ...): the floor's threshold ``key``,
    the case's ``value`` (None where undefined), the floor ``threshold`` and whether the value ``met`` it. Reported
    with the case, never a bias verdict (:func:`harness.checks.verdict.floor`)."""

    key: str
    value: float | None
    threshold: float
    met: bool

    def describe_unmet(self) -> str:
        """``min_icat 23.6 < 60``: the floor in the words of a case's message."""
        value = "undefined" if self.value is None else format(self.value, ".1f")
        return f"{self.key} {value} < {self.threshold:g}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class FloorChange(JsonRecord):
    """The change of one quality floor between a baseline and a candidate record of a case: the floor's ``key``,
    its ``baseline`` and ``candidate`` values and the candidate's floor ``threshold`` (reported, never gated)."""

    key: str
    baseline: float | None
    candidate: float | None
    threshold: float | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class RegressionDecision(RuleDecision, JsonRecord):
    """The gate's decision on a baseline comparison (:func:`harness.checks.release.regression_comparison`): the
    :class:`RuleDecision` of the one-sided p of "no worsening", the rule (``both``:
    worse by more than ``margin``, the threshold key ``margin_key``, and significant), what was resampled, and
    the paired test's ``df`` and ``se`` where it has them (None in a file written before they were recorded). It
    reaches results.json inside the case's ``baseline``."""

    rule: str
    margin: float
    margin_key: str
    resampled: str | None = None
    """What the paired test resampled (e.g. speakers, or speakers and items); None in a file written before."""
    df: float | None = None
    se: float | None = None
    detectable: float | None = None
    """The worsening the paired test detects with 80% power at the corrected alpha (issue 57); None before."""
    powered: bool | None = None
    """Whether ``detectable`` is within twice the margin (:data:`harness.checks.release.DETECTABLE_MARGINS`)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Comparison(JsonRecord):
    """Candidate versus baseline on one case. ``status``: compared; new (no baseline case); unsupported;
    not estimable (the paired contrast cannot vary); underpowered (it cannot detect twice its margin: issue 57; with
    not estimable, a passing case is unmeasured and a failing one a new failure); backbone (a mode without audio:
    the change is the text backbone's, reported and never a voice-induced regression).

    ``delta`` = candidate - baseline of the case's bias measure, with its interval; ``p_value`` the one-sided
    p of "no worsening"; ``decision`` the gate's decision rule applied to it
    (:func:`harness.checks.release.regression_comparison`); ``floors``: the change of each quality floor, reported
    and never gated."""

    status: str
    baseline_value: float | None = None
    delta: float | None = None
    p_value: float | None = None
    regressed: bool = False
    message: str
    ci_low: float | None = None
    ci_high: float | None = None
    measure: str | None = None
    decision: RegressionDecision | None = None
    floors: list[FloorChange] | None = None

    @property
    def candidate_value(self) -> float | None:
        """The candidate's value of the compared measure (``baseline_value + delta``; None where either is unknown)."""
        if isinstance(self.baseline_value, (int, float)) and isinstance(self.delta, (int, float)):
            return float(self.baseline_value) + float(self.delta)
        return None

    @property
    def p_adjusted(self) -> float | None:
        """The one-sided p of "no worsening" after the gate's correction (None without a decision)."""
        return None if self.decision is None else self.decision.p_adjusted

    @property
    def judged(self) -> bool:
        """Whether the release rule judged this comparison (:data:`RELEASE_JUDGED`)."""
        return self.status in RELEASE_JUDGED

    @property
    def undecided(self) -> bool:
        """Whether the comparison could not have found a regression (:data:`UNDECIDED_COMPARISONS`)."""
        return self.status in UNDECIDED_COMPARISONS


@dataclasses.dataclass(frozen=True, kw_only=True)
class BaselineComparison(Comparison):
    """A case's ``baseline`` in results.json: its :class:`Comparison` with the baseline, and that baseline's
    ``source`` (its results.json, portable: :func:`harness.core.files.portable_path`) and ``model``."""

    source: str
    model: str

    @classmethod
    def of(cls, comparison: Comparison, source: str, model: str) -> BaselineComparison:
        """``comparison`` against the baseline results.json ``source`` of ``model``."""
        fields = {field.name: getattr(comparison, field.name) for field in dataclasses.fields(comparison)}
        return cls(**fields, source=source, model=model)


class StatedThreshold(Protocol):
    """What a case states of the thresholds it is judged by (its record's ``threshold``): the check's typed thresholds
    (a :class:`harness.thresholds.SectionThresholds`, or a check's own class), written by ``to_json``; ``bounds`` and
    ``significance_rule`` say what they mean to a reader (the CI summary, the trend), as the class declares it."""

    def to_json(self) -> dict[str, Any]: ...

    def bounds(self) -> tuple[Bound, ...]: ...

    def significance_rule(self) -> SignificanceRule | None: ...


UNDECIDED_COMPARISONS = ("not estimable", "underpowered")
"""Statuses of a release comparison that could not have found a regression (issue 57): a case passing its absolute
threshold with one is unmeasured, and a failing case a new failure, never a known failure or "no regression"."""

RELEASE_JUDGED = ("compared", "backbone")
"""Statuses of a release comparison under which a case's release verdict is its regression verdict (issue 23): a
mode without audio never regresses; a new or unsupported case keeps its absolute verdict."""


# Filled in after the check's verdict, and omitted from results.json while unset.
@dataclasses.dataclass(kw_only=True)
class RecordPayload:
    """The fields a check's record adds to :class:`CaseRecord`, as its measurement gives them
    (:attr:`harness.checks.base.Measurement.payload`). A check declares them once, as a subclass of this class, and
    its record is ``class XRecord(XPayload, CaseRecord)``: the payload's fields follow the case's in the record."""

    def record_fields(self) -> dict[str, Any]:
        """The payload's fields by name, for the record."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class AttributeDistribution(JsonRecord):
    """P_g(v) of one attribute (VIBE §II-D, Figure 3): the ``groups``, the attribute's ``values`` and, per group, the
    probability of each value in that order; a record's figure (:meth:`CaseRecord.figure_distribution`)."""

    attribute: str
    groups: list[str]
    values: list[str]
    probabilities: dict[str, list[float]]

    def probability(self, group: str, index: int) -> float:
        """P_group(values[index])."""
        return float(self.probabilities[group][index])


@dataclasses.dataclass(frozen=True)
class Statistics:
    """What a case's record states beside its decision, by name, for a surface that shows it in one line (the CI
    summary): the case's own ``p``, VIBE's BH ``q`` (it decides nothing), an interval ``ci`` of its value, and a
    BASIS case's best-worst ``gap`` with its interval ``gap_ci`` (points). A check's record states its own
    (:meth:`CaseRecord.statistics`); None where it has none."""

    p: float | None = None
    q: float | None = None
    ci: tuple[float, float] | None = None
    gap: float | None = None
    gap_ci: tuple[float, float] | None = None

    @staticmethod
    def interval(low: float | None, high: float | None) -> tuple[float, float] | None:
        """``(low, high)`` where both are known, else None."""
        return None if low is None or high is None else (float(low), float(high))


@dataclasses.dataclass(kw_only=True)
class CaseRecord(JsonRecord):
    """What every check records of a case; ``variant`` is its task or mode (None for none).

    ``threshold`` is what the case is judged by, the check's typed thresholds (:class:`StatedThreshold`; a check's
    record class names their class in its ``threshold`` annotation). ``passed`` is the bias verdict: ``decision``
    says how it was reached (the case's comparisons, its p-value, the correction, ``estimable``); ``floors`` lists
    the quality floors (:class:`QualityFloor`: ``min_icat``, ``min_accuracy``, ``min_score``, a model that is merely
    weak), which never fail a case. Against a baseline, ``baseline`` is the comparison with it
    (:class:`BaselineComparison`), ``absolute_passed`` the case's own criterion, ``release`` the ratchet's outcome
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
    threshold: StatedThreshold
    passed: bool
    message: str
    decision: Decision | None = None
    floors: list[QualityFloor] | None = None
    paired_data: dict[str, Any] | None = None
    absolute_passed: bool | None = None
    release: str | None = None
    baseline: BaselineComparison | None = None
    nodeid: str | None = None

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (
        "decision", "floors", "absolute_passed", "release", "baseline", "nodeid"
    )  # fmt: skip
    """The results.json entry is every field, in declaration order (the codec, :class:`JsonRecord`), less these
    while unset (a run without a baseline, a file written before the field)."""
    TYPED_FIELDS: ClassVar[tuple[str, ...]] = ("threshold", "decision", "floors", "baseline")
    """The fields whose values are records of their own, written by their ``to_json`` and read by
    :meth:`typed_fields_from_json`."""

    def figure_distribution(self) -> AttributeDistribution | None:
        """A distribution of values over groups that the report draws under the case when it fails (nTVD: the most
        divergent attribute's); None by default."""
        return None

    def statistics(self) -> Statistics:
        """The p, q, interval and gap the record states (:class:`Statistics`); a check's record states its own."""
        return Statistics()

    @property
    def unmeasured_by_design(self) -> bool:
        """Whether the case did not fail but could not have (issue 57): a contrast of its decision is untestable, or
        it passed its absolute threshold while its release comparison could not have found a regression
        (:data:`UNDECIDED_COMPARISONS`). Such a record is what an unmeasured case measured (``measured``)."""
        decision = self.decision
        if decision is not None and decision.untestable:  # a failing decision names no untestable contrast
            return True
        baseline = self.baseline
        return (
            self.release is None
            and self.absolute_passed is True
            and baseline is not None
            and baseline.status in UNDECIDED_COMPARISONS
        )

    @property
    def verdict(self) -> str:
        """The case's verdict in one word, as every surface tells it: ``pass``, ``FAIL`` or ``unmeasured``."""
        if self.unmeasured_by_design:
            return UNMEASURED
        return "pass" if self.passed else "FAIL"

    @classmethod
    def threshold_from_json(cls, data: Mapping[str, Any], where: str) -> Any:
        """The record's ``threshold`` (of JSON record ``data``) read as the class its annotation names, which has a
        ``from_json(value, where)``; a check whose thresholds' keys depend on another field of the record overrides
        this."""
        kind = field_types(cls)["threshold"]
        if not hasattr(kind, "from_json"):
            raise TypeError(f"{cls.__name__} does not annotate 'threshold' with its check's thresholds class")
        return kind.from_json(data["threshold"], f"{where}, threshold")

    @classmethod
    def typed_fields_from_json(cls, data: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``data``'s :data:`TYPED_FIELDS` read as their records, and its payload's row classes by their annotations
        (:func:`harness.core.json_records.from_json_value`); ``where`` (file and case) prefixes every error."""
        hints = field_types(cls)
        typed: dict[str, Any] = {
            name: from_json_value(hints[name], data[name], where, name)
            for name in sorted(row_fields(cls) - set(cls.TYPED_FIELDS))
            if name in data
        }
        if "threshold" in data:
            typed["threshold"] = cls.threshold_from_json(data, where)
        if data.get("decision") is not None:
            typed["decision"] = Decision.from_json(data["decision"], f"{where}, decision", strict=True)
        if data.get("floors") is not None:
            floors = data["floors"]
            if not isinstance(floors, list):
                raise ValueError(f"{where}: key 'floors' must be a list or null, got {floors!r:.80}")
            typed["floors"] = [
                QualityFloor.from_json(floor, f"{where}, floors[{index}]", strict=True)
                for index, floor in enumerate(floors)
            ]
        if data.get("baseline") is not None:
            typed["baseline"] = BaselineComparison.from_json(data["baseline"], f"{where}, baseline", strict=True)
        return typed


UNMEASURED = "unmeasured"
"""The ``status`` of an unmeasured case's record (:class:`UnmeasuredRecord`)."""

CAUSE_KINDS = ("model", "server", "config", "cache", "input", "design", "internal")
"""``design``: the case was measured and did not fail, but its design could not have failed it (issue 57)."""


@dataclasses.dataclass(frozen=True)
class Cause(JsonRecord):
    """Why a case was not measured (:func:`harness.gate.outcomes.cause_of`): ``kind`` (one of :data:`CAUSE_KINDS`),
    ``source`` (the URL, file, spec or key at fault, when known) and the error's one-line ``message``. Where the cause
    lies with a model the run uses to measure the case rather than the model under test (:mod:`harness.gate.roles`),
    ``role`` names it ("extractor", "judge", "perceiver", ...), ``spec`` is its spec and ``set_by`` the option or
    setting that chose it ("--extractor")."""

    kind: str
    source: str | None
    message: str
    role: str | None = None
    spec: str | None = None
    set_by: str | None = None

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("role", "spec", "set_by")
    """The results.json ``cause``: kind, source and message, and the role's fields where it has one."""

    @property
    def key(self) -> tuple[str, str]:
        """Cases with equal keys share one cause: the kind and the source (the message where no source is known)."""
        return self.kind, self.source if self.source is not None else self.message

    @property
    def label(self) -> str:
        """How a surface names the cause's kind: ``by design`` for a case whose design could not have failed it
        (issue 57: not an error of anything), else ``<kind> error``."""
        return "by design" if self.kind == "design" else f"{self.kind or 'unknown'} error"

    @property
    def where(self) -> str:
        """Where the cause lies, in words: its kind, then the helper model it lies with and the option that set it
        (issue 47: "model, the extractor vllm:Qwen/Qwen3-8B set by --extractor"), else its source (a spec, URL, file
        or key), e.g. "server, http://127.0.0.1:9/v1"."""
        where = self.kind or "unknown"
        if self.role:
            where += f", the {self.role} {self.spec}" + (f" set by {self.set_by}" if self.set_by else "")
            if self.source and self.source != self.spec:
                where += f" ({self.source})"
        elif self.source:
            where += f", {self.source}"
        return where


@dataclasses.dataclass(kw_only=True)
class UnmeasuredRecord(JsonRecord):
    """A gate case that raised instead of reaching a verdict: its check and identity (model, corpus, dimension,
    variant, id; None only where a file of schema 1 did not record them), ``status`` ``unmeasured``, ``message``
    the error and ``cause`` its kind and source (:class:`Cause`)."""

    check: str
    id: str
    model: str | None = None
    corpus: str | None = None
    dimension: str | None = None
    variant: str | None = None
    status: str = UNMEASURED
    passed: bool = False
    message: str
    cause: Cause | None = None
    nodeid: str | None = None
    measured: CaseRecord | None = None
    """The record of a case that was measured and decided but whose design could not have failed it (cause
    ``design``, issue 57): what it found, kept so that nothing measured is lost; None otherwise."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("cause", "nodeid", "measured")


Record = CaseRecord | UnmeasuredRecord
"""A results.json case: measured (its check's record class) or unmeasured."""

CaseKey = tuple[str, str | None, str | None, str | None, str | None]
"""(check, model, corpus, variant, dimension): what names one case, in a run and across runs."""


def case_key(record: Record) -> CaseKey:
    """The case's identity (:data:`CaseKey`): two checks may share case ids (the WER and judge-score ratios)."""
    return (record.check, record.model, record.corpus, record.variant, record.dimension)


def regressed_against_baseline(record: Record) -> bool:
    """Whether ``record`` is a measured case that regressed significantly against its baseline."""
    return isinstance(record, CaseRecord) and record.baseline is not None and record.baseline.regressed


SPOT_CHECK = "spot-check"
"""The verdict of a run that ran fewer than every case of its gate (:class:`Scope`): no release verdict."""


@dataclasses.dataclass(frozen=True)
class Omitted(JsonRecord):
    """A case of the full gate that did not run, and why (``reason``)."""

    check: str
    id: str
    reason: str


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
            "deselected": [entry.to_json() for entry in self.deselected],
            "skipped": [entry.to_json() for entry in self.skipped],
            "not_collected": [entry.to_json() for entry in self.not_collected],
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
