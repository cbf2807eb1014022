"""BASIS-Bench demographic robustness on content tasks (§3.1): one case per model x task x dimension.

Tasks: ``asr`` transcribes every recording of every item set on the dimension, scored per utterance as
``100 - min(WER, 100)`` (WER after basic normalisation, :mod:`harness.metrics.wer`) and averaged per
group; ``sqa`` answers every spoken question of the dimension's QA sets, judged against the gold answer,
as accuracy per group. The case's value is the mean over groups. A case fails (thresholds.yaml
``robustness``) when two groups' scores differ by more than ``max_gap`` points and the difference is
significant under the gate's decision rule (:class:`harness.metrics.multitest.DecisionRule`), each pair's
interval and p-value from a two-way speaker x item bootstrap (every item is read by several speakers:
:func:`harness.checks.basis_common.stats.crossed_group_test`). ``min_score`` is a quality floor, reported and
never a bias verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.checks.base import (
    Case,
    Check,
    CheckContext,
    CrossedComparison,
    Verdict,
    bias_decision,
    cell_sums,
    describe_decision,
    floor,
    floors_note,
    per_run,
    regression_keys,
)
from harness.checks.basis_common.stats import CrossedTest, crossed_group_test, frame_records, gap_phrase
from harness.checks.robustness.record import RobustnessRecord
from harness.checks.robustness.tables import qa_table, transcription_table
from harness.core.modes import ROBUSTNESS_TASKS
from harness.core.values import derived_seed, finite_or_none
from harness.metrics.basis import asr_scores, sqa_accuracy
from harness.thresholds import ThresholdKey, ThresholdSchema, between

TASKS = ROBUSTNESS_TASKS


class RobustnessCheck(CrossedComparison, Check):
    name = "robustness"
    gate_module = "basis"
    schema = ThresholdSchema(
        keys={
            "min_score": ThresholdKey((int, float), 0.0, between(0, 100)),
            "max_gap": ThresholdKey((int, float), 15.0, between(0, 100)),
            **regression_keys(5.0),
        },
        variant_axis="tasks",
    )

    comparison_name = "largest difference in the score between groups (points)"

    def crossed_cells(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per (speaker, item): answers (``weight``) and their summed score (100 - WER, or 100 per correct answer)."""
        table = self.table(context, case.model, case.variant, case.dimension)
        return cell_sums(table.assign(value=table["score"], item=table["set"] + "/" + table["id"].astype(str)))

    def variants(self, context: CheckContext) -> list[str]:
        return list(TASKS)

    def cases(self, context: CheckContext) -> list[Case]:
        dimensions = {"asr": context.basis.dimensions(), "sqa": context.basis.dimensions("qa")}
        return [
            Case(
                check=self.name,
                model=model,
                corpus=context.basis.name,
                dimension=dimension,
                variant=task,
                id=f"{model}-{task}-{dimension}",
            )
            for model in context.models
            for task in TASKS
            for dimension in dimensions[task]
        ]

    def table(self, context: CheckContext, model: str, task: str, dimension: str) -> pd.DataFrame:
        if task == "asr":
            tables = [
                transcription_table(context, model, s.name) for s in context.basis.sets if s.dimension == dimension
            ]
            table = pd.concat(tables, ignore_index=True)
            return table.assign(score=100.0 - table["wer"].clip(upper=100.0))
        tables = [qa_table(context, model, s.name) for s in context.basis.of_kind("qa", dimension)]
        table = pd.concat(tables, ignore_index=True)
        return table.assign(score=100.0 * table["correct"])

    @per_run
    def result(
        self, context: CheckContext, model: str, task: str, dimension: str
    ) -> tuple[pd.DataFrame, float, CrossedTest]:
        table = self.table(context, model, task, dimension)
        scored = asr_scores(table, group="group") if task == "asr" else sqa_accuracy(table, group="group")
        limits = self.threshold_values(
            context,
            Case(check=self.name, model=model, corpus=context.basis.name, dimension=dimension, variant=task, id=""),
        )
        test = crossed_group_test(
            table.assign(item=table["set"] + "/" + table["id"].astype(str)),
            value="score",
            item="item",
            max_gap=float(limits["max_gap"]),
            seed=derived_seed(context.seed, self.name, model, task, dimension),
        )
        per_group = scored.per_group.rename(columns={"accuracy": "score"})
        return per_group, scored.score, test

    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        per_group, value, test = self.result(context, case.model, case.variant, case.dimension)
        limits = self.threshold_values(context, case)
        min_score, max_gap = float(limits["min_score"]), float(limits["max_gap"])
        what = "100 - WER" if case.variant == "asr" else "SQA accuracy"
        decision, block = bias_decision(
            context, case, test.contrasts, statistic=f"difference in {what} between groups (points)"
        )
        floors = [floor("min_score", value, min_score)]
        passed = not decision.failed
        message = (
            f"{case.id}: mean {what} = {value:.1f}; {gap_phrase(test)}; bias threshold: |gap| > {max_gap:g} and significant; "
            f"{describe_decision(decision)}{floors_note(floors)}"
        )
        record = RobustnessRecord(
            **self.base_record(context, case),
            task=case.variant,
            value=finite_or_none(value),
            threshold={"min_score": min_score, "max_gap": max_gap},
            passed=passed,
            message=message,
            decision=block,
            floors=floors,
            per_group=frame_records(per_group, "group"),
            gap=test.gap_record(),
            judge=context.basis_judge_name if case.variant == "sqa" else "none",
        )

        return Verdict(passed, message, record)


CHECK = RobustnessCheck
