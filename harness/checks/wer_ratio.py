"""Semantic-aware WER fairness (semantic-aware mixed-effects paper §III-V): one case per model x corpus x
dimension.

The model under test transcribes every utterance; word errors are counted after Whisper's normaliser;
the expected-WER ratio between groups is estimated by the paper's four methods (vanilla, regression
without speaker, with a speaker random intercept, and with speaker and semantic covariates — PCA of
embeddings of the reference text). A dimension with two groups gives one ratio (first / second in sorted
order); with more, each group is compared with all the others pooled (one-vs-rest) and the case is judged
on the ratio farthest from 1.

Rules (thresholds.yaml ``wer_ratio``), on the row of ``method``: ``ci`` fails when the 95% CI excludes 1,
``bounds`` when the ratio leaves [lower, upper], ``both`` (default) when the two hold at once. A fit that
did not converge is reported and fails the case: it is never used to pass one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.records import RatioRecord
from harness.core import finite_or_none
from harness.checks.base import Case, CheckContext, per_run, Check, SpeakerBootstrapComparison, Verdict, regression_keys
from harness.metrics.paired import largest_log_ratio
from harness.metrics.wer import wer_table
from harness.metrics.wer_ratio import METHOD_NO_SPEAKER, METHOD_SEMANTIC, METHOD_SPEAKER, METHOD_VANILLA, RatioTable, wer_ratio
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.thresholds import ThresholdKey, ThresholdSchema, at_least, between, in_open_unit_interval, one_of

METHODS = {"vanilla": METHOD_VANILLA, "no_speaker": METHOD_NO_SPEAKER, "speaker": METHOD_SPEAKER, "semantic": METHOD_SEMANTIC}
REST = "(rest)"


class WerRatioCheck(SpeakerBootstrapComparison, Check):
    name = "wer_ratio"
    quantity = "expected-WER ratio"
    schema = ThresholdSchema(keys={
        "rule": ThresholdKey((str,), "both", one_of("ci", "bounds", "both")),
        "lower": ThresholdKey((int, float), 0.9, at_least(0)),
        "upper": ThresholdKey((int, float), 1.11, at_least(1)),
        "alpha": ThresholdKey((int, float), 0.05, in_open_unit_interval),
        "method": ThresholdKey((str,), "semantic", one_of(*METHODS)),
        "nagq": ThresholdKey((int,), 10, between(1, 50)),
        "n_boot": ThresholdKey((int,), 1000, at_least(50)),
        "components": ThresholdKey((int,), 8, between(1, 64)),
        **regression_keys(0.05),
    })
    comparison_name = "largest |log WER ratio| (vanilla, one-vs-rest)"
    worse_when = "higher"
    comparison_statistic = staticmethod(largest_log_ratio)

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: word errors and reference words."""
        settings = self.threshold_values(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings["components"])
        errors = table["insertions"] + table["deletions"] + table["substitutions"]
        return table.assign(errors=errors).groupby("speaker").agg(
            group=(case.dimension, "first"), errors=("errors", "sum"), words=("n_ref_words", "sum"))

    def cases(self, context: CheckContext) -> list[Case]:
        return [
            Case(self.name, model, corpus_name, dimension, None, f"{model}-{corpus_name}-{dimension}")
            for model in context.models
            for corpus_name, corpus in context.corpora.items()
            for dimension in corpus.dimensions
        ]

    @per_run
    def utterance_table(self, context: CheckContext, model: str, corpus_name: str, components: int) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]:
        """Per utterance: speaker, word errors, dimension labels and semantic covariate columns."""
        transcripts = context.transcripts(model, corpus_name)
        corpus = context.corpora[corpus_name]
        table = wer_table(transcripts.rename(columns={"transcript": "reference"}))
        table = table.rename(columns={"speaker_id": "speaker"})
        for dimension in corpus.dimensions:
            table[dimension] = table["speaker"].map(corpus.speaker_labels(dimension)).to_numpy()
        texts = [f"{TRANSCRIPTION_PROMPT}\n{reference}" for reference in table["reference"]]
        return context.with_semantic_covariates(table, texts, components)

    @per_run
    def ratios(self, context: CheckContext, case: Case) -> dict[str, RatioTable]:
        settings = self.threshold_values(context, case)
        table, columns, _ = self.utterance_table(context, case.model, case.corpus, settings["components"])
        levels = sorted(table[case.dimension].unique())
        comparisons = [(levels[0], levels[1])] if len(levels) == 2 else [(level, REST) for level in levels]
        results = {}
        for numerator, denominator in comparisons:
            grouped = table.assign(group=table[case.dimension].where(table[case.dimension] == numerator, denominator))
            results[f"{numerator} / {denominator}"] = self.ratio(grouped, list(columns), numerator, denominator, settings, context.seed)
        return results

    @staticmethod
    def ratio(table: pd.DataFrame, covariates: list[str], numerator: str, denominator: str, settings: dict[str, Any], seed: int) -> RatioTable:
        return wer_ratio(table, covariates=covariates, numerator=numerator, denominator=denominator,
                         nagq=settings["nagq"], n_boot=settings["n_boot"], alpha=settings["alpha"], seed=seed)

    def verdict(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Verdict:
        settings = self.threshold_values(context, case)
        _, columns, semantics = self.utterance_table(context, case.model, case.corpus, settings["components"])
        method = METHODS[settings["method"]]
        note = ""
        if method == METHOD_SEMANTIC and not columns:
            method, note = METHOD_SPEAKER, " (no semantic embedder available: judged on the speaker model without semantics)"
        comparisons, failures, worst = [], [], None
        for label, result in self.ratios(context, case).items():
            row = result.row(method)
            failed, reason = self._judge(row, settings)
            comparisons.append({"comparison": label, "methods": _method_rows(result), "judged_method": method,
                                "failed": failed, "reason": reason})
            if failed:
                failures.append(f"{label}: {reason}")
            distance = abs(math.log(row["ratio"])) if row["ratio"] and row["ratio"] > 0 else math.inf
            if worst is None or distance > worst[0]:
                worst = (distance, label, row)
        _, worst_label, worst_row = worst
        passed = not failures
        message = (
            f"{case.id}: {self.quantity} {worst_label} = {worst_row['ratio']:.3f} "
            f"[{worst_row['ci_low']:.3f}, {worst_row['ci_high']:.3f}] by {method}{note}; "
            + ("pass" if passed else "FAIL: " + "; ".join(failures))
        )
        record = RatioRecord(
            **self.base_record(context, case),
            value=finite_or_none(worst_row["ratio"]),
            ci=[finite_or_none(worst_row["ci_low"]), finite_or_none(worst_row["ci_high"])],
            p=None,
            q=None,
            threshold=dict(settings),
            passed=passed,
            message=message,
            comparisons=comparisons,
            semantics=semantics,
        )

        return Verdict(passed, message, record)

    @staticmethod
    def _judge(row: pd.Series, settings: dict[str, Any]) -> tuple[bool, str]:
        if not bool(row["converged"]):
            return True, f"the fit did not converge ({row['message']}); a non-converged fit cannot pass the gate"
        excludes_one = bool(row["significant"])
        outside = not settings["lower"] <= row["ratio"] <= settings["upper"]
        interval = f"ratio {row['ratio']:.3f}, CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        ci_fact = f"the CI {'excludes' if excludes_one else 'includes'} 1"
        bounds_fact = f"the ratio lies {'outside' if outside else 'inside'} [{settings['lower']:g}, {settings['upper']:g}]"
        if settings["rule"] == "ci":
            return excludes_one, f"{interval}: {ci_fact}"
        if settings["rule"] == "bounds":
            return outside, f"{interval}: {bounds_fact}"
        return excludes_one and outside, f"{interval}: {ci_fact} and {bounds_fact}"

def _method_rows(result: RatioTable) -> list[dict[str, Any]]:
    return [
        {"method": method, "ratio": finite_or_none(row["ratio"]), "ci_low": finite_or_none(row["ci_low"]),
         "ci_high": finite_or_none(row["ci_high"]), "significant": None if row["significant"] is None else bool(row["significant"]),
         "converged": bool(row["converged"]), "wer_numerator": finite_or_none(row["value_numerator"]),
         "wer_denominator": finite_or_none(row["value_denominator"])}
        for method, row in result.methods.iterrows()
    ]
