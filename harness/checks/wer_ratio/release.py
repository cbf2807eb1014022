"""The ratio cases' release comparison on the row that decides them (issue 58; semantic-aware mixed-effects paper
§IV; :mod:`harness.metrics.wer_release`, :mod:`harness.metrics.score_release`).

A WER-ratio or judge-score-ratio case is decided on the speaker-and-semantics row of the model's own embedding, so
its comparison with a baseline is a joint fit of both checkpoints' utterances with a checkpoint x group interaction,
the speaker intercept and each checkpoint's own semantic covariates (the ones of its judged row). The record keeps
what that fit needs in its ``paired_data``: one row per utterance (``utterance``, ``speaker``, ``group``, its values
(the four error counts, or the score) and the judged row's covariate columns, prefixed :data:`COVARIATE_PREFIX`).

Where either record lacks the per-utterance rows (a results.json written before this comparison), or the case is
judged on a row without a speaker intercept (``method: no_speaker``), the comparison falls back to the vanilla ratio
beyond group exchange (:class:`~harness.checks.release.SpeakerBootstrapComparison`, from per-speaker sums) and names
the deviation in its measure and message, which the terminal, results.json and the report all show. Under
``method: vanilla`` the vanilla ratio is the deciding row, and no deviation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from harness.checks.case import Case
from harness.checks.context import CompareContext
from harness.checks.release import SpeakerBootstrapComparison, regression_comparison, unsupported
from harness.metrics.paired import PairedTest
from harness.metrics.wer_release import COUNTS, RatioInteraction
from harness.records import CaseRecord, Comparison

COVARIATE_PREFIX = "covariate:"
UTTERANCE_COLUMNS = ("utterance", "speaker", "group", *COUNTS)
DECIDING_ROW = (
    "on the deciding row (speaker intercept and each checkpoint's own semantic covariates; checkpoint x group "
    "interaction of one joint fit)"
)
DECIDING_MEASURE = f"|log expected-WER ratio| {DECIDING_ROW}"
RESAMPLED = "speakers (one joint mixed-effects fit, speaker-cluster sandwich se)"


def utterance_records(
    table: pd.DataFrame, dimension: str, covariates: Sequence[str], values: Sequence[str] = COUNTS
) -> dict[str, list[Any]]:
    """The ``paired_data`` of a ratio case (module docstring): per utterance, its id, speaker, group label, its
    ``values`` (the error counts, or the score) and the judged row's ``covariates``."""
    return {
        "utterance": [str(u) for u in table["utterance_id"]],
        "speaker": [str(s) for s in table["speaker"]],
        "group": [str(g) for g in table[dimension]],
        **{column: [v if isinstance(v, int) else float(v) for v in table[column].tolist()] for column in values},
        **{COVARIATE_PREFIX + column: [round(float(v), 6) for v in table[column]] for column in covariates},
    }


def has_utterance_rows(data: Mapping[str, Any] | None, values: Sequence[str] = COUNTS) -> bool:
    return bool(data) and all(column in data for column in ("utterance", "speaker", "group", *values))


def speaker_sums(data: Mapping[str, Any]) -> pd.DataFrame:
    """Per speaker (index): ``group``, summed word ``errors`` and reference ``words`` (a WER case) or summed
    ``score`` and scored ``replies`` (a judge-score case), from per-utterance rows or from the per-speaker sums of a
    record written before them."""
    table = pd.DataFrame(data)
    if "utterance" not in table.columns:
        return table.set_index("speaker")
    if "score" in table.columns:
        return table.groupby("speaker").agg(group=("group", "first"), score=("score", "sum"), replies=("score", "size"))
    errors = table["insertions"] + table["deletions"] + table["substitutions"]
    return (
        table.assign(errors=errors)
        .groupby("speaker")
        .agg(group=("group", "first"), errors=("errors", "sum"), words=("n_ref_words", "sum"))
    )


class DecidingRowComparison(SpeakerBootstrapComparison):
    """:class:`~harness.checks.release.SpeakerBootstrapComparison` on the deciding row (module docstring). A check
    using it provides :meth:`comparison_pairs` (the (numerator, denominator) pairs of a case from its group labels),
    :meth:`interaction` (the joint fit of one pair), :attr:`utterance_values` (the value columns of its utterance
    rows), :attr:`deciding_measure`, and thresholds with ``method``, ``nagq`` and ``max_worsening``."""

    utterance_values: ClassVar[tuple[str, ...]] = COUNTS
    deciding_measure: ClassVar[str] = DECIDING_MEASURE

    def comparison_pairs(self, levels: Sequence[str], case: Case, settings: Any) -> list[tuple[str, str]]:
        raise NotImplementedError

    def interaction(self, tables: Sequence[pd.DataFrame], pair: tuple[str, str], settings: Any) -> RatioInteraction:
        raise NotImplementedError

    def compare(self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        settings = self.thresholds(context, case)
        for name, record in (("baseline", baseline), ("candidate", candidate)):
            if not record.paired_data:
                return unsupported(baseline, f"the {name} record carries no per-speaker data")
        if settings.method == "vanilla":
            return self.vanilla_comparison(context, case, candidate, baseline)
        missing = [
            name for name, record in (("baseline", baseline), ("candidate", candidate))
            if not has_utterance_rows(record.paired_data, self.utterance_values)
        ]  # fmt: skip
        if missing or settings.method == "no_speaker":
            why = (
                f"the {' and '.join(missing)} record carries no per-utterance rows (a results.json written before the "
                "deciding-row comparison; rerun it)"
                if missing
                else "the case is judged on the row without a speaker intercept (method: no_speaker)"
            )
            return self.vanilla_fallback(context, case, candidate, baseline, why)
        tables = [pd.DataFrame(record.paired_data) for record in (candidate, baseline)]
        try:
            tables = _aligned(*tables)
            pairs = self.comparison_pairs(sorted(tables[0]["group"].unique()), case, settings)
            contrasts = [self.interaction(tables, pair, settings) for pair in pairs]
        except (ValueError, np.linalg.LinAlgError) as exc:
            return unsupported(baseline, f"cannot fit the deciding row jointly with the baseline: {exc}")
        measure = self.deciding_measure
        measure = measure if len(contrasts) == 1 else f"largest {measure}, one group vs the rest"
        return regression_comparison(
            context,
            case,
            interaction_test(contrasts),
            measure=measure,
            margin=settings.max_worsening,
            margin_key="max_worsening",
            hears_voice=self.hears_voice(case),
        )

    def vanilla_comparison(
        self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord
    ) -> Comparison:
        """The vanilla ratio beyond group exchange (:class:`~harness.checks.release.SpeakerBootstrapComparison`) from
        per-speaker sums, whichever form each record keeps."""
        sums = {name: speaker_sums(record.paired_data) for name, record in (("c", candidate), ("b", baseline))}
        records = [
            dataclasses.replace(record, paired_data={"speaker": list(map(str, table.index)), **table.to_dict("list")})
            for record, table in ((candidate, sums["c"]), (baseline, sums["b"]))
        ]
        return super().compare(context, case, *records)

    def vanilla_fallback(
        self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord, why: str
    ) -> Comparison:
        """The vanilla comparison, its deviation from the deciding row named in its measure and message."""
        deviation = f"DEVIATION: not the deciding row ({self.thresholds(context, case).method}), because {why}"
        comparison = self.vanilla_comparison(context, case, candidate, baseline)
        measure = f"{comparison.measure} [{deviation}]" if comparison.measure else None
        return dataclasses.replace(comparison, measure=measure, message=f"{comparison.message} [{deviation}]")


def interaction_test(contrasts: Sequence[RatioInteraction]) -> PairedTest:
    """The case's :class:`~harness.metrics.paired.PairedTest` from its comparisons' interactions: the one with the
    smallest one-sided p, Bonferroni-corrected over the comparisons; not estimable where a joint fit did not
    converge or its standard error is not finite."""
    failed = [c for c in contrasts if not c.converged or not math.isfinite(c.se) or not math.isfinite(c.p)]
    if failed:
        first = failed[0]
        return PairedTest(
            candidate=abs(first.log_ratio_candidate),
            baseline=abs(first.log_ratio_baseline),
            difference=first.worsening,
            worsening=first.worsening,
            estimable=False,
            reason=f"the joint fit of {first.label} did not give a usable estimate ({first.message})",
            resampled=RESAMPLED,
        )
    deciding = min(contrasts, key=lambda c: c.p)
    return PairedTest(
        candidate=abs(deciding.log_ratio_candidate),
        baseline=abs(deciding.log_ratio_baseline),
        difference=deciding.worsening,
        worsening=deciding.worsening,
        se=deciding.se,
        df=deciding.df,
        p_worse=min(1.0, deciding.p * len(contrasts)),
        estimable=True,
        resampled=RESAMPLED,
        comparisons=len(contrasts),
    )


def covariate_columns(table: pd.DataFrame) -> list[str]:
    return [column for column in table.columns if column.startswith(COVARIATE_PREFIX)]


def _aligned(candidate: pd.DataFrame, baseline: pd.DataFrame) -> list[pd.DataFrame]:
    """Both tables in utterance order; a ``ValueError`` where they hold other utterances."""
    tables = [t.sort_values("utterance", kind="stable").reset_index(drop=True) for t in (candidate, baseline)]
    if not tables[0]["utterance"].equals(tables[1]["utterance"]):
        raise ValueError("the two records hold different utterances")
    return tables
