"""BASIS-Bench demographic robustness on content tasks (§3.1): one case per model x task x dimension.

Tasks: ``asr`` transcribes every recording of every item set on the dimension, scored per utterance as
``100 - min(WER, 100)`` (WER after basic normalisation, :mod:`harness.metrics.wer`) and averaged per
group; ``sqa`` answers every spoken question of the dimension's QA sets, judged against the gold answer,
as accuracy per group. The case's value is the mean over groups. A case fails (thresholds.yaml
``robustness``) when the mean is below ``min_score``, or when the best- and worst-served groups differ by
more than ``max_gap`` points with a speaker-cluster bootstrap interval above 0.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.basis.pipeline import qa_table, transcription_table
from harness.basis.tables import N_BOOT, frame_records, table_seven
from harness.core import derived_seed, finite_or_none
from harness.checks.base import Case, Check, SpeakerBootstrapComparison, Verdict, regression_keys
from harness.metrics.basis import asr_scores, sqa_accuracy
from harness.metrics.group_gap import GroupGap, group_gap
from harness.metrics.paired import largest_gap, ratio_per_group
from harness.thresholds import ThresholdKey, ThresholdSchema, between

if TYPE_CHECKING:
    from harness.gate import Gate

TASKS = ("asr", "sqa")


class RobustnessCheck(SpeakerBootstrapComparison, Check):
    name = "robustness"
    title = "BASIS-Bench: demographic robustness (ASR, spoken QA)"
    report_template = "robustness.html.j2"
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

    def speaker_statistics(self, gate: Gate, case: Case) -> pd.DataFrame:
        """Per speaker: the summed score (100 - WER, or 100 per correct answer) and the number of items."""
        table = self.table(gate, case.model, case.variant, case.dimension)
        return table.groupby("speaker").agg(group=("group", "first"), score=("score", "sum"), items=("score", "size"))

    def variants(self, gate: Gate) -> list[str]:
        return list(TASKS)

    def cases(self, gate: Gate) -> list[Case]:
        dimensions = {"asr": gate.basis.dimensions(), "sqa": gate.basis.dimensions("qa")}
        return [
            Case(self.name, model, gate.basis.name, dimension, task, f"{model}-{task}-{dimension}")
            for model in gate.config.models
            for task in TASKS
            for dimension in dimensions[task]
        ]

    def table(self, gate: Gate, model: str, task: str, dimension: str) -> pd.DataFrame:
        if task == "asr":
            tables = [transcription_table(gate, model, s.name) for s in gate.basis.sets if s.dimension == dimension]
            table = pd.concat(tables, ignore_index=True)
            return table.assign(score=100.0 - table["wer"].clip(upper=100.0))
        tables = [qa_table(gate, model, s.name) for s in gate.basis.of_kind("qa", dimension)]
        table = pd.concat(tables, ignore_index=True)
        return table.assign(score=100.0 * table["correct"])

    @functools.cache
    def result(self, gate: Gate, model: str, task: str, dimension: str) -> tuple[pd.DataFrame, float, GroupGap]:
        table = self.table(gate, model, task, dimension)
        scored = asr_scores(table, group="group") if task == "asr" else sqa_accuracy(table, group="group")
        gap = group_gap(table, value="score", n_boot=N_BOOT, seed=derived_seed(gate.config.seed, self.name, model, task, dimension))
        per_group = scored.per_group.rename(columns={"accuracy": "score"})
        return per_group, scored.score, gap

    def verdict(self, gate: Gate, case: Case, family: Sequence[Case]) -> Verdict:
        per_group, value, gap = self.result(gate, case.model, case.variant, case.dimension)
        limits = self.threshold_values(gate, case)
        min_score, max_gap = float(limits["min_score"]), float(limits["max_gap"])
        passed = not (value < min_score or (gap.gap > max_gap and gap.significant))
        what = "100 - WER" if case.variant == "asr" else "SQA accuracy"
        message = (
            f"{case.id}: mean {what} = {value:.1f}; gap {gap.best} - {gap.worst} = {gap.gap:.1f} "
            f"(95% CI {gap.ci_low:.1f} to {gap.ci_high:.1f}); threshold: score >= {min_score:g} and not "
            f"(gap > {max_gap:g} with CI above 0) -> {'pass' if passed else 'FAIL'}"
        )
        record = self.base_record(gate, case) | {
            "task": case.variant,
            "value": finite_or_none(value),
            "threshold": {"min_score": min_score, "max_gap": max_gap},
            "passed": passed,
            "message": message,
            "per_group": frame_records(per_group, "group"),
            "gap": {"value": finite_or_none(gap.gap), "ci_low": finite_or_none(gap.ci_low), "ci_high": finite_or_none(gap.ci_high),
                    "best": gap.best, "worst": gap.worst},
        }
        return Verdict(passed, message, record)

    def report_context(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {"blocks": table_seven(records, row_keys=TASKS, cell="score")}
