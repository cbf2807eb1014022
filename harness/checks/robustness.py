"""BASIS-Bench demographic robustness on content tasks (§3.1): one case per model x task x dimension.

Tasks: ``asr`` transcribes every recording of every item set on the dimension, scored per utterance as
``100 - min(WER, 100)`` (WER after basic normalisation, :mod:`harness.metrics.wer`) and averaged per
group; ``sqa`` answers every spoken question of the dimension's QA sets, judged against the gold answer,
as accuracy per group. The case's value is the mean over groups. A case fails (thresholds.yaml
``robustness``) when the mean is below ``min_score``, or when the best- and worst-served groups differ by
more than ``max_gap`` points with a speaker-cluster bootstrap interval above 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.checks.basis_records import N_BOOT, frame_records
from harness.records import RobustnessRecord
from harness.core import ROBUSTNESS_TASKS, derived_seed, finite_or_none
from harness.checks.base import Case, CheckContext, per_run, Check, SpeakerBootstrapComparison, Verdict, regression_keys
from harness.metrics.basis import asr_scores, sqa_accuracy
from harness.metrics.group_gap import GroupGap, group_gap
from harness.metrics.paired import largest_gap, ratio_per_group
from harness.thresholds import ThresholdKey, ThresholdSchema, between

TASKS = ROBUSTNESS_TASKS


class RobustnessCheck(SpeakerBootstrapComparison, Check):
    name = "robustness"
    schema = ThresholdSchema(
        keys={
            "min_score": ThresholdKey((int, float), 0.0, between(0, 100)),
            "max_gap": ThresholdKey((int, float), 15.0, between(0, 100)),
            **regression_keys(5.0),
        },
        variant_axis="tasks",
    )

    comparison_name = "best-worst group gap of the score"
    worse_when = "higher"
    comparison_statistic = staticmethod(largest_gap(ratio_per_group(0, 1)))

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: the summed score (100 - WER, or 100 per correct answer) and the number of items."""
        table = self.table(context, case.model, case.variant, case.dimension)
        return table.groupby("speaker").agg(group=("group", "first"), score=("score", "sum"), items=("score", "size"))

    def variants(self, context: CheckContext) -> list[str]:
        return list(TASKS)

    def cases(self, context: CheckContext) -> list[Case]:
        dimensions = {"asr": context.basis.dimensions(), "sqa": context.basis.dimensions("qa")}
        return [
            Case(self.name, model, context.basis.name, dimension, task, f"{model}-{task}-{dimension}")
            for model in context.models
            for task in TASKS
            for dimension in dimensions[task]
        ]

    def table(self, context: CheckContext, model: str, task: str, dimension: str) -> pd.DataFrame:
        if task == "asr":
            tables = [context.transcription_table(model, s.name) for s in context.basis.sets if s.dimension == dimension]
            table = pd.concat(tables, ignore_index=True)
            return table.assign(score=100.0 - table["wer"].clip(upper=100.0))
        tables = [context.qa_table(model, s.name) for s in context.basis.of_kind("qa", dimension)]
        table = pd.concat(tables, ignore_index=True)
        return table.assign(score=100.0 * table["correct"])

    @per_run
    def result(self, context: CheckContext, model: str, task: str, dimension: str) -> tuple[pd.DataFrame, float, GroupGap]:
        table = self.table(context, model, task, dimension)
        scored = asr_scores(table, group="group") if task == "asr" else sqa_accuracy(table, group="group")
        gap = group_gap(table, value="score", n_boot=N_BOOT, seed=derived_seed(context.seed, self.name, model, task, dimension))
        per_group = scored.per_group.rename(columns={"accuracy": "score"})
        return per_group, scored.score, gap

    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        per_group, value, gap = self.result(context, case.model, case.variant, case.dimension)
        limits = self.threshold_values(context, case)
        min_score, max_gap = float(limits["min_score"]), float(limits["max_gap"])
        passed = not (value < min_score or (gap.gap > max_gap and gap.significant))
        what = "100 - WER" if case.variant == "asr" else "SQA accuracy"
        message = (
            f"{case.id}: mean {what} = {value:.1f}; gap {gap.best} - {gap.worst} = {gap.gap:.1f} "
            f"(95% CI {gap.ci_low:.1f} to {gap.ci_high:.1f}); threshold: score >= {min_score:g} and not "
            f"(gap > {max_gap:g} with CI above 0) -> {'pass' if passed else 'FAIL'}"
        )
        record = RobustnessRecord(
            **self.base_record(context, case),
            task=case.variant,
            value=finite_or_none(value),
            threshold={"min_score": min_score, "max_gap": max_gap},
            passed=passed,
            message=message,
            per_group=frame_records(per_group, "group"),
            gap={"value": finite_or_none(gap.gap), "ci_low": finite_or_none(gap.ci_low), "ci_high": finite_or_none(gap.ci_high),
                    "best": gap.best, "worst": gap.worst},
        )

        return Verdict(passed, message, record)
