"""Semantic-aware WER fairness (semantic-aware mixed-effects paper §III-V): one case per model x corpus x
dimension.

The model under test transcribes every utterance; word errors are counted after Whisper's normaliser;
the expected-WER ratio between groups is estimated by the paper's four methods (vanilla, regression
without speaker, with a speaker random intercept, and with speaker and semantic covariates — PCA of
embeddings of the reference text). A dimension with two groups gives one ratio (first / second in sorted
order); with more, each group is compared with all the others pooled (one-vs-rest) and the case is judged
on the ratio farthest from 1.

Rules (thresholds.yaml ``wer_ratio``), on the row of ``method`` of every comparison: ``both`` (default)
fails when some ratio lies outside [lower, upper] and is significantly different from 1 under the whole
gate's decision rule (:class:`harness.metrics.multitest.DecisionRule`: Bonferroni over the case's
comparisons and across the model's bias cases; each comparison's p-value is the one its interval implies,
:func:`harness.metrics.ratio_table.ratio_p_value`); ``ci`` when significant, whatever the size; ``bounds``
when outside the bounds (no significance test, no error control). A fit that did not converge is
reported and never used to pass or fail: when no comparison could be fitted the case is unmeasured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.checks.base import (
    Case,
    Check,
    CheckContext,
    Contrast,
    SpeakerBootstrapComparison,
    Verdict,
    bias_decision,
    describe_decision,
    per_run,
    regression_keys,
)
from harness.checks.semantic_aware.record import RatioRecord
from harness.checks.semantic_aware.tables import with_semantic_covariates
from harness.checks.wer_ratio.tables import transcripts
from harness.core.errors import CaseNotMeasured
from harness.core.values import finite_or_none
from harness.metrics.paired import largest_log_ratio
from harness.metrics.ratio_table import ratio_p_value
from harness.metrics.wer import wer_table
from harness.metrics.wer_ratio import (
    METHOD_NO_SPEAKER,
    METHOD_SEMANTIC,
    METHOD_SPEAKER,
    METHOD_VANILLA,
    RatioTable,
    wer_ratio,
)
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.thresholds import ThresholdKey, ThresholdSchema, at_least, between, in_open_unit_interval, one_of

METHODS = {
    "vanilla": METHOD_VANILLA,
    "no_speaker": METHOD_NO_SPEAKER,
    "speaker": METHOD_SPEAKER,
    "semantic": METHOD_SEMANTIC,
}
REST = "(rest)"


class WerRatioCheck(SpeakerBootstrapComparison, Check):
    name = "wer_ratio"
    gate_module = "wer"
    quantity = "expected-WER ratio"
    schema = ThresholdSchema(
        keys={
            "rule": ThresholdKey((str,), "both", one_of("ci", "bounds", "both")),
            "lower": ThresholdKey((int, float), 0.9, at_least(0)),
            "upper": ThresholdKey((int, float), 1.11, at_least(1)),
            "alpha": ThresholdKey((int, float), 0.05, in_open_unit_interval),
            "method": ThresholdKey((str,), "semantic", one_of(*METHODS)),
            "nagq": ThresholdKey((int,), 10, between(1, 50)),
            "n_boot": ThresholdKey((int,), 1000, at_least(50)),
            "components": ThresholdKey((int,), 8, between(1, 64)),
            **regression_keys(0.05),
        }
    )
    comparison_name = "largest |log WER ratio| (vanilla, one-vs-rest)"
    worse_when = "higher"
    comparison_statistic = staticmethod(largest_log_ratio)

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: word errors and reference words."""
        settings = self.threshold_values(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings["components"])
        errors = table["insertions"] + table["deletions"] + table["substitutions"]
        return (
            table.assign(errors=errors)
            .groupby("speaker")
            .agg(group=(case.dimension, "first"), errors=("errors", "sum"), words=("n_ref_words", "sum"))
        )

    def cases(self, context: CheckContext) -> list[Case]:
        return [
            Case(
                check=self.name,
                model=model,
                corpus=corpus_name,
                dimension=dimension,
                variant=None,
                id=f"{model}-{corpus_name}-{dimension}",
            )
            for model in context.models
            for corpus_name, corpus in context.corpora.items()
            for dimension in corpus.dimensions
        ]

    @per_run
    def utterance_table(
        self, context: CheckContext, model: str, corpus_name: str, components: int
    ) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]:
        """Per utterance: speaker, word errors, dimension labels and semantic covariate columns."""
        heard = transcripts(context, model, corpus_name)
        corpus = context.corpora[corpus_name]
        table = wer_table(heard.rename(columns={"transcript": "reference"}))
        table = table.rename(columns={"speaker_id": "speaker"})
        for dimension in corpus.dimensions:
            table[dimension] = table["speaker"].map(corpus.speaker_labels(dimension)).to_numpy()
        texts = [f"{TRANSCRIPTION_PROMPT}\n{reference}" for reference in table["reference"]]
        return with_semantic_covariates(context, table, texts, components)

    @per_run
    def ratios(self, context: CheckContext, case: Case) -> dict[str, RatioTable]:
        settings = self.threshold_values(context, case)
        table, columns, _ = self.utterance_table(context, case.model, case.corpus, settings["components"])
        levels = sorted(table[case.dimension].unique())
        comparisons = [(levels[0], levels[1])] if len(levels) == 2 else [(level, REST) for level in levels]
        results = {}
        for numerator, denominator in comparisons:
            grouped = table.assign(group=table[case.dimension].where(table[case.dimension] == numerator, denominator))
            results[f"{numerator} / {denominator}"] = self.ratio(
                grouped, list(columns), numerator, denominator, settings, context.seed
            )
        return results

    @staticmethod
    def ratio(
        table: pd.DataFrame,
        covariates: list[str],
        numerator: str,
        denominator: str,
        settings: dict[str, Any],
        seed: int,
    ) -> RatioTable:
        return wer_ratio(
            table,
            covariates=covariates,
            numerator=numerator,
            denominator=denominator,
            nagq=settings["nagq"],
            n_boot=settings["n_boot"],
            alpha=settings["alpha"],
            seed=seed,
        )

    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        settings = self.threshold_values(context, case)
        _, columns, semantics = self.utterance_table(context, case.model, case.corpus, settings["components"])
        method = METHODS[settings["method"]]
        note = ""
        if method == METHOD_SEMANTIC and not columns:
            method, note = (
                METHOD_SPEAKER,
                " (no semantic embedder available: judged on the speaker model without semantics)",
            )
        comparisons, contrasts = [], []
        for label, result in self.ratios(context, case).items():
            row = result.row(method)
            contrast = self._contrast(label, row, settings)
            contrasts.append(contrast)
            comparisons.append(
                {
                    "comparison": label,
                    "methods": _method_rows(result, 1.0 - settings["alpha"]),
                    "judged_method": method,
                    "relevant": contrast.relevant,
                    "p": finite_or_none(contrast.p),
                    "reason": contrast.reason,
                }
            )
        if all(contrast.p is None or not math.isfinite(contrast.p) for contrast in contrasts):
            reasons = "; ".join(f"{c.label}: {c.reason}" for c in contrasts)
            raise CaseNotMeasured(f"{case.id}: no {self.quantity} could be estimated by {method} ({reasons})")
        decision, block = bias_decision(
            context, case, contrasts, rule=RULES[settings["rule"]], statistic=f"{self.quantity} by {method}"
        )
        for index, entry in enumerate(comparisons):
            entry["failed"] = decision.failed and index == decision.deciding
        passed = not decision.failed
        message = (
            f"{case.id}: {self.quantity} {block.label} = {_number(block.estimate)} "
            f"[{_number(block.ci_low)}, {_number(block.ci_high)}] by {method}{note}; bias threshold: outside "
            f"[{settings['lower']:g}, {settings['upper']:g}] and significant; {describe_decision(decision)}"
        )
        record = RatioRecord(
            **self.base_record(context, case),
            value=block.estimate,
            ci=[block.ci_low, block.ci_high],
            p=decision.p,
            q=decision.p_adjusted,
            threshold=dict(settings),
            passed=passed,
            message=message,
            decision=block,
            comparisons=comparisons,
            semantics=semantics,
        )

        return Verdict(passed, message, record)

    @staticmethod
    def _contrast(label: str, row: pd.Series, settings: dict[str, Any]) -> Contrast:
        ratio = float(row["ratio"])
        relevant = bool(math.isfinite(ratio) and not settings["lower"] <= ratio <= settings["upper"])
        if not bool(row["converged"]):
            return Contrast(label, ratio, None, None, None, relevant, f"the fit did not converge ({row['message']})")
        p = ratio_p_value(row, 1.0 - settings["alpha"])
        return Contrast(
            label,
            ratio,
            float(row["ci_low"]),
            float(row["ci_high"]),
            p,
            relevant,
            None if math.isfinite(p) else "no interval",
        )


RULES = {"both": "both", "ci": "significance", "bounds": "magnitude"}
"""thresholds.yaml's WER rule names -> :meth:`DecisionRule.decide`'s."""


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _method_rows(result: RatioTable, level: float) -> list[dict[str, Any]]:
    return [
        {
            "method": method,
            "ratio": finite_or_none(row["ratio"]),
            "ci_low": finite_or_none(row["ci_low"]),
            "p": finite_or_none(ratio_p_value(row, level)),
            "ci_high": finite_or_none(row["ci_high"]),
            "significant": None if row["significant"] is None else bool(row["significant"]),
            "converged": bool(row["converged"]),
            "wer_numerator": finite_or_none(row["value_numerator"]),
            "wer_denominator": finite_or_none(row["value_denominator"]),
        }
        for method, row in result.methods.iterrows()
    ]


CHECK = WerRatioCheck
