"""BASIS-Bench demographic robustness on content tasks (§3.1): one case per model x task x dimension.

Tasks: ``asr`` transcribes every recording of the dimension's ``asr`` item sets (Fair-Speech, SD-QA, the
Spoken StereoSet+ ASR age split), scored per utterance as ``100 - min(WER, 100)`` (WER after Whisper's English
normaliser on both sides, as §3.1 has it, :mod:`harness.metrics.wer`); ``sqa`` answers every spoken question of the
dimension's ``qa`` sets (SD-QA, LibriSQA), judged against the gold answer, 100 per correct answer. As §3.1 aggregates, a score
is taken per demographic group and data set, then averaged (:func:`harness.metrics.basis.per_dataset_scores`):
the case's value is ``mean_s mean_g score(s, g)``, a group's score ``mean_s score(s, g)`` over the sets that
hold it. Every record also carries the model's content-based score (Table 7), the mean of its ASR and SQA
scores over every (data set, dimension), a quality floor (``min_content_score``).

A case fails (thresholds.yaml ``robustness``) when two groups' scores differ by more than ``max_gap`` points
and the difference is significant under the gate's decision rule
(:class:`harness.metrics.multitest.DecisionRule`), each pair's interval and p-value from a two-way speaker x
item bootstrap (every item is read by several speakers:
:func:`harness.checks.basis_common.stats.crossed_group_test`), each row weighted by ``1 / n(s, g)`` so that
every data set counts once in a group's mean. ``min_score`` and ``min_content_score`` are quality floors,
reported and never a bias verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.checks.base import TRANSCRIPTION_PROBE, Check, Measurement, per_run
from harness.checks.basis_common.stats import CrossedTest, crossed_group_test, gap_phrase
from harness.checks.basis_common.thresholds import RobustnessThresholds
from harness.checks.case import Case
from harness.checks.context import CheckContext
from harness.checks.release import CrossedComparison, cell_sums
from harness.checks.robustness.record import (
    CellScore,
    ContentScore,
    DatasetScore,
    GroupScore,
    RobustnessPayload,
    SetScore,
)
from harness.checks.robustness.tables import qa_table, transcription_table
from harness.checks.verdict import floor
from harness.core.errors import CaseNotMeasured, ModelError
from harness.core.modes import ROBUSTNESS_TASKS
from harness.core.values import derived_seed, finite_or_none
from harness.metrics.basis import PerDatasetResult, content_based_score, per_dataset_scores

TASKS = ROBUSTNESS_TASKS
SET_KIND = {"asr": "asr", "sqa": "qa"}
"""The item-set kind each task reads (:mod:`harness.data.basis_suite`)."""


class RobustnessCheck(CrossedComparison, Check[RobustnessThresholds]):
    name = "robustness"
    gate_module = "basis"
    schema = RobustnessThresholds.schema(variant_axis="tasks")

    comparison_name = "largest difference in the score between groups (points)"

    def crossed_cells(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per (speaker, item): the rows' summed data-set weights (``weight``) and weighted scores (``value``)."""
        table = self.table(context, case.model, case.variant, case.dimension)
        return cell_sums(table.assign(value=table["score"] * table["weight"]), weight="weight")

    def audio_probe(self, case: Case) -> str | None:
        """The transcription probe: both content tasks read the spoken words (a transcript, a spoken question)."""
        return TRANSCRIPTION_PROBE

    def variants(self, context: CheckContext) -> list[str]:
        return list(TASKS)

    def cases(self, context: CheckContext) -> list[Case]:
        dimensions = {task: context.basis.dimensions(kind) for task, kind in SET_KIND.items()}
        return [
            self.case(model, context.basis.name, dimension, task, f"{model}-{task}-{dimension}")
            for model in context.models
            for task in TASKS
            for dimension in dimensions[task]
        ]

    def table(self, context: CheckContext, model: str, task: str, dimension: str) -> pd.DataFrame:
        """One row per answer: ``set``, ``speaker``, ``group``, ``item`` (set/id), ``score`` (0-100) and
        ``weight = 1 / n(set, group)``."""
        sets = context.basis.of_kind(SET_KIND[task], dimension)
        if task == "asr":
            table = pd.concat([transcription_table(context, model, s.name) for s in sets], ignore_index=True)
            table = table.assign(score=100.0 - table["wer"].clip(upper=100.0))
        else:
            table = pd.concat([qa_table(context, model, s.name) for s in sets], ignore_index=True)
            table = table.assign(score=100.0 * table["correct"])
        size = table.groupby(["set", "group"])["score"].transform("size")
        return table.assign(item=table["set"] + "/" + table["id"].astype(str), weight=1.0 / size)

    @per_run
    def result(
        self, context: CheckContext, model: str, task: str, dimension: str
    ) -> tuple[PerDatasetResult, CrossedTest]:
        table = self.table(context, model, task, dimension)
        limits = self.thresholds_for(context, task, dimension)
        test = crossed_group_test(
            table.assign(weighted=table["score"] * table["weight"]),
            value="weighted",
            denominator="weight",
            item="item",
            max_gap=limits.max_gap,
            seed=derived_seed(context.seed, self.name, model, task, dimension),
        )
        return per_dataset_scores(table, score="score", dataset="set", group="group"), test

    @per_run
    def content(self, context: CheckContext, model: str) -> ContentScore:
        """The model's content-based score (§3.1, Table 7) from every (task, data set) score it has, with the
        tasks that could not be measured named."""
        scores: dict[str, list[DatasetScore]] = {task: [] for task in TASKS}
        missing = []
        for task in TASKS:
            for dimension in context.basis.dimensions(SET_KIND[task]):
                try:
                    result, _ = self.result(context, model, task, dimension)
                except (ModelError, CaseNotMeasured) as exc:
                    missing.append(f"{task} {dimension}: {exc}")
                    continue
                scores[task] += [
                    DatasetScore(set=str(name), dimension=dimension, score=finite_or_none(row["score"]), task=task)
                    for name, row in result.per_dataset.iterrows()
                ]
        value = content_based_score(*([entry.score for entry in scores[task]] for task in TASKS))
        means = {task: finite_or_none(_mean([entry.score for entry in scores[task]])) for task in TASKS}
        return ContentScore(
            value=finite_or_none(value),
            asr=means["asr"],
            sqa=means["sqa"],
            per_dataset=[entry for task in TASKS for entry in scores[task]],
            not_measured=missing,
        )

    def measure(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Measurement:
        scored, test = self.result(context, case.model, case.variant, case.dimension)
        content = self.content(context, case.model)
        limits = self.thresholds(context, case)
        min_score, max_gap, min_content = limits.min_score, limits.max_gap, limits.min_content_score
        what = "100 - WER" if case.variant == "asr" else "SQA accuracy"
        return Measurement(
            value=scored.score,
            contrasts=test.contrasts,
            statistic=f"difference in {what} between groups (points)",
            threshold=limits,
            criterion=f"|gap| > {max_gap:g} and significant",
            findings=(
                f"{what} = {scored.score:.1f} (mean over {len(scored.per_dataset)} data set(s) of the mean over groups); "
                f"content-based score {_number(content.value)}; {gap_phrase(test)}"
            ),
            floors=[
                floor("min_score", scored.score, min_score),
                floor("min_content_score", content.value, min_content),
            ],
            paired_data=self.paired_data(context, case),
            payload=RobustnessPayload(
                task=case.variant,
                per_group=[
                    GroupScore(group=str(group), n_datasets=int(count), n=int(n), score=finite_or_none(score))
                    for group, (count, n, score) in scored.per_group[["n_datasets", "n", "score"]].iterrows()
                ],
                per_dataset=[
                    SetScore(set=str(name), n_groups=int(count), n=int(n), score=finite_or_none(score))
                    for name, (count, n, score) in scored.per_dataset[["n_groups", "n", "score"]].iterrows()
                ],
                per_cell=[
                    CellScore(cell=f"{name}/{group}", n=int(n), score=finite_or_none(score))
                    for (name, group), (n, score) in scored.per_cell[["n", "score"]].iterrows()
                ],
                content_score=content,
                gap=test.gap_record(),
                judge=context.basis_judge_name if case.variant == "sqa" else "none",
            ),
        )


def _mean(values: list[float | None]) -> float:
    finite = [v for v in values if v is not None]
    return float(np.mean(finite)) if finite else float("nan")


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


CHECK = RobustnessCheck
