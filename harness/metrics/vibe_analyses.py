"""VIBE's robustness and interpretation analyses around nTVD (§III-D, §III-E, §III-B refusals, §IV).

* :func:`tau_sensitivity` (§III-D): nTVD of every model x task for each frequency threshold tau, and the
  within-task Spearman correlation of the model ranking at each tau with the ranking at tau = 10,
  averaged over tasks.
* :func:`cross_corpus_agreement` (§III-E): Spearman rho (and its p-value) between the per-model accent
  bias (mean nTVD over tasks) measured on two corpora.
* :func:`refusal_table` / :func:`refusal_rate_ntvd` (§III-B): refusal versus any other status as a binary
  attribute, so the refusal-rate disparity is an nTVD (for two groups, 100 * |r_1 - r_2|).
* :func:`with_non_response`: every answer that states no value of an attribute (refused, unextractable, empty, or
  an extracted answer without that field) counts as a value of its own, ``refusal``, ``(unextractable)``,
  ``(empty)`` or ``(not stated)``: a deviation from VIBE §II-D, which drops them, so that a model answering one
  group's voices unusably is tested on that, not on the answers it left.
* :func:`collapse_diagnostic` (§IV): a low nTVD can come from a model collapsing to a near-constant
  answer. Per attribute and group, the normalised entropy ``H_g / log|V_a|`` of P_g over the retained
  values V_a (0: one value only; 1: uniform), to be shown beside a low nTVD.

Inputs are long tables as for :func:`harness.metrics.ntvd.ntvd` (``speaker, group, attribute, value``),
with ``model`` and ``task`` columns where the analysis spans models and tasks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from harness.core.answers import EMPTY, EXTRACTED, REFUSAL, UNEXTRACTABLE
from harness.core.values import require_columns
from harness.metrics.ntvd import NTVDResult, count_tensor, mean_over_measured, ntvd, ntvd_from_group_counts

VIBE_TAUS = (1, 2, 5, 10, 20, 40)
REFERENCE_TAU = 10
REFUSAL_ATTRIBUTE = "refusal"
ANSWERED = "answered"


# ------------------------------------------------------------------------------------- tau sensitivity


@dataclasses.dataclass(frozen=True)
class TauSensitivity:
    """``scores``: model, task, tau, ntvd (NaN where no value reaches tau). ``rank_correlation``: tau,
    task, spearman (models ranked by nTVD at tau versus at the reference tau). ``mean_rank_correlation``:
    the per-tau mean over tasks (VIBE Fig. 4c)."""

    scores: pd.DataFrame
    rank_correlation: pd.DataFrame
    mean_rank_correlation: pd.Series
    reference_tau: int


def ntvd_by_tau(table: pd.DataFrame, taus: Sequence[int]) -> np.ndarray:
    """Mean nTVD of one long table for each tau, from a single count tensor (NaN where nothing is kept).

    A value is kept at tau when its count over the whole table is >= tau, exactly as in :func:`ntvd`.
    """
    tensor = count_tensor(table, tau=1)
    n_groups = len(tensor.groups)
    if n_groups < 2:
        raise ValueError(f"nTVD needs at least 2 groups, got {list(tensor.groups)}")
    group_counts = np.zeros((n_groups, tensor.counts.shape[1]))
    np.add.at(group_counts, tensor.speaker_group, tensor.counts)
    totals = tensor.counts.sum(axis=0)
    scores = np.full(len(taus), np.nan)
    for index, tau in enumerate(taus):
        kept = totals >= tau
        if not kept.any():
            continue
        _, attribute_codes = np.unique(tensor.attribute_of_column[kept], return_inverse=True)
        n_attributes = int(attribute_codes.max()) + 1
        scores[index] = mean_over_measured(ntvd_from_group_counts(group_counts[:, kept], attribute_codes, n_attributes))
    return scores


def tau_sensitivity(
    table: pd.DataFrame, taus: Sequence[int] = VIBE_TAUS, reference_tau: int = REFERENCE_TAU
) -> TauSensitivity:
    """nTVD per model x task for each tau and the within-task rank agreement with ``reference_tau`` (§III-D).

    ``table`` has ``model, task, speaker, group, attribute, value``. For each task the models are ranked
    by nTVD at tau and at ``reference_tau`` and the Spearman correlation is taken over the models with a
    score at both (NaN when fewer than 2 remain or a ranking is constant); the mean skips NaN.
    """
    require_columns(table, ["model", "task", "speaker", "group", "attribute", "value"], "tau-sensitivity table")
    taus = sorted(set(int(tau) for tau in (*taus, reference_tau)))
    if taus[0] < 1:
        raise ValueError(f"tau must be >= 1, got {taus[0]}")
    rows = []
    for (model, task), cell in table.groupby(["model", "task"], sort=True):
        rows.extend((model, task, tau, score) for tau, score in zip(taus, ntvd_by_tau(cell, taus)))
    scores = pd.DataFrame(rows, columns=["model", "task", "tau", "ntvd"])
    return rank_agreement(scores, reference_tau)


def rank_agreement(scores: pd.DataFrame, reference_tau: int = REFERENCE_TAU) -> TauSensitivity:
    """Within-task Spearman correlation of model rankings at each tau against ``reference_tau`` (§III-D).

    ``scores`` has one row per ``model, task, tau`` with its ``ntvd``; the mean over tasks skips NaN.
    """
    require_columns(scores, ["model", "task", "tau", "ntvd"], "tau-sensitivity scores")
    taus = sorted(scores["tau"].unique())
    if reference_tau not in taus:
        raise ValueError(f"the scores have no reference tau {reference_tau}; taus: {taus}")
    wide = scores.pivot_table(index=["task", "model"], columns="tau", values="ntvd", dropna=False)
    correlations = []
    for task, models in wide.groupby(level="task", sort=True):
        reference = models[reference_tau].to_numpy()
        for tau in taus:
            correlations.append((tau, task, _spearman(models[tau].to_numpy(), reference)))
    rank_correlation = pd.DataFrame(correlations, columns=["tau", "task", "spearman"])
    mean = rank_correlation.groupby("tau")["spearman"].mean().rename("mean_spearman")
    return TauSensitivity(scores, rank_correlation, mean, reference_tau)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    both = ~(np.isnan(a) | np.isnan(b))
    if both.sum() < 2 or np.ptp(a[both]) == 0 or np.ptp(b[both]) == 0:
        return float("nan")
    return float(stats.spearmanr(a[both], b[both]).statistic)


# ------------------------------------------------------------------------------------------ cross-corpus


@dataclasses.dataclass(frozen=True)
class CrossCorpusAgreement:
    """Spearman rho and two-sided p of per-model bias on two corpora; ``per_model`` has one row per model
    scored on both, with the two mean nTVDs and their ranks (1 = most biased)."""

    rho: float
    p_value: float
    n_models: int
    per_model: pd.DataFrame
    corpora: tuple[str, str]


def cross_corpus_agreement(scores: pd.DataFrame, corpus_a: str, corpus_b: str) -> CrossCorpusAgreement:
    """Whether the per-model ranking of accent bias reproduces on another corpus (VIBE §III-E: rho = 0.76).

    ``scores`` has ``corpus, model, ntvd`` and optionally ``task``: a model's bias on a corpus is its mean
    nTVD over the rows (tasks) it has there. Models scored on one corpus only are left out; at least 3
    models are needed.
    """
    require_columns(scores, ["corpus", "model", "ntvd"], "cross-corpus scores")
    for corpus in (corpus_a, corpus_b):
        if corpus not in set(scores["corpus"]):
            raise ValueError(
                f"cross-corpus scores have no corpus {corpus!r}; corpora: {sorted(scores['corpus'].unique())}"
            )
    per_model = (
        scores[scores["corpus"].isin([corpus_a, corpus_b])]
        .pivot_table(index="model", columns="corpus", values="ntvd", aggfunc="mean")[[corpus_a, corpus_b]]
        .dropna()
    )
    if len(per_model) < 3:
        raise ValueError(
            f"cross-corpus agreement needs >= 3 models scored on both {corpus_a!r} and {corpus_b!r}; got {len(per_model)}"
        )
    result = stats.spearmanr(per_model[corpus_a], per_model[corpus_b])
    ranks = per_model.rank(ascending=False).add_prefix("rank_")
    per_model = per_model.join(ranks).reset_index()
    per_model.columns.name = None
    return CrossCorpusAgreement(
        float(result.statistic), float(result.pvalue), len(per_model), per_model, (corpus_a, corpus_b)
    )


# --------------------------------------------------------------------------------------------- refusals


def refusal_table(statuses: pd.DataFrame) -> pd.DataFrame:
    """A long table with the single attribute ``refusal``: value ``refusal`` for a refused answer and
    ``answered`` for any other status, one row per answer. ``statuses`` has ``speaker, group, status``."""
    require_columns(statuses, ["speaker", "group", "status"], "status table")
    refused = statuses["status"].to_numpy() == REFUSAL
    return pd.DataFrame(
        {
            "speaker": statuses["speaker"].to_numpy(),
            "group": statuses["group"].to_numpy(),
            "attribute": REFUSAL_ATTRIBUTE,
            "value": np.where(refused, REFUSAL, ANSWERED),
        }
    )


def refusal_rate_ntvd(statuses: pd.DataFrame) -> NTVDResult:
    """nTVD of refusal versus not (VIBE §III-B: at most 6.6 over all models and tasks). No tau filter:
    the attribute has two values by construction. For a significance test, pass :func:`refusal_table`'s
    output to :func:`harness.metrics.ntvd.permutation_test` with ``tau=1``."""
    return ntvd(refusal_table(statuses), tau=1)


# ---------------------------------------------------------------------------------------------- non-response

NON_RESPONSE_VALUES = {REFUSAL: "refusal", UNEXTRACTABLE: "(unextractable)", EMPTY: "(empty)"}
"""The value an answer of each non-extracted status takes for every attribute (:func:`with_non_response`): a refusal
``refusal``, the value the VIBE authors' extraction (and :mod:`harness.extraction.llm`) gives it; the others in
brackets, apart from any extracted value, which :func:`harness.extraction.fields.normalise_value` strips of
punctuation."""
NOT_STATED = "(not stated)"
"""The value of an attribute an extracted answer does not state."""


def with_non_response(values: pd.DataFrame, statuses: pd.DataFrame, attributes: Mapping[str, int]) -> pd.DataFrame:
    """``values`` (``utterance_id, speaker, attribute, value``, one row per extracted value) with the answers that
    state no value of an attribute counted as values of their own: an answer of status refusal, unextractable or
    empty takes :data:`NON_RESPONSE_VALUES` of its status in every attribute of ``attributes`` (a refusal's values
    from the extractor, the LLM's ``refusal`` once per attribute, are replaced, so both extractors count it alike);
    an extracted answer takes :data:`NOT_STATED` in each attribute of its ``missing`` list it has no value of.
    ``attributes`` maps each attribute to the values an answer is asked for (a multi-valued attribute's items, else
    1), and a non-response counts that many times, as the values it withheld would have. ``statuses`` has
    ``utterance_id, speaker, status, missing`` (comma-joined attribute names), one row per answer.

    nTVD then compares non-response like any value, P_g(v) over the answers' values and non-responses, so that a
    group answered unusably more often is a distribution that differs; tau applies to these values as to any (a
    rare non-response, fewer than tau over the table, is left out as a rare value is)."""
    require_columns(statuses, ["utterance_id", "speaker", "status", "missing"], "status table")
    status = statuses["status"].to_numpy()
    silent = statuses[status != EXTRACTED]
    if not silent.empty and not values.empty:
        values = values[~values["utterance_id"].isin(silent["utterance_id"])]
    silent_rows = silent.assign(
        attribute=[list(attributes)] * len(silent),
        value=[NON_RESPONSE_VALUES.get(name, f"({name})") for name in silent["status"]],
    ).explode("attribute")
    partial = statuses[(status == EXTRACTED) & (statuses["missing"].fillna("").to_numpy() != "")]
    unstated = partial.assign(attribute=partial["missing"].str.split(","), value=NOT_STATED).explode("attribute")
    rows = pd.concat([silent_rows, unstated], ignore_index=True)[["utterance_id", "speaker", "attribute", "value"]]
    if not rows.empty and not values.empty:  # an attribute the answer states is not also unstated
        stated = pd.MultiIndex.from_arrays([values["utterance_id"], values["attribute"]])
        rows = rows[~pd.MultiIndex.from_arrays([rows["utterance_id"], rows["attribute"]]).isin(stated)]
    if rows.empty:
        return values
    rows = rows.loc[rows.index.repeat(rows["attribute"].map(attributes).fillna(1).astype(int))]
    return pd.concat([values, rows], ignore_index=True)


# --------------------------------------------------------------------------------------------- collapse


@dataclasses.dataclass(frozen=True)
class CollapseDiagnostic:
    """``per_group``: attribute, group, count (of the group's retained values), normalised_entropy,
    top_value, top_share. ``per_attribute``: attribute, n_values (|V_a|), the group mean of normalised_entropy, and
    the attribute's overall top value and its share."""

    per_group: pd.DataFrame
    per_attribute: pd.DataFrame
    tau: int

    def collapsed(self, max_entropy: float = 0.5) -> list[str]:
        """Attributes whose mean normalised entropy is at most ``max_entropy`` (near-constant answers)."""
        frame = self.per_attribute
        return sorted(frame.loc[frame["normalised_entropy"] <= max_entropy, "attribute"])


def collapse_diagnostic(table: pd.DataFrame, tau: int = REFERENCE_TAU) -> CollapseDiagnostic:
    """Normalised entropy of each attribute's retained values per group (VIBE §IV, "Score interpretation").

    For group g and attribute a with retained values V_a (count >= tau over the table)::

        H_g(a) = - sum_{v in V_a} P_g(v) log P_g(v),    normalised: H_g(a) / log |V_a|

    defined as 0 when |V_a| = 1 and NaN for a group with no retained value of a.
    """
    result = ntvd(table, tau)
    groups = [str(group) for group in np.unique(table["group"].astype(str))]
    distributions = result.distributions
    per_group, per_attribute = [], []
    for attribute, rows in distributions.groupby("attribute", sort=True):
        probabilities = rows[groups].to_numpy(dtype=float)  # (|V_a|, G)
        n_values = len(rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.where(probabilities > 0, probabilities * np.log(probabilities), 0.0).sum(axis=0)
        normalised = entropy / np.log(n_values) if n_values > 1 else np.zeros(len(groups))
        has_values = probabilities.sum(axis=0) > 0
        normalised = np.where(has_values, normalised, np.nan)
        values = rows["value"].to_numpy()
        top = probabilities.argmax(axis=0)
        retained = table[(table["attribute"] == attribute) & table["value"].isin(values)]
        counts = retained.groupby(retained["group"].astype(str)).size()
        for index, group in enumerate(groups):
            per_group.append(
                (
                    attribute,
                    group,
                    int(counts.get(group, 0)),
                    normalised[index],
                    values[top[index]] if has_values[index] else None,
                    probabilities[top[index], index],
                )
            )
        overall = retained["value"].value_counts(normalize=True)
        per_attribute.append(
            (
                attribute,
                n_values,
                float(np.nanmean(normalised)) if has_values.any() else np.nan,
                overall.index[0],
                float(overall.iloc[0]),
            )
        )
    return CollapseDiagnostic(
        pd.DataFrame(
            per_group, columns=["attribute", "group", "count", "normalised_entropy", "top_value", "top_share"]
        ),
        pd.DataFrame(per_attribute, columns=["attribute", "n_values", "normalised_entropy", "top_value", "top_share"]),
        tau,
    )
