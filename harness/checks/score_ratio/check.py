"""Judge-score fairness (semantic-aware mixed-effects paper §IV-V, AIR-Bench-Chat style): one case per
model x corpus x dimension, measured when a judge is given (``--judge SPEC``), unmeasured without one.

The model under test answers each utterance (its audio, with the corpus's ``question`` where it has one, as
AIR-Bench-Chat does, else :data:`harness.tasks.chat.CHAT_PROMPT`); the judge (any backend, text only, cached)
scores each answer from 1 to 10 on usefulness, relevance, accuracy and comprehensiveness (§V-A;
:data:`harness.tasks.chat.JUDGE_PROMPT`); the ratio of group mean scores is estimated by the rows of the paper's
Table V (:func:`harness.metrics.score_ratio.judge_score_ratio`): vanilla, OLS, and, when speakers are known, a
linear mixed model with a speaker random intercept; then one semantic row per embedding of the reference text
(the transcript and the prompt). A corpus without speaker ids (every utterance its own speaker, as AIR-Bench-Chat
and Fair-Speech) has no speaker row: each utterance is its own unit, as the record's ``semantics.units`` says.
Replies the judge does not score are counted and left out. Rules and orientation as for the WER ratio; a lower
score is worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.checks.base import Measurement, per_run
from harness.checks.case import Case
from harness.checks.context import CheckContext
from harness.checks.score_ratio.tables import has_speaker_ids, judge_scores, speaker_units
from harness.checks.semantic_aware.tables import with_semantic_covariates
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.checks.wer_ratio.check import WerRatioCheck
from harness.checks.wer_ratio.release import DECIDING_ROW, covariate_columns
from harness.core.errors import CaseNotMeasured
from harness.metrics.paired import largest_log_ratio
from harness.metrics.score_release import score_ratio_interaction
from harness.metrics.wer_ratio import RatioTable, judge_score_ratio
from harness.metrics.wer_release import RatioInteraction
from harness.thresholds import OFF_KEY, ThresholdsError


class ScoreRatioCheck(WerRatioCheck):
    name = "score_ratio"
    gate_module = "wer"
    quantity = "judge-score ratio"
    comparison_name = "largest |log score ratio| (vanilla, one-vs-rest)"
    utterance_values = ("score",)
    deciding_measure = f"|log judge-score ratio| {DECIDING_ROW}"

    @per_run
    def utterance_table(
        self, context: CheckContext, model: str, corpus_name: str, components: int
    ) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]], dict[str, Any]]:
        table = judge_scores(context, model, corpus_name).rename(columns={"speaker_id": "speaker"})
        corpus = context.corpora[corpus_name]
        for dimension in corpus.dimensions:
            table[dimension] = table["speaker"].map(corpus.speaker_labels(dimension)).to_numpy()
        unscored = int(table["score"].isna().sum())
        table = table.dropna(subset=["score"]).reset_index(drop=True)
        texts = [f"{prompt}\n{message}" for prompt, message in zip(table["prompt"], table["transcript"])]
        table, covariate_sets, semantics = with_semantic_covariates(context, model, table, texts, components)
        units = speaker_units(table)
        return table, covariate_sets, semantics | {"unscored_replies": unscored, "units": units}

    @staticmethod
    def ratio(table: pd.DataFrame, settings: RatioThresholds, **comparison: Any) -> RatioTable:
        """The judge-score ratio of ``comparison`` (as :meth:`WerRatioCheck.ratio`), bootstrapped over speakers
        where the table has speaker ids."""
        speaker = "speaker" if has_speaker_ids(table) else None
        return judge_score_ratio(table, speaker=speaker, n_boot=settings.n_boot, alpha=settings.alpha, **comparison)

    def measure(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Measurement:
        """Unmeasured when the judge gave every answer the same score: a constant score has ratio 1 whatever the
        answers, so it cannot show a difference (a judge too weak for the answers); unmeasured without a judge
        (the message names ``--judge`` and the thresholds key that turns the check off); otherwise as the WER ratio."""
        if not context.judge:
            raise ThresholdsError(
                "judge-score fairness needs a judge model: pass --judge SPEC, or turn the check off with "
                f"'{self.name}: {{defaults: {{{OFF_KEY}: false}}}}' in thresholds.yaml"
            )
        settings = self.thresholds(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings.components)
        scores = sorted(table["score"].unique())
        if len(scores) == 1:
            raise CaseNotMeasured(
                f"{case.id}: the judge ({context.judge}) gave every one of the {len(table)} answers the same score, "
                f"{scores[0]:g}: a constant score cannot show a difference between groups; use a stronger --judge"
            )
        return super().measure(context, case, family)

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: summed judge scores and scored replies."""
        settings = self.thresholds(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings.components)
        return table.groupby("speaker").agg(
            group=(case.dimension, "first"), score=("score", "sum"), replies=("score", "size")
        )

    comparison_statistic = staticmethod(largest_log_ratio)

    def interaction(
        self, tables: Sequence[pd.DataFrame], pair: tuple[str, str], settings: RatioThresholds
    ) -> RatioInteraction:
        """The joint linear fit of both checkpoints' scored replies for one comparison
        (:func:`score_ratio_interaction`), with the speaker intercept where the corpus has speaker ids."""
        return score_ratio_interaction(
            *tables,
            numerator=pair[0],
            denominator=pair[1],
            candidate_covariates=covariate_columns(tables[0]),
            baseline_covariates=covariate_columns(tables[1]),
            speakers=has_speaker_ids(tables[0]),
        )


CHECK = ScoreRatioCheck
