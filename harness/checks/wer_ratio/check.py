"""Semantic-aware WER fairness (semantic-aware mixed-effects paper §III-V): one case per model x corpus x
dimension.

The model under test transcribes every utterance; word errors are counted after Whisper's normaliser;
the expected-WER ratio between groups is estimated by every row of the paper's Tables III-IV: vanilla,
regression without speaker or semantics, with a speaker random intercept, and with speaker and semantic
covariates, one row per embedding (the model under test's own Embed-AGG and Embed-EOWL by default, PCA k = 8 of
the reference text: the transcript and the prompt the model was asked with; :mod:`harness.semantic`).

Orientation (threshold key ``numerator``). A dimension with two groups gives one ratio ``numerator / other``:
under ``auto``, ``male / female`` for a gender dimension labelled female and male (the paper's Male-Female
ratio, 3.21 / 4.47 = 0.719 in Table II), otherwise the first group in sorted order over the second; a group
named by the key is the numerator. A dimension with more groups compares each group with all the others pooled
(``group / (rest)``) and the case is judged on the ratio farthest from 1.

Rules (thresholds.yaml ``wer_ratio``), on the row of ``method`` (``semantic``: the row of the embedding named
by ``embedding``, ``agg`` by default, the paper's more effective one, §V-B) of every comparison: ``both``
(default) fails when some ratio lies outside [lower, upper] and is significantly different from 1 under the
whole gate's decision rule (:class:`harness.metrics.multitest.DecisionRule`: Bonferroni over the case's
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

from harness.checks.base import TRANSCRIPTION_PROBE, Check, Measurement, per_run
from harness.checks.case import Case
from harness.checks.context import CheckContext
from harness.checks.semantic_aware.record import RatioPayload
from harness.checks.semantic_aware.tables import first_components, with_semantic_covariates
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.checks.wer_ratio.release import DecidingRowComparison, covariate_columns, utterance_records
from harness.checks.wer_ratio.tables import transcripts
from harness.core.errors import CaseNotMeasured
from harness.core.values import finite_or_none
from harness.metrics.detectable import WaldSensitivity
from harness.metrics.multitest import CaseDecision
from harness.metrics.paired import largest_log_ratio
from harness.metrics.ratio_table import ratio_p_value
from harness.metrics.wer import wer_table
from harness.metrics.wer_ratio import (
    METHOD_NO_SPEAKER,
    METHOD_NO_SPEAKER_SEMANTIC,
    METHOD_SEMANTIC,
    METHOD_SPEAKER,
    METHOD_VANILLA,
    RatioTable,
    wer_ratio,
)
from harness.metrics.wer_release import RatioInteraction, ratio_interaction
from harness.records import Contrast, Decision
from harness.semantic import AGG, EOWL

METHODS = {
    "vanilla": METHOD_VANILLA,
    "no_speaker": METHOD_NO_SPEAKER,
    "speaker": METHOD_SPEAKER,
    "semantic": METHOD_SEMANTIC,
}
REST = "(rest)"
EMBEDDINGS = {"agg": AGG, "eowl": EOWL}
PAPER_NUMERATOR = {"gender": "male"}
"""The numerator group of the paper's ratios by dimension, under ``numerator: auto`` (Male-Female, §V)."""


def ratio_comparisons(levels: Sequence[str], dimension: str, numerator: str) -> list[tuple[str, str]]:
    """The (numerator, denominator) pairs of a case (module docstring, "Orientation")."""
    levels = sorted(levels)
    if numerator != "auto" and numerator not in levels:
        raise CaseNotMeasured(
            f"threshold key numerator: {numerator!r} is not a group of dimension {dimension!r} (groups: {levels})"
        )
    if len(levels) != 2:
        return [(level, REST) for level in levels]
    if numerator == "auto":
        paper = PAPER_NUMERATOR.get(dimension)
        numerator = paper if paper in levels else levels[0]
    return [(numerator, next(level for level in levels if level != numerator))]


class WerRatioCheck(DecidingRowComparison, Check[RatioThresholds]):
    name = "wer_ratio"
    gate_module = "wer"
    quantity = "expected-WER ratio"
    schema = RatioThresholds.schema()
    comparison_name = "largest |log WER ratio| (vanilla, one-vs-rest)"
    """The measure of the vanilla fallback (:mod:`harness.checks.wer_ratio.release`)."""
    worse_when = "higher"
    comparison_statistic = staticmethod(largest_log_ratio)

    def comparison_pairs(self, levels: Sequence[str], case: Case, settings: RatioThresholds) -> list[tuple[str, str]]:
        return ratio_comparisons(levels, case.dimension, settings.numerator)

    def interaction(
        self, tables: Sequence[pd.DataFrame], pair: tuple[str, str], settings: RatioThresholds
    ) -> RatioInteraction:
        """The joint fit of both checkpoints' utterances for one comparison (:func:`ratio_interaction`)."""
        return ratio_interaction(
            *tables,
            numerator=pair[0],
            denominator=pair[1],
            candidate_covariates=covariate_columns(tables[0]),
            baseline_covariates=covariate_columns(tables[1]),
            nagq=settings.nagq,
        )

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any]:
        """Per utterance: what the deciding row's joint fit with a baseline needs (:func:`utterance_records`), with
        the covariates of the row the case is judged on."""
        settings = self.thresholds(context, case)
        table, covariate_sets, semantics = self.utterance_table(context, case.model, case.corpus, settings.components)
        method, _ = judged_method(
            settings, list(semantics["embeddings"]), next(iter(self.ratios(context, case).values()))
        )
        columns = next((cols for name, cols in covariate_sets.items() if method.endswith(f": {name}")), ())
        return utterance_records(table, case.dimension, columns, self.utterance_values)

    def speaker_statistics(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """Per speaker: word errors and reference words."""
        settings = self.thresholds(context, case)
        table, _, _ = self.utterance_table(context, case.model, case.corpus, settings.components)
        errors = table["insertions"] + table["deletions"] + table["substitutions"]
        return (
            table.assign(errors=errors)
            .groupby("speaker")
            .agg(group=(case.dimension, "first"), errors=("errors", "sum"), words=("n_ref_words", "sum"))
        )

    def audio_probe(self, case: Case) -> str | None:
        """The transcription probe: a case reads the transcriber's transcripts (the judge-score ratio, the model's
        replies to the spoken words)."""
        return TRANSCRIPTION_PROBE

    def cases(self, context: CheckContext) -> list[Case]:
        return [
            self.case(model, corpus_name, dimension, None, f"{model}-{corpus_name}-{dimension}")
            for model in context.models
            for corpus_name, corpus in context.corpora.items()
            for dimension in corpus.dimensions
        ]

    @per_run
    def utterance_table(
        self, context: CheckContext, model: str, corpus_name: str, components: int
    ) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]], dict[str, Any]]:
        """Per utterance: speaker, word errors, dimension labels and each embedder's semantic covariate columns."""
        heard = transcripts(context, model, corpus_name)
        _, prompt = context.transcriber(model)
        corpus = context.corpora[corpus_name]
        table = wer_table(heard.rename(columns={"transcript": "reference"}))
        table = table.rename(columns={"speaker_id": "speaker"})
        for dimension in corpus.dimensions:
            table[dimension] = table["speaker"].map(corpus.speaker_labels(dimension)).to_numpy()
        texts = [f"{prompt}\n{reference}" if prompt else reference for reference in table["reference"]]
        return with_semantic_covariates(context, model, table, texts, components)

    @per_run
    def ratios(self, context: CheckContext, case: Case) -> dict[str, RatioTable]:
        settings = self.thresholds(context, case)
        table, covariate_sets, _ = self.utterance_table(context, case.model, case.corpus, settings.components)
        comparisons = ratio_comparisons(list(table[case.dimension].unique()), case.dimension, settings.numerator)
        results = {}
        for numerator, denominator in comparisons:
            grouped = table.assign(group=table[case.dimension].where(table[case.dimension] == numerator, denominator))
            results[f"{numerator} / {denominator}"] = self.ratio(
                grouped,
                settings,
                covariates=covariate_sets,
                numerator=numerator,
                denominator=denominator,
                seed=context.seed,
            )
        return results

    @staticmethod
    def ratio(table: pd.DataFrame, settings: RatioThresholds, **comparison: Any) -> RatioTable:
        """The WER ratio of ``table``'s ``numerator`` group to its ``denominator`` group, adjusted for
        ``covariates`` and bootstrapped from ``seed`` (``comparison``), as ``settings`` say."""
        return wer_ratio(table, nagq=settings.nagq, n_boot=settings.n_boot, alpha=settings.alpha, **comparison)

    def measure(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Measurement:
        settings = self.thresholds(context, case)
        table, covariate_sets, semantics = self.utterance_table(context, case.model, case.corpus, settings.components)
        results = self.ratios(context, case)
        method, note = judged_method(settings, list(semantics["embeddings"]), next(iter(results.values())))
        semantics = semantics | {"pca": first_components(table, semantics, case.dimension)}
        comparisons, contrasts = [], []
        for label, result in results.items():
            row = result.row(method)
            contrast = self._contrast(label, row, settings, getattr(result, "n_speakers", None))
            contrasts.append(contrast)
            comparisons.append(
                {
                    "comparison": label,
                    "methods": _method_rows(result, 1.0 - settings.alpha),
                    "judged_method": method,
                    "relevant": contrast.relevant,
                    "p": finite_or_none(contrast.p),
                    "reason": contrast.reason,
                }
            )
        if all(contrast.p is None or not math.isfinite(contrast.p) for contrast in contrasts):
            reasons = "; ".join(f"{c.label}: {c.reason}" for c in contrasts)
            raise CaseNotMeasured(f"{case.id}: no {self.quantity} could be estimated by {method} ({reasons})")
        return Measurement(
            value=None,
            contrasts=contrasts,
            statistic=f"{self.quantity} by {method}",
            rule=settings.decision_rule,
            threshold=settings,
            criterion=settings.describe(),
            findings=f"by {method}{note}",
            paired_data=self.paired_data(context, case),
            payload=RatioPayload(comparisons=comparisons, semantics=semantics),
        )

    def describe_findings(self, measurement: Measurement, decision: Decision) -> str:
        """The deciding comparison's ratio with its interval, and the method that judged it."""
        return (
            f"{self.quantity} {decision.label} = {_number(decision.estimate)} "
            f"[{_number(decision.ci_low)}, {_number(decision.ci_high)}] {measurement.findings}"
        )

    def decided_fields(self, measurement: Measurement, decision: CaseDecision, block: Decision) -> dict[str, Any]:
        """The case's value is the deciding comparison's ratio (``ci`` its interval, ``p`` and ``q`` the decision's
        p before and after the across-case step), and the deciding comparison is marked ``failed`` when the case fails."""
        return {
            "value": block.estimate,
            "ci": [block.ci_low, block.ci_high],
            "p": decision.p,
            "q": decision.p_adjusted,
            "comparisons": [
                entry | {"failed": decision.failed and index == decision.deciding}
                for index, entry in enumerate(measurement.payload.comparisons)
            ],
        }

    @staticmethod
    def _contrast(label: str, row: pd.Series, settings: RatioThresholds, speakers: int | None = None) -> Contrast:
        """The ratio's contrast; its p is the mixed-effects Wald p recovered from the interval, with no design floor
        (``min_p`` None)."""
        ratio = float(row["ratio"])
        relevant = bool(math.isfinite(ratio) and not settings.lower <= ratio <= settings.upper)
        bar = min(settings.upper, 1.0 / settings.lower) if settings.lower > 0 else settings.upper
        if not bool(row["converged"]):
            return Contrast(
                label, ratio, None, None, None, relevant, f"the fit did not converge ({row['message']})", bar=bar
            )
        p = ratio_p_value(row, 1.0 - settings.alpha)
        low, high = float(row["ci_low"]), float(row["ci_high"])
        df = float(row["df"]) if "df" in row else None
        return Contrast(
            label,
            ratio,
            low,
            high,
            p,
            relevant,
            None if math.isfinite(p) else "no interval",
            bar=bar,
            sensitivity=WaldSensitivity.from_interval(
                low,
                high,
                log_scale=True,
                level=1.0 - settings.alpha,
                df=df,
                units=speakers,
                unit_name="speakers in the comparison",
            ),
        )


def judged_method(settings: RatioThresholds, embedders: Sequence[str], result: RatioTable) -> tuple[str, str]:
    """The row that decides (threshold keys ``method`` and ``embedding``) and a note when it is not the one asked for:
    ``semantic`` is the row of the asked embedding, else of the first computed one, else the speaker row."""
    rows = list(result.methods.index)
    speaker = METHOD_SPEAKER if METHOD_SPEAKER in rows else METHOD_NO_SPEAKER
    if settings.method != "semantic":
        method = METHODS[settings.method]
        if method in rows:
            return method, ""
        return speaker, f" (no speaker ids: judged on {speaker}, not {method})"
    semantic = [row for row in rows if row.startswith((METHOD_SEMANTIC, METHOD_NO_SPEAKER_SEMANTIC))]
    wanted = EMBEDDINGS[settings.embedding]
    for row in semantic:
        if row.endswith(f": {wanted}"):
            return row, ""
    if semantic:
        asked = wanted in embedders
        return semantic[0], f" ({wanted} not computed: judged on {semantic[0]})" if asked else ""
    return speaker, " (no semantic covariates: judged on the speaker model without semantics)"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _method_rows(result: RatioTable, level: float) -> list[dict[str, Any]]:
    return [
        {
            "method": method,
            "ci_method": str(row["ci_method"]),
            "df": finite_or_none(row["df"]),
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
