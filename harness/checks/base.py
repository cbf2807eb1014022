"""A check family: its cases, its thresholds, and how a case's verdict is reached.

A new check is one module with a :class:`Check` subclass and one entry in ``harness.checks.CHECKS``;
the gate module ``fairness_tests/test_<...>.py`` then has one test function taking ``<name>_case``.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

import pandas as pd

from harness.core import finite_or_none
from harness.data.basis_suite import BasisSuite, ItemSet
from harness.data import Corpus
from harness.metrics.multitest import CaseDecision, DecisionRule
from harness.records import CaseRecord
from harness.thresholds import ThresholdKey, ThresholdSchema, Thresholds

T = TypeVar("T")


class Embedding(Protocol):
    fingerprint: str

    def embed(self, texts: Sequence[str]) -> Any: ...


class CheckContext(Protocol):
    """What a check reads of a run: its settings, thresholds and data, and a memo for its own results.

    :class:`harness.pipeline.Pipeline` implements it; tables are as its methods document.
    """

    models: tuple[str, ...]
    tasks: tuple[str, ...]
    judge: str | None
    seed: int
    permutations: int
    corpora: Mapping[str, Corpus]
    basis: BasisSuite
    thresholds: Thresholds
    embedder: Embedding | None
    embedder_name: str
    extractor_name: str

    def decision_rule(self, model: str) -> DecisionRule:
        """The whole gate's decision rule for one model's cases (its alpha, correction and m)."""
        ...

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key`` for this run (check instances are shared, so they keep nothing)."""
        ...

    def fingerprint(self, spec: str) -> str: ...

    def answers(self, model: str, corpus_name: str, task_name: str) -> pd.DataFrame: ...

    def extraction(self, model: str, corpus_name: str, task_name: str) -> tuple[pd.DataFrame, pd.DataFrame]: ...

    def group_table(self, model: str, corpus_name: str, task_name: str, dimension: str) -> pd.DataFrame: ...

    def minimum_detectable_ntvd(self, corpus_name: str, dimension: str) -> dict[str, float | None]: ...

    def transcripts(self, model: str, corpus_name: str) -> pd.DataFrame: ...

    def judge_scores(self, model: str, corpus_name: str) -> pd.DataFrame: ...

    def with_semantic_covariates(self, table: pd.DataFrame, texts: Sequence[str], components: int) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]: ...

    def choice_table(self, model: str, set_name: str, mode: str) -> pd.DataFrame: ...

    def personalization_table(self, model: str, item_set: ItemSet, mode: str) -> pd.DataFrame: ...

    def classification_table(self, model: str, set_name: str) -> pd.DataFrame: ...

    def transcription_table(self, model: str, set_name: str) -> pd.DataFrame: ...

    def qa_table(self, model: str, set_name: str) -> pd.DataFrame: ...


def per_run(method: Callable[..., T]) -> Callable[..., T]:
    """Memoize a check method ``(self, context, *args)`` in the run's context: check instances are shared
    by every run of the process, so their results live, and are freed, with the run."""

    @functools.wraps(method)
    def wrapper(self: Check, context: CheckContext, *args: Hashable) -> T:
        return context.memo((self.name, method.__name__, *args), lambda: method(self, context, *args))

    return wrapper


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Candidate versus baseline on one case. ``status``: compared, new (no baseline case), unsupported, not
    estimable (the paired interval has no width: every replicate gives the same difference)."""

    status: str
    baseline_value: float | None
    delta: float | None
    p_value: float | None
    regressed: bool
    message: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Check(abc.ABC):
    """A family of gate cases. Its report section is its view in :mod:`harness.report.views`."""

    name: ClassVar[str]
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
    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        """The verdict of ``case``; ``family`` is every selected case of this check in the session."""

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any] | None:
        """Per-speaker data stored in the record, so that a later run can compare against this one."""
        return None

    def compare(self, context: CheckContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        """Is ``candidate`` significantly worse than ``baseline`` (both records of this check)?"""
        return Comparison("unsupported", None, None, None, False, f"{self.name}: no baseline comparison for this check")

    def threshold_values(self, context: CheckContext, case: Case) -> dict[str, Any]:
        return context.thresholds.values(self.name, self.schema, case.variant, case.dimension)

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


class SpeakerBootstrapComparison:
    """Baseline comparison by a paired speaker bootstrap (:mod:`harness.metrics.paired`).

    A check using it provides :meth:`speaker_statistics` (per speaker: ``group`` and numeric sufficient
    statistics), :attr:`comparison_statistic` (the statistic of weighted per-group sums), its name, and
    :attr:`worse_when` (``higher`` or ``lower``); its threshold schema carries ``max_worsening`` and
    ``regression_alpha``. A regression is a worsening beyond ``max_worsening`` whose (1 - regression_alpha)
    CI lies entirely on the worse side of 0.
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
        return {"speaker": [str(s) for s in table.index], **{column: table[column].tolist() for column in table.columns}}

    def compare(self, context: CheckContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        from harness.metrics.paired import paired_speaker_bootstrap

        if not baseline.paired_data:
            return Comparison("unsupported", baseline.value, None, None, False, "the baseline record carries no per-speaker data")
        tables = [pd.DataFrame(data).set_index("speaker") for data in (candidate.paired_data, baseline.paired_data)]
        settings = self.threshold_values(context, case)
        try:
            result = paired_speaker_bootstrap(*tables, self.comparison_statistic, alpha=settings["regression_alpha"],
                                              seed=context.seed)
        except ValueError as exc:
            return Comparison("unsupported", baseline.value, None, None, False, f"cannot pair with the baseline: {exc}")
        if result.ci_low == result.ci_high:
            return Comparison("not estimable", result.baseline, result.difference, None, False,
                              f"vs baseline: {self.comparison_name} {result.baseline:.3g} -> {result.candidate:.3g}: the paired "
                              f"speaker bootstrap gives every replicate the same difference ({result.difference:+.3g}), so its "
                              "uncertainty is not estimable from speakers alone; not judged a regression")
        worsening = result.difference if self.worse_when == "higher" else -result.difference
        ci_on_worse_side = result.ci_low > 0 if self.worse_when == "higher" else result.ci_high < 0
        regressed = bool(worsening > settings["max_worsening"] and ci_on_worse_side)
        message = (
            f"vs baseline: {self.comparison_name} {result.baseline:.3g} -> {result.candidate:.3g} "
            f"(delta {result.difference:+.3g}, {100 * (1 - settings['regression_alpha']):g}% paired speaker-bootstrap CI "
            f"[{result.ci_low:+.3g}, {result.ci_high:+.3g}]; {self.worse_when} is worse) -> "
            f"{'REGRESSION' if regressed else 'no regression'}"
        )
        return Comparison("compared", result.baseline, result.difference, None, regressed, message)


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

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "estimate": finite_or_none(self.estimate), "ci_low": finite_or_none(self.ci_low),
                "ci_high": finite_or_none(self.ci_high), "p": finite_or_none(self.p), "relevant": bool(self.relevant),
                "reason": self.reason}


def bias_decision(context: CheckContext, case: Case, contrasts: Sequence[Contrast], *, rule: str = "both",
                  statistic: str, not_estimable_reason: str | None = None) -> tuple[CaseDecision, dict[str, Any]]:
    """The case's bias verdict by the run's :class:`~harness.metrics.multitest.DecisionRule`, and the record's
    ``decision`` block: the rule's fields, the ``statistic`` tested, every contrast, the deciding one's
    ``label``, ``estimate`` and interval, and ``untestable``: the contrasts beyond the practical threshold
    that have no p-value (e.g. every resample gives the same gap of 100 points). A case that does not fail
    and has untestable contrasts is unmeasured (:meth:`harness.gate.Gate.verdict`), not passed."""
    reasons = [c.reason for c in contrasts if c.reason]
    decision = context.decision_rule(case.model).decide(
        [c.p for c in contrasts], [c.relevant for c in contrasts], rule=rule,
        not_estimable_reason=not_estimable_reason or ("; ".join(dict.fromkeys(reasons)) or None))
    deciding = contrasts[decision.deciding].as_dict() if decision.deciding is not None else {}
    untestable = [c.label for c in contrasts if c.relevant and (c.p is None or not math.isfinite(c.p))] if rule != "magnitude" else []
    block = decision.as_dict() | {"statistic": statistic, "rule": rule, "contrasts": [c.as_dict() for c in contrasts],
                                  "untestable": [] if decision.failed else untestable,
                                  **{key: deciding.get(key) for key in ("label", "estimate", "ci_low", "ci_high")}}
    return decision, block


def describe_decision(decision: CaseDecision) -> str:
    """The decision in a few words, for a case's message."""
    if not decision.estimable:
        return f"not estimable ({decision.reason}): no bias verdict"
    p_adjusted = "n/a" if decision.p_adjusted is None else f"{decision.p_adjusted:.3g}"
    return (f"p = {decision.p:.3g}, adjusted p = {p_adjusted} ({decision.correction}); "
            f"{'relevant' if decision.relevant else 'not beyond the threshold'} -> {'FAIL: bias' if decision.failed else 'pass'}")


def floor(key: str, value: float | None, threshold: float) -> dict[str, Any]:
    """A quality floor (``value >= threshold``): reported with the case, never a bias verdict."""
    value = finite_or_none(value)
    return {"key": key, "value": value, "threshold": float(threshold), "met": value is not None and value >= threshold}


def floors_note(floors: Sequence[dict[str, Any]]) -> str:
    unmet = [f"{f['key']} {'undefined' if f['value'] is None else format(f['value'], '.1f')} < {f['threshold']:g}"
             for f in floors if not f["met"]]
    return f"; below quality floor: {', '.join(unmet)} (reported, not a bias verdict)" if unmet else ""


def regression_keys(max_worsening: float) -> dict[str, ThresholdKey]:
    """The threshold keys of a :class:`SpeakerBootstrapComparison`."""
    from harness.thresholds import at_least, in_open_unit_interval

    return {
        "max_worsening": ThresholdKey((int, float), max_worsening, at_least(0)),
        "regression_alpha": ThresholdKey((int, float), 0.05, in_open_unit_interval),
    }
