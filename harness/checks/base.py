"""What every check is made of: its cases, its thresholds, how a case's verdict is reached and compared with
a baseline, and the run context it reads.

A check is a folder (``harness/checks/<name>/``, see :mod:`harness.checks`) whose ``check.py`` defines a
:class:`Check` subclass as ``CHECK``; the gate collects one test function per registered check
(:mod:`harness.gate_tests`), so nothing else names it. A check measures a case (:meth:`Check.measure`, a
:class:`Measurement`); this module decides and records it (:meth:`Check.decide`), the same way for every check.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import pandas as pd

from harness.checks import check_part
from harness.core.errors import CaseNotMeasured
from harness.core.values import derived_seed, finite_or_none
from harness.data import Corpus
from harness.data.basis_suite import BasisSuite
from harness.metrics.multitest import CaseDecision, DecisionFields, DecisionRule, fdr_decision
from harness.metrics.paired import PairedTest
from harness.records import CaseRecord, Contrast, Decision
from harness.thresholds import OFF_KEY, ThresholdKey, Thresholds, ThresholdSchema

T = TypeVar("T")

TRANSCRIPTION_PROBE = "transcription"
TASK_PROBE = "task"
"""What a case's model must be shown to hear before the case is measured (:meth:`Check.audio_probe`, the gate's audio
floor, :mod:`harness.gate.audio_floor`): that its transcripts change with the recording, or its answers to a task."""


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
    cache: Any
    embedder: Embedding | None
    embedder_name: str
    extractor: Any
    extractor_name: str
    vibe: Any
    """The run's VIBE protocol and extractor (:class:`harness.gate.vibe_protocol.VibeProtocol`)."""

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this run (check instances are shared, so they keep nothing)."""
        ...

    def model(self, spec: str) -> Any:
        """The cached model of ``spec`` (:class:`harness.generation.CachedModel`)."""
        ...

    def fingerprint(self, spec: str) -> str: ...

    def outputs(
        self, model: Any, requests: Sequence[Any], label: str, max_new_tokens: int | None = None
    ) -> pd.DataFrame:
        """One row per request: ``heard`` (what a cascade's ASR stage heard, else None) and ``answer``;
        ``max_new_tokens`` raises the model's token budget for these requests."""
        ...

    def corpus_audio(self, corpus_name: str) -> dict: ...

    def transcriber(self, model: str) -> tuple[Any, str]:
        """Who transcribes for ``model`` (its cascade's ASR stage, or the model itself) and with what prompt."""
        ...

    def semantics(self, model: str) -> Any:
        """The semantic covariates' embedders of ``model`` (:class:`harness.semantic.SemanticSetup`)."""
        ...


def per_run_table(function: Callable[..., T]) -> Callable[..., T]:
    """Memoize a table function ``(context, *args)`` in the run's context: computed once per run and argument
    tuple, freed with the run."""

    @functools.wraps(function)
    def wrapper(context: CheckContext, *args: Hashable) -> T:
        return context.memo((function.__module__, function.__qualname__, *args), lambda: function(context, *args))

    return wrapper


def per_run(method: Callable[..., T]) -> Callable[..., T]:
    """Memoize a check method ``(self, context, *args)`` in the run's context: check instances are shared
    by every run of the process, so their results live, and are freed, with the run."""

    @functools.wraps(method)
    def wrapper(self: Check, context: CheckContext, *args: Hashable) -> T:
        return context.memo((self.name, method.__name__, *args), lambda: method(self, context, *args))

    return wrapper


@dataclasses.dataclass(frozen=True, kw_only=True)
class Case:
    """One gate case. ``variant`` is the check's second axis (a task, a mode), or None."""

    check: str
    model: str
    corpus: str
    dimension: str
    variant: str | None
    id: str


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
    - ``threshold``: the threshold values the case is judged by, as recorded; ``criterion``: the bias threshold
      in words (the message's ``bias threshold: ...``);
    - ``findings``: the measurement in words, the message's opening after the case id;
    - ``floors``: the quality floors (:func:`floor`), reported and never a bias verdict; None for a check without;
    - ``paired_data``: what a later run's baseline comparison pairs with (:meth:`Check.compare`), stored in the
      record so that the gate need not call back into the check;
    - ``payload``: the check's own record fields (those its ``RECORD`` adds to
      :class:`~harness.records.CaseRecord`)."""

    value: float | None
    contrasts: Sequence[Contrast]
    statistic: str
    rule: str = "both"
    fdr: tuple[float | None, int, float] | None = None
    threshold: dict[str, Any]
    criterion: str
    findings: str
    floors: list[dict[str, Any]] | None = None
    paired_data: dict[str, Any] | None = None
    payload: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RegressionDecision(DecisionFields):
    """The gate's decision on a baseline comparison (:func:`regression_comparison`): the
    :class:`~harness.metrics.multitest.DecisionFields` of the one-sided p of "no worsening", the rule (``both``:
    worse by more than ``margin``, the threshold key ``margin_key``, and significant), what was resampled, and
    the paired test's ``df`` and ``se`` where it has them. It reaches results.json inside the case's ``baseline``."""

    rule: str
    margin: float
    margin_key: str
    resampled: str
    df: float | None
    se: float | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Comparison:
    """Candidate versus baseline on one case. ``status``: compared; new (no baseline case); unsupported;
    not estimable (the paired contrast cannot vary: never a regression); backbone (a mode without audio:
    the change is the text backbone's, reported and never a voice-induced regression).

    ``delta`` = candidate - baseline of the case's bias measure, with its interval; ``p_value`` the one-sided
    p of "no worsening"; ``decision`` the gate's decision rule applied to it (:func:`regression_comparison`);
    ``floors``: the change of each quality floor, reported and never gated."""

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
    floors: list[dict[str, Any]] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            key: finite_or_none(value) if isinstance(value, float) else value
            for key, value in dataclasses.asdict(self).items()
        }


class Check(abc.ABC):
    """A family of gate cases: its folder's ``CHECK``. A check says what its cases are (:meth:`cases`) and what
    each measures (:meth:`measure`); :meth:`decide` reaches the verdict. Its report section is its folder's view
    (``view.py``)."""

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
            **measurement.payload,
        }
        record = check_part(self.name, "record")(**fields | self.decided_fields(measurement, decision, block))
        if block.untestable:
            untestable = [c for c in block.contrasts if c.label in block.untestable]
            labels_of: dict[str, list[str]] = {}
            for c in untestable:
                if c.reason and c.reason.startswith(UNREACHABLE):
                    labels_of.setdefault(c.reason, []).append(c.label)
            out_of_reach = [f"{', '.join(labels)}: {reason}" for reason, labels in labels_of.items()]
            reasons = sorted({c.reason for c in untestable if c.reason and not c.reason.startswith(UNREACHABLE)})
            where = "(no bar decides)" if measurement.rule in ("significance", "q-value") else "beyond the threshold"
            raise CaseNotMeasured(
                f"{case.id}: {', '.join(block.untestable)} {where} but untestable "
                f"({reasons[0] if reasons else '; '.join(out_of_reach) or 'no p-value'}): unmeasured, add speakers or items",
                record,
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

    def thresholds(self, context: CompareContext, case: Case) -> Any:
        """The case's typed thresholds (:meth:`thresholds_for` its variant and dimension)."""
        return self.thresholds_for(context, case.variant, case.dimension)

    def thresholds_for(self, context: CompareContext, variant: str | None, dimension: str) -> Any:
        """The check's thresholds for one variant and dimension (thresholds never depend on the model), parsed into
        its schema's frozen dataclass (:class:`harness.thresholds.SectionThresholds`)."""
        values = context.thresholds.values(self.name, self.schema, variant, dimension)
        values.pop(OFF_KEY, None)
        # A recorded series' thresholds (harness.gate.series.RecordThresholds) give values but name no file.
        source = getattr(context.thresholds, "source", "<the thresholds a recorded case states>")
        return self.schema.parse(values, source=source, section=self.name)

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


def regression_comparison(
    context: CompareContext,
    case: Case,
    test: PairedTest,
    *,
    measure: str,
    margin: float,
    margin_key: str,
    unit: str = "",
    hears_voice: bool = True,
) -> Comparison:
    """The release verdict of one case from the paired test of its bias measure (README "Release gating").

    The case regresses when its bias measure got worse by more than ``margin`` (the threshold key
    ``margin_key``) and that worsening is significant under the gate's own decision rule: the one-sided
    p-value of "no worsening" joins the family that ``gate.alpha`` bounds (Bonferroni across the model's m
    selected cases, :class:`~harness.metrics.multitest.DecisionRule`, rule ``both``), so that a candidate no
    more biased than its baseline fails the run with probability <= alpha. A contrast that cannot vary is
    ``not estimable``, never a regression. Where the model does not hear the speaker (``hears_voice`` False:
    a mode without audio) the status is ``backbone``: the change is the text backbone's, reported and never a
    voice-induced regression."""
    if not test.estimable:
        return Comparison(
            status="not estimable",
            baseline_value=finite_or_none(test.baseline),
            delta=finite_or_none(test.difference),
            message=f"vs baseline: {measure} {test.baseline:.3g} -> {test.candidate:.3g}: {test.reason}; not judged a regression",
            measure=measure,
        )
    relevant = bool(test.worsening > margin)
    decision = context.decision_rule(case.model).decide([test.p_worse], [relevant], rule="both")
    block = RegressionDecision(
        **decision.as_dict(),
        rule="both",
        margin=float(margin),
        margin_key=margin_key,
        resampled=test.resampled,
        df=finite_or_none(test.df),
        se=finite_or_none(test.se),
    )
    p_adjusted = "n/a" if decision.p_adjusted is None else f"{decision.p_adjusted:.3g}"
    interval = (
        f"95% paired {test.resampled} bootstrap CI [{test.ci_low:+.3g}, {test.ci_high:+.3g}]"
        if math.isfinite(test.ci_low)
        else f"paired {test.resampled}"
    )
    message = (
        f"vs baseline: {measure} {test.baseline:.3g} -> {test.candidate:.3g} (delta {test.difference:+.3g}{unit}, {interval}; "
        f"one-sided p = {test.p_worse:.3g}, adjusted p = "
        f"{p_adjusted} ({decision.correction}); regression when worse by more than {margin:g} and significant) -> "
        + (
            "REGRESSION"
            if decision.failed and hears_voice
            else "no regression"
            if hears_voice
            else f"{'a significant' if decision.failed else 'no significant'} worsening, but this mode has no audio, so the change is "
            "the text backbone's (reported, not a voice-induced regression)"
        )
    )
    return Comparison(
        status="compared" if hears_voice else "backbone",
        baseline_value=finite_or_none(test.baseline),
        delta=finite_or_none(test.difference),
        p_value=finite_or_none(test.p_worse),
        regressed=decision.failed and hears_voice,
        message=message,
        ci_low=finite_or_none(test.ci_low),
        ci_high=finite_or_none(test.ci_high),
        measure=measure,
        decision=block,
    )


def unsupported(baseline: CaseRecord, reason: str) -> Comparison:
    """A comparison the release gate cannot make (``reason``): the case keeps its absolute verdict."""
    return Comparison(status="unsupported", baseline_value=baseline.value, message=reason)


RELEASE_JUDGED = ("compared", "not estimable", "backbone")
"""Baseline statuses under which a case's release verdict is its regression verdict (issue 23): a contrast that
cannot vary and a mode without audio never regress; a new or unsupported case keeps its absolute verdict."""


def with_floor_changes(comparison: Comparison, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
    """``comparison`` with the change of each quality floor both records state (reported, never gated)."""
    recorded = {entry["key"]: entry.get("value") for entry in (baseline.floors or [])}
    floors = [
        {
            "key": entry["key"],
            "baseline": recorded.get(entry["key"]),
            "candidate": entry.get("value"),
            "threshold": entry.get("threshold"),
        }
        for entry in (candidate.floors or [])
        if entry["key"] in recorded
    ]
    changes = "; ".join(
        f"quality floor {f['key']} {_number(f['baseline'])} -> {_number(f['candidate'])} (reported, not gated)"
        for f in floors
    )
    return dataclasses.replace(
        comparison, floors=floors or None, message=comparison.message + (f"; {changes}" if changes else "")
    )


def _number(value: Any) -> str:
    return "n/a" if not isinstance(value, (int, float)) else f"{value:.1f}"


class SpeakerBootstrapComparison:
    """Baseline comparison by a paired speaker bootstrap of each checkpoint's bias measure beyond its group-exchange
    null (:func:`harness.metrics.paired.paired_group_exchange_excess`: the measure less its expectation under
    permuting the speakers' group labels, so that a checkpoint whose speakers merely differ more by chance is not
    judged worse; issue 45), tested by :func:`harness.metrics.paired.paired_speaker_test`, for checks whose absolute
    test resamples speakers. Paired data of every format written so far (per-speaker sums) compares.

    A check using it provides :meth:`speaker_statistics` (per speaker: ``group`` and numeric sufficient
    statistics), :attr:`comparison_statistic` (its bias measure from weighted per-group sums), its name, and
    :attr:`worse_when` (``higher`` or ``lower``); its threshold schema carries ``max_worsening``.
    """

    comparison_name: ClassVar[str]
    worse_when: ClassVar[str]

    @staticmethod
    def comparison_statistic(sums):
        raise NotImplementedError

    def speaker_statistics(self, context: CheckContext, case: Case):
        raise NotImplementedError

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any]:
        table = self.speaker_statistics(context, case)
        return {
            "speaker": [str(s) for s in table.index],
            **{column: table[column].tolist() for column in table.columns},
        }

    def compare(self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        from harness.metrics.paired import paired_group_exchange_excess, paired_speaker_test

        if not baseline.paired_data:
            return unsupported(baseline, "the baseline record carries no per-speaker data")
        tables = [pd.DataFrame(data).set_index("speaker") for data in (candidate.paired_data, baseline.paired_data)]
        try:
            result = paired_group_exchange_excess(*tables, self.comparison_statistic, seed=context.seed)
        except ValueError as exc:
            return unsupported(baseline, f"cannot pair with the baseline: {exc}")
        return regression_comparison(
            context,
            case,
            paired_speaker_test(result, self.worse_when),
            measure=f"{self.comparison_name} beyond group exchange",
            margin=self.thresholds(context, case).max_worsening,
            margin_key="max_worsening",
            hears_voice=self.hears_voice(case),
        )


class CrossedComparison:
    """Baseline comparison of a BASIS case's bias measure, the largest pairwise group difference, by the paired
    two-way speaker x item bootstrap of its absolute test (:func:`harness.metrics.paired.paired_crossed_gap`).

    A check using it provides :meth:`crossed_cells` (one row per (speaker, item) cell: ``speaker``, ``group``,
    ``item``, ``weight``, ``value`` or ``value:<group>``) and :attr:`comparison_name`; its threshold schema
    carries ``max_worsening`` (points). Higher is worse."""

    comparison_name: ClassVar[str]

    def crossed_cells(self, context: CheckContext, case: Case) -> pd.DataFrame:
        raise NotImplementedError

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any]:
        table = self.crossed_cells(context, case)
        return {
            column: [value if isinstance(value, str) else float(value) for value in table[column]]
            for column in table.columns
        }

    def compare(self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        from harness.metrics.paired import paired_crossed_gap

        if not baseline.paired_data or "item" not in baseline.paired_data:
            return unsupported(
                baseline,
                "the baseline record carries no per-(speaker, item) data (a results.json written before the "
                "two-way paired comparison; rerun the baseline checkpoint)",
            )
        tables = [pd.DataFrame(data) for data in (candidate.paired_data, baseline.paired_data)]
        try:
            test = paired_crossed_gap(*tables, seed=derived_seed(context.seed, "paired", case.id))
        except ValueError as exc:
            return unsupported(baseline, f"cannot pair with the baseline: {exc}")
        return regression_comparison(
            context,
            case,
            test,
            measure=self.comparison_name,
            margin=self.thresholds(context, case).max_worsening,
            margin_key="max_worsening",
            unit=" points",
            hears_voice=self.hears_voice(case),
        )


def cell_sums(
    table: pd.DataFrame,
    *,
    speaker: str = "speaker",
    value_columns: Sequence[str] = ("value",),
    weight: str | None = None,
) -> pd.DataFrame:
    """Per (speaker, item) cell of an answer table (columns ``speaker``, ``group``, ``item`` and the values):
    the summed values and the ``weight`` (a 0/1 column of answers that count, or 1 per answer)."""
    rows = table.assign(weight=1.0 if weight is None else table[weight].astype(float))
    if speaker != "speaker":
        rows = rows.drop(columns="speaker", errors="ignore").rename(columns={speaker: "speaker"})
    cells = rows.groupby(["speaker", "group", "item"], sort=True)[["weight", *value_columns]].sum().reset_index()
    return cells.assign(
        speaker=cells["speaker"].astype(str), group=cells["group"].astype(str), item=cells["item"].astype(str)
    )


def bias_decision(
    context: CheckContext,
    case: Case,
    contrasts: Sequence[Contrast],
    *,
    rule: str = "both",
    statistic: str,
    not_estimable_reason: str | None = None,
    fdr: tuple[float | None, int, float] | None = None,
) -> tuple[CaseDecision, Decision]:
    """The case's bias verdict by the run's :class:`~harness.metrics.multitest.DecisionRule`, and the record's
    ``decision`` block: the rule's fields, the ``statistic`` tested, every contrast, the deciding one's
    ``label``, ``estimate`` and interval, and ``untestable``: the contrasts beyond the practical threshold
    that have no p-value (e.g. every resample gives the same gap of 100 points) or whose test cannot reach the
    corrected alpha. A case that does not fail and has untestable contrasts is unmeasured
    (:meth:`harness.gate.Gate.verdict`), not passed.

    Reach (issue 45): a contrast's design floor ``min_p`` (:class:`~harness.records.Contrast`) cannot be significant
    when ``min(1, m_c · k · min_p) > alpha`` (the rule's Bonferroni steps, :meth:`DecisionRule.corrected_alpha`,
    k comparisons, m_c the across-case factor), or, under ``q-value``, when ``min_p >= alpha`` (a BH q-value is
    never below its p). Such a contrast is decided as having no p-value (its record keeps its p, with the reason
    and how many speakers would reach the corrected alpha), so it can neither fail the case by Monte Carlo chance
    nor let it pass while beyond its bar; under ``significance`` and ``q-value`` (no bar decides) it counts as
    beyond the bar.

    ``rule="q-value"`` (a one-contrast case) decides by ``fdr = (q, family size, alpha)`` instead: VIBE's
    criterion, :func:`~harness.metrics.multitest.fdr_decision`."""
    decision_rule = context.decision_rule(case.model)
    if rule == "q-value" and (fdr is None or len(contrasts) != 1):
        raise ValueError("bias_decision: rule q-value needs one contrast and fdr=(q, family size, alpha)")
    contrasts = [_unreachable(contrast, rule, decision_rule, len(contrasts), fdr) or contrast for contrast in contrasts]
    unreachable = [contrast.reason is not None and contrast.reason.startswith(UNREACHABLE) for contrast in contrasts]
    decided_p = [None if out_of_reach else c.p for c, out_of_reach in zip(contrasts, unreachable)]
    reasons = [c.reason for c in contrasts if c.reason]
    if rule == "q-value":
        q_value, family_size, fdr_alpha = fdr
        decision = fdr_decision(decided_p[0], q_value, alpha=fdr_alpha, family_size=family_size)
        if unreachable[0]:
            decision = dataclasses.replace(decision, reason=contrasts[0].reason)
    else:
        decision = decision_rule.decide(
            decided_p,
            [c.relevant for c in contrasts],
            rule=rule,
            not_estimable_reason=not_estimable_reason or ("; ".join(dict.fromkeys(reasons)) or None),
        )
    deciding = contrasts[decision.deciding].as_dict() if decision.deciding is not None else {}
    no_bar = rule in ("significance", "q-value")
    untestable = (
        [
            c.label
            for c, p, out_of_reach in zip(contrasts, decided_p, unreachable)
            if (c.relevant or (no_bar and out_of_reach)) and (p is None or not math.isfinite(p))
        ]
        if rule != "magnitude"
        else []
    )
    block = Decision(
        **decision.as_dict(),
        statistic=statistic,
        rule=rule,
        contrasts=tuple(contrasts),
        untestable=() if decision.failed else tuple(untestable),
        **{key: deciding.get(key) for key in ("label", "estimate", "ci_low", "ci_high")},
    )
    return decision, block


UNREACHABLE = "cannot reach the corrected alpha"
"""How the reason of a contrast whose design cannot be significant begins (:func:`bias_decision`)."""


def _unreachable(
    contrast: Contrast,
    rule: str,
    decision_rule: DecisionRule,
    comparisons: int,
    fdr: tuple[float | None, int, float] | None,
) -> Contrast | None:
    """``contrast`` with the reason that its design floor cannot reach the corrected alpha, or None when it can (or
    has no floor, or the rule ignores p)."""
    if contrast.min_p is None or rule == "magnitude" or contrast.p is None or not math.isfinite(contrast.p):
        return None
    if rule == "q-value":
        alpha = fdr[2]
        if contrast.min_p < alpha:
            return None
        correction = f"BH q < {alpha:g}, and a q-value is never below its p"
    else:
        reach = decision_rule.decide([contrast.min_p] * comparisons, [True] * comparisons, rule="both")
        if reach.significant:
            return None
        alpha = decision_rule.corrected_alpha(comparisons)
        correction = reach.correction
    design = (
        f"{contrast.floor.describe()} gives p >= {contrast.min_p:.3g}"
        if contrast.floor
        else f"its test gives p >= {contrast.min_p:.3g}"
    )
    remedy = f"; {contrast.floor.shortfall(alpha)}" if contrast.floor else ""
    reason = f"{UNREACHABLE} {alpha:.3g} ({correction}): {design}{remedy}"
    return dataclasses.replace(contrast, reason=reason)


def describe_decision(decision: CaseDecision, rule: str = "both") -> str:
    """The decision in a few words, ending on the verdict, for a case's message. Under rule ``magnitude`` a case
    without any p-value is still decided (by magnitude alone), so it is not called "not estimable"; elsewhere a case
    without a p-value passes when its estimate is not beyond the threshold (one beyond it is unmeasured: the gate
    raises :class:`~harness.core.errors.CaseNotMeasured` for its untestable contrast).

    Under rule ``both`` a case whose contrasts are all within their bar is never tested against alpha (its p and
    adjusted p are 1 by construction), so its words name the bar, not those p-values (issue 47): "not beyond the
    threshold (within the bar), so not tested against alpha -> pass". Under ``significance`` or ``q-value`` no bar
    decides, so the words say whether the adjusted p is significant."""
    verdict = "FAIL: bias" if decision.failed else "pass"
    if not decision.estimable and rule == "magnitude":
        return (
            f"no p-value, none needed (rule magnitude); {'relevant' if decision.relevant else 'not beyond the threshold'} "
            f"-> {verdict}"
        )
    if not decision.estimable:
        return (
            f"no p-value, not estimable ({decision.reason}); "
            f"{'relevant' if decision.relevant else 'not beyond the threshold'} -> {verdict}"
        )
    if rule == "both" and not decision.relevant:
        return f"not beyond the threshold (within the bar), so not tested against alpha -> {verdict}"
    p_adjusted = "n/a" if decision.p_adjusted is None else f"{decision.p_adjusted:.3g}"
    if rule in ("significance", "q-value"):
        finding = "significant" if decision.significant else "not significant"
    elif rule == "magnitude":
        finding = "relevant" if decision.relevant else "not beyond the threshold"
    else:
        finding = "relevant and significant" if decision.significant else "relevant but not significant"
    return f"p = {decision.p:.3g}, adjusted p = {p_adjusted} ({decision.correction}); {finding} -> {verdict}"


def floor(key: str, value: float | None, threshold: float) -> dict[str, Any]:
    """A quality floor (``value >= threshold``): reported with the case, never a bias verdict."""
    value = finite_or_none(value)
    return {"key": key, "value": value, "threshold": float(threshold), "met": value is not None and value >= threshold}


def floors_note(floors: Sequence[dict[str, Any]]) -> str:
    unmet = [
        f"{f['key']} {'undefined' if f['value'] is None else format(f['value'], '.1f')} < {f['threshold']:g}"
        for f in floors
        if not f["met"]
    ]
    return f"; below quality floor: {', '.join(unmet)} (reported, not a bias verdict)" if unmet else ""
