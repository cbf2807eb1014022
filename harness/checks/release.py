"""The release comparison of a case with its baseline (README "Release gating"): the gate's rule on a paired test
(:func:`regression_comparison`), which makes the :class:`~harness.records.Comparison` a check's
:meth:`~harness.checks.base.Check.compare` returns, and the two paired comparisons checks share
(:class:`SpeakerBootstrapComparison`, :class:`CrossedComparison`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from harness.checks.context import CheckContext, CompareContext
from harness.core.values import derived_seed, finite_or_none
from harness.metrics.detectable import WaldSensitivity
from harness.metrics.paired import PairedTest
from harness.records import CaseRecord, Comparison, FloorChange, RegressionDecision

if TYPE_CHECKING:
    from harness.checks.case import Case


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
    more biased than its baseline fails the run with probability <= alpha. A contrast that cannot vary, or whose
    change or p is not finite, is ``not estimable``, never a regression nor "no regression". Where the model does not hear the speaker (``hears_voice`` False:
    a mode without audio) the status is ``backbone``: the change is the text backbone's, reported and never a
    voice-induced regression.

    Its detectable worsening (issue 57) is the one-sided Wald shift at the corrected alpha,
    ``(t_{1-a} + t_0.8) se`` (:class:`~harness.metrics.detectable.WaldSensitivity`): where it exceeds
    :data:`DETECTABLE_MARGINS` times the margin and the case did not regress, the comparison is ``underpowered``."""
    undefined = [name for name, value in (("change", test.worsening), ("p", test.p_worse)) if not math.isfinite(value)]
    if not test.estimable or undefined:
        reason = test.reason if not test.estimable else f"its {' and '.join(undefined)} is undefined"
        return Comparison(
            status="not estimable",
            baseline_value=finite_or_none(test.baseline),
            delta=finite_or_none(test.difference),
            message=f"vs baseline: {measure} {test.baseline:.3g} -> {test.candidate:.3g}: {reason}; not judged a regression",
            measure=measure,
        )
    relevant = bool(test.worsening > margin)
    decision_rule = context.decision_rule(case.model)
    decision = decision_rule.decide([test.p_worse], [relevant], rule="both")
    detectable = WaldSensitivity(test.se, sides=1, df=test.df).detectable(
        decision_rule.corrected_alpha(test.comparisons)
    )
    powered = bool(math.isfinite(detectable) and detectable <= DETECTABLE_MARGINS * margin)
    block = RegressionDecision(
        **decision.as_dict(),
        rule="both",
        margin=float(margin),
        margin_key=margin_key,
        resampled=test.resampled,
        df=finite_or_none(test.df),
        se=finite_or_none(test.se),
        detectable=finite_or_none(detectable),
        powered=powered,
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
    if not powered and not decision.failed:
        return Comparison(
            status=UNDERPOWERED,
            baseline_value=finite_or_none(test.baseline),
            delta=finite_or_none(test.difference),
            p_value=finite_or_none(test.p_worse),
            message=message.rsplit(" -> ", 1)[0]
            + f" -> underpowered: detects a worsening of {detectable:.3g}{unit} at 80% power, beyond twice its margin "
            f"({DETECTABLE_MARGINS:g} x {margin:g}); not judged, never 'no regression'",
            ci_low=finite_or_none(test.ci_low),
            ci_high=finite_or_none(test.ci_high),
            measure=measure,
            decision=block,
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


UNDERPOWERED = "underpowered"
"""A comparison whose test cannot detect twice its margin at 80% power (:data:`DETECTABLE_MARGINS`)."""

DETECTABLE_MARGINS = 2.0
"""A release comparison is powered when it detects a worsening of this many margins at 80% power."""


def with_floor_changes(comparison: Comparison, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
    """``comparison`` with the change of each quality floor both records state (reported, never gated)."""
    recorded = {floor.key: floor.value for floor in (baseline.floors or [])}
    floors = [
        FloorChange(key=floor.key, baseline=recorded[floor.key], candidate=floor.value, threshold=floor.threshold)
        for floor in (candidate.floors or [])
        if floor.key in recorded
    ]
    changes = "; ".join(
        f"quality floor {f.key} {_number(f.baseline)} -> {_number(f.candidate)} (reported, not gated)" for f in floors
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
    """Baseline comparison of a BASIS case's bias measure, the largest pairwise group difference, beyond its
    group-exchange null (:func:`harness.metrics.paired.paired_crossed_excess`: each run's gap less its mean under
    balanced exchanges of the speakers' group labels within blocks of items, so that a run whose answers merely
    differ more by chance is not judged worse; issue 45), by a paired speaker bootstrap of the difference. The
    absolute test keeps the paper's two-way speaker x item bootstrap of the raw gap.

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
        from harness.metrics.paired import paired_crossed_excess

        if not baseline.paired_data or "item" not in baseline.paired_data:
            return unsupported(
                baseline,
                "the baseline record carries no per-(speaker, item) data (a results.json written before the "
                "two-way paired comparison; rerun the baseline checkpoint)",
            )
        tables = [pd.DataFrame(data) for data in (candidate.paired_data, baseline.paired_data)]
        try:
            test = paired_crossed_excess(*tables, seed=derived_seed(context.seed, "paired", case.id))
        except ValueError as exc:
            return unsupported(baseline, f"cannot pair with the baseline: {exc}")
        return regression_comparison(
            context,
            case,
            test,
            measure=f"{self.comparison_name} beyond group exchange",
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
