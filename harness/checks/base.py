"""What every check is made of: its cases (:class:`Case`), what it measured of one (:class:`Measurement`), and
the :class:`Check` that turns a measurement into a verdict (:meth:`Check.decide`), the same way for every check.

A check is a folder (``harness/checks/<name>/``, see :mod:`harness.checks`) whose ``check.py`` defines a
:class:`Check` subclass as ``CHECK``; the gate collects one test function per registered check
(:mod:`harness.gate_tests`), so nothing else names it. What a check reads of a run is :mod:`harness.checks.context`;
how a case is decided and worded, :mod:`harness.checks.verdict`; how it is compared with a baseline,
:mod:`harness.checks.release`.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Generic, TypeVar, cast

from harness.checks import check_part
from harness.checks.case import Case
from harness.checks.context import CheckContext, CompareContext
from harness.checks.verdict import bias_decision, describe_decision, floors_note, untestable_message
from harness.core.errors import DesignCannotFail
from harness.core.values import finite_or_none
from harness.metrics.multitest import CaseDecision
from harness.records import CaseRecord, Comparison, Contrast, Decision, QualityFloor, RecordPayload, StatedThreshold
from harness.thresholds import OFF_KEY, SectionThresholds, ThresholdKey, Thresholds, ThresholdSchema

T = TypeVar("T")


TRANSCRIPTION_PROBE = "transcription"
TASK_PROBE = "task"
"""What a case's model must be shown to hear before the case is measured (:meth:`Check.audio_probe`, the gate's audio
floor, :mod:`harness.gate.audio_floor`): that its transcripts change with the recording, or its answers to a task."""


def per_run(method: Callable[..., T]) -> Callable[..., T]:
    """Memoize a check method ``(self, context, *args)`` in the run's context: check instances are shared
    by every run of the process, so their results live, and are freed, with the run."""

    @functools.wraps(method)
    def wrapper(self: Check, context: CheckContext, *args: Hashable) -> T:
        return context.memo((self.name, method.__name__, *args), lambda: method(self, context, *args))

    return wrapper


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of one gate case; ``record`` is its results.json entry."""

    passed: bool
    message: str
    record: CaseRecord


@dataclasses.dataclass(frozen=True, kw_only=True)
class Measurement:
    """What a check measured of one case, before any verdict (:meth:`Check.measure`); :meth:`Check.decide` turns
    it into the verdict and the record.

    - ``value``: the case's headline measure (the record's ``value``; None where it is the deciding contrast's
      estimate, which :meth:`Check.decided_fields` gives);
    - ``contrasts``: the comparisons the bias test decides on, each with its p-value and whether its magnitude
      is beyond the practical threshold; ``statistic``: what they measure, in words;
    - ``rule``: how the gate's decision rule weighs significance and magnitude
      (:meth:`~harness.metrics.multitest.DecisionRule.decide`: ``both``, ``significance``, ``magnitude``), or
      ``q-value`` with ``fdr = (q, family size, alpha)`` (:func:`bias_decision`);
    - ``threshold``: the thresholds the case is judged by, typed (the record's ``threshold``); ``criterion``: the
      bias threshold in words (the message's ``bias threshold: ...``);
    - ``findings``: the measurement in words, the message's opening after the case id;
    - ``floors``: the quality floors (:func:`floor`), reported and never a bias verdict; None for a check without;
    - ``paired_data``: what a later run's baseline comparison pairs with (:meth:`Check.compare`), stored in the
      record so that the gate need not call back into the check;
    - ``payload``: the check's own record fields, typed (a :class:`~harness.records.RecordPayload` subclass, which its
      ``RECORD`` adds to :class:`~harness.records.CaseRecord`); None for a check whose record adds none."""

    value: float | None
    contrasts: Sequence[Contrast]
    statistic: str
    rule: str = "both"
    fdr: tuple[float | None, int, float] | None = None
    threshold: StatedThreshold
    criterion: str
    findings: str
    floors: list[QualityFloor] | None = None
    paired_data: dict[str, Any] | None = None
    payload: RecordPayload | None = None


SettingsT = TypeVar("SettingsT", bound=SectionThresholds)
"""A check's typed thresholds class (its :attr:`Check.schema`'s settings): ``class NtvdCheck(Check[NtvdThresholds])``."""


class Check(abc.ABC, Generic[SettingsT]):
    """A family of gate cases: its folder's ``CHECK``. A check says what its cases are (:meth:`cases`) and what
    each measures (:meth:`measure`); :meth:`decide` reaches the verdict. Its report section is its folder's view
    (``view.py``). Parametrized by its thresholds class, which :meth:`thresholds` returns."""

    name: ClassVar[str]
    gate_module: ClassVar[str] = "extensions"
    """The gate module that collects the check's test function (:mod:`harness.gate_tests`)."""
    schema: ClassVar[ThresholdSchema]

    @property
    def fixture(self) -> str:
        return f"{self.name}_case"

    def variants(self, context: CheckContext) -> list[str]:
        """Every valid value of the variant axis (for validating thresholds.yaml)."""
        return []

    @abc.abstractmethod
    def cases(self, context: CheckContext) -> list[Case]: ...

    def case(self, model: str, corpus: str, dimension: str, variant: str | None, case_id: str) -> Case:
        """A case of this check: ``model`` on ``dimension`` of ``corpus`` (a corpus, BASIS suite or item set) in
        ``variant``, named ``case_id``."""
        return Case(check=self.name, model=model, corpus=corpus, dimension=dimension, variant=variant, id=case_id)

    def no_cases_reason(self, context: CheckContext) -> str:
        """Why this session has no case of this check (shown as the skip reason)."""
        return f"no {self.name} case for the selected models and corpora"

    @abc.abstractmethod
    def measure(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Measurement:
        """What ``case`` measures; ``family`` is every selected case of this check in the session. An exception
        (e.g. :class:`~harness.core.errors.CaseNotMeasured`) makes the case unmeasured."""

    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        """The verdict of ``case``: its :meth:`measure`, decided and recorded by :meth:`decide`."""
        return self.decide(context, case, self.measure(context, case, family))

    def decide(self, context: CheckContext, case: Case, measurement: Measurement) -> Verdict:
        """The verdict and record of a measured case, the same for every check.

        The bias decision is the gate's decision rule on the measurement's contrasts (:func:`bias_decision`), and
        the case passes when it does not fail. The message reads ``<case id>: <findings>; bias threshold:
        <criterion>[; <decision note>][; <unmet quality floors>]; <the decision in words, ending -> pass or -> FAIL:
        bias>``: the verdict is the last word, and the floors (:func:`floors_note`) are reported, never a verdict. The
        record is the check's ``RECORD`` (:func:`harness.checks.check_part`) with the case's fields
        (:meth:`base_record`), the measurement's value, threshold, floors, paired data and payload, and the
        decision. A case that does not fail while some contrast beyond the practical threshold has no p-value or a
        test that cannot reach the corrected alpha (``decision.untestable``, :func:`bias_decision`) is unmeasured:
        :class:`~harness.core.errors.CaseNotMeasured` carries the record."""
        decision, block = bias_decision(
            context,
            case,
            measurement.contrasts,
            rule=measurement.rule,
            statistic=measurement.statistic,
            fdr=measurement.fdr,
        )
        passed = not decision.failed
        message = (
            f"{case.id}: {self.describe_findings(measurement, block)}; bias threshold: {measurement.criterion}"
            f"{self.decision_note(measurement, decision)}{floors_note(measurement.floors or [])}; "
            f"{describe_decision(decision, measurement.rule)}"
        )
        fields = {
            **self.base_record(context, case),
            "value": finite_or_none(measurement.value),
            "threshold": measurement.threshold,
            "passed": passed,
            "message": message,
            "decision": block,
            "floors": measurement.floors,
            "paired_data": measurement.paired_data,
            **(measurement.payload.record_fields() if measurement.payload is not None else {}),
        }
        record = check_part(self.name, "record")(**fields | self.decided_fields(measurement, decision, block))
        if block.untestable:
            raise DesignCannotFail(
                untestable_message(case.id, block.contrasts, block.untestable, measurement.rule), record
            )
        return Verdict(passed, message, record)

    def describe_findings(self, measurement: Measurement, decision: Decision) -> str:
        """The message's opening after the case id: the measurement's ``findings``; a check whose message names
        the deciding contrast (``decision.label``, ``estimate`` and interval) adds it here."""
        return measurement.findings

    def decision_note(self, measurement: Measurement, decision: CaseDecision) -> str:
        """What the message says of the decision before it is given in words (e.g. that the test cannot reach the
        corrected alpha), starting ``; ``; nothing by default."""
        return ""

    def decided_fields(self, measurement: Measurement, decision: CaseDecision, block: Decision) -> dict[str, Any]:
        """Record fields that depend on the decision (e.g. a value that is the deciding contrast's estimate), over
        those of the measurement; none by default."""
        return {}

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any] | None:
        """Per-speaker data stored in the record, so that a later run can compare against this one; :meth:`measure`
        puts it in the :class:`Measurement`."""
        return None

    def compare(self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        """Is ``candidate`` significantly worse than ``baseline`` (both records of this check)?"""
        return Comparison(status="unsupported", message=f"{self.name}: no baseline comparison for this check")

    def hears_voice(self, case: Case) -> bool:
        """Whether the model hears the speaker in this case. A mode without audio (BASIS text modes) cannot show
        voice-induced bias: a change there is the text backbone's, and the release gate reports it as such."""
        return True

    def audio_probe(self, case: Case) -> str | None:
        """What the model must be shown to hear before ``case`` is measured (the gate's audio floor,
        :mod:`harness.gate.audio_floor`): :data:`TASK_PROBE` (its answers to an open prompt change with the
        recording; the default, so that a new check is floored), :data:`TRANSCRIPTION_PROBE` (its transcripts do), or
        None for a case whose group reaches the model in the text."""
        return TASK_PROBE

    def gate_schema(self) -> ThresholdSchema:
        """The check's threshold schema with :data:`OFF_KEY`, which every check accepts in its ``defaults``."""
        return dataclasses.replace(self.schema, keys={**self.schema.keys, OFF_KEY: ThresholdKey((bool,), True)})

    def is_off(self, thresholds: Thresholds) -> bool:
        """Whether the thresholds turn the check off (``<check>: {defaults: {enabled: false}}``): it has no case,
        and results.json and the report list it as off."""
        return not thresholds.values(self.name, self.gate_schema(), None, "")[OFF_KEY]

    def thresholds(self, context: CompareContext, case: Case) -> SettingsT:
        """The case's typed thresholds (:meth:`thresholds_for` its variant and dimension)."""
        return self.thresholds_for(context, case.variant, case.dimension)

    def thresholds_for(self, context: CompareContext, variant: str | None, dimension: str) -> SettingsT:
        """The check's thresholds for one variant and dimension (thresholds never depend on the model), parsed into
        its schema's frozen dataclass (:class:`harness.thresholds.SectionThresholds`)."""
        values = context.thresholds.values(self.name, self.schema, variant, dimension)
        values.pop(OFF_KEY, None)
        # A recorded series' thresholds (harness.gate.series.RecordThresholds) give values but name no file.
        source = getattr(context.thresholds, "source", "<the thresholds a recorded case states>")
        return cast(SettingsT, self.schema.parse(values, source=source, section=self.name))

    def base_record(self, context: CheckContext, case: Case) -> dict[str, Any]:
        return {
            "check": self.name,
            "id": case.id,
            "model": case.model,
            "model_fingerprint": context.fingerprint(case.model),
            "corpus": case.corpus,
            "dimension": case.dimension,
            "variant": case.variant,
        }
