"""Judge-score fairness (semantic-aware mixed-effects paper §IV-V, AIR-Bench-Chat style): one case per
model x corpus x dimension, run when a judge is given (``--judge SPEC``).

The model under test replies to each utterance as a user's message; the judge (any backend, text only,
cached) scores each reply from 1 to 10; the ratio of group mean scores is estimated by the vanilla
ratio, OLS, and a linear mixed model with a speaker random intercept without and with the semantic
covariates of the message (:func:`harness.metrics.wer_ratio.judge_score_ratio`). Replies the judge does
not score are counted and left out. Rules as for the WER ratio; a lower score is worse.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.checks.base import Case, CheckContext, per_run
from harness.checks.score_ratio.tables import judge_scores
from harness.checks.semantic_aware.tables import with_semantic_covariates
from harness.checks.wer_ratio.check import WerRatioCheck
from harness.metrics.paired import largest_log_ratio
from harness.metrics.wer_ratio import RatioTable, judge_score_ratio
from harness.tasks.chat import CHAT_PROMPT


class ScoreRatioCheck(WerRatioCheck):
    name = "score_ratio"
    gate_module = "wer"
    quantity = "judge-score ratio"
    comparison_name = "largest |log score ratio| (vanilla, one-vs-rest)"

    def cases(self, context: CheckContext) -> list[Case]:
        return super().cases(context) if context.judge else []

    def no_cases_reason(self, context: CheckContext) -> str:
        return (
            "judge-score fairness needs a judge model: pass --judge SPEC"
            if not context.judge
            else super().no_cases_reason(context)
        )

    @per_run
    def utterance_table(
        self, context: CheckContext, model: str, corpus_name: str, components: int
    ) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]:
        table = judge_scores(context, model, corpus_name).rename(columns={"speaker_id": "speaker"})
        corpus = context.corpora[corpus_name]
        for dimension in corpus.dimensions:
            table[dimension] = table["speaker"].map(corpus.speaker_labels(dimension)).to_numpy()
        unscored = int(table["score"].isna().sum())
        table = table.dropna(subset=["score"]).reset_index(drop=True)
        texts = [f"{CHAT_PROMPT}\n{message}" for message in table["transcript"]]
        table, columns, semantics = with_semantic_covariates(context, table, texts, components)
        return table, columns, semantics | {"unscored_replies": unscored}

    @staticmethod
    def ratio(
        table: pd.DataFrame,
        covariates: list[str],
        numerator: str,
        denominator: str,
        settings: dict[str, Any],
        seed: int,
    ) -> RatioTable:
        return judge_score_ratio(
            table,
            covariates=covariates,
            numerator=numerator,
            denominator=denominator,
            n_boot=settings["n_boot"],
            alpha=settings["alpha"],
            seed=seed,
        )

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: summed judge scores and scored replies."""
        settings = self.threshold_values(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings["components"])
        return table.groupby("speaker").agg(
            group=(case.dimension, "first"), score=("score", "sum"), replies=("score", "size")
        )

    comparison_statistic = staticmethod(largest_log_ratio)


CHECK = ScoreRatioCheck
