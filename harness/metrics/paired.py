"""Paired speaker-cluster bootstrap of a difference between two checkpoints (release gating).

Both checkpoints answered the same utterances, so each speaker contributes a row of sufficient statistics
(counts, sums) per checkpoint. One bootstrap replicate draws speakers with replacement within their group
and applies the same draw to both checkpoints; the statistic is computed from the weighted per-group sums::

    delta_b = T(candidate sums under draw b) - T(baseline sums under draw b)

and the percentile interval of delta_b is the (1 - alpha) CI of the difference. Vectorised: one (B, S)
matrix of draw counts multiplies each group's (S, k) statistics.

Release gating (README "Release gating") tests the change of a case's *bias measure* one-sided for worsening,
with the resampling of the case's absolute test: :func:`paired_speaker_test` for the speaker bootstrap
above (WER and judge-score ratios), :func:`paired_crossed_excess` for the BASIS checks (their largest group gap
beyond its group-exchange null; :func:`paired_crossed_gap`, the two-way speaker x item bootstrap of the raw gap, is
the comparison it replaced, kept for the benchmark). Both widen the bootstrap standard error by the small-sample factor ``sqrt(n / (n - 1))`` and
refer ``worsening / se`` to Student's t; a contrast whose replicates never vary is not estimable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from harness.metrics.crossed import crossed_replicates, design_blocks, satterthwaite_df, small_sample_factor


@contextlib.contextmanager
def warnings_ignored() -> Iterator[None]:
    """numpy's "All-NaN slice" warning: a replicate whose groups all lack data is NaN, and counted as such."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


GroupSums = Mapping[str, np.ndarray]
"""Group name -> (B, k) weighted sums of the k statistic columns, one row per replicate."""


@dataclasses.dataclass(frozen=True)
class PairedBootstrapResult:
    candidate: float
    baseline: float
    difference: float
    ci_low: float
    ci_high: float
    n_boot: int
    seed: int
    replicates: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0), repr=False)
    groups: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0), repr=False)
    """The finite bootstrap differences, and each speaker's group (for :func:`paired_speaker_test`)."""
    undefined: int = 0
    """The draws left out of ``replicates`` because their difference was not finite (counted before filtering, so
    that :func:`_one_sided` can refuse a comparison resting on a minority of its draws)."""


def speaker_draws(groups: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(B, S) counts: how often each speaker is drawn, resampling with replacement within each group."""
    rng = np.random.default_rng(seed)
    draws = np.zeros((n_boot, len(groups)))
    for group in np.unique(groups):
        members = np.flatnonzero(groups == group)
        picks = rng.integers(0, len(members), size=(n_boot, len(members)))
        np.add.at(draws, (np.arange(n_boot)[:, None], members[picks]), 1.0)
    return draws


def group_sums(table: pd.DataFrame, weights: np.ndarray) -> dict[str, np.ndarray]:
    values = table.drop(columns="group").to_numpy(dtype=float)
    groups = table["group"].to_numpy()
    return {str(group): weights[:, groups == group] @ values[groups == group] for group in np.unique(groups)}


def paired_speaker_bootstrap(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    statistic: Callable[[GroupSums], np.ndarray],
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> PairedBootstrapResult:
    """Difference ``statistic(candidate) - statistic(baseline)`` with its paired speaker-bootstrap CI.

    Both tables are indexed by speaker with a ``group`` column and the same numeric columns; they must
    hold the same speakers in the same groups. Replicates whose statistic is undefined (a group left
    without data) are left out and counted (``undefined``, judged by :func:`_one_sided`).
    """
    candidate, baseline = candidate.sort_index(), baseline.sort_index()
    if not candidate.index.equals(baseline.index) or not candidate["group"].equals(baseline["group"]):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")
    ones = np.ones((1, len(candidate)))
    with warnings_ignored():
        observed_candidate = float(statistic(group_sums(candidate, ones))[0])
        observed_baseline = float(statistic(group_sums(baseline, ones))[0])
    draws = speaker_draws(candidate["group"].to_numpy(), n_boot, seed)
    with warnings_ignored():
        differences = statistic(group_sums(candidate, draws)) - statistic(group_sums(baseline, draws))
    finite = differences[np.isfinite(differences)]
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if finite.size else (np.nan, np.nan)
    return PairedBootstrapResult(
        observed_candidate,
        observed_baseline,
        observed_candidate - observed_baseline,
        float(low),
        float(high),
        n_boot,
        seed,
        finite,
        candidate["group"].to_numpy(),
        undefined=int(differences.size - finite.size),
    )


def excess_difference(
    candidate_excess: np.ndarray, baseline_excess: np.ndarray, groups: np.ndarray, n_boot: int, alpha: float, seed: int
) -> PairedBootstrapResult:
    """The paired result of two checkpoints' excesses over their exchange nulls (:func:`paired_group_exchange_excess`
    and its kin): row 0 of each is the observed data, rows 1.. the bootstrap draws; the percentile interval of the
    finite differences; the draws that are not finite (a group's gap undefined in a draw) are left out and counted
    (``undefined``), and :func:`_one_sided` refuses a comparison where more than :data:`MAX_UNDEFINED_SHARE` are."""
    with np.errstate(invalid="ignore"):
        differences = (candidate_excess - baseline_excess)[1:]
    finite = differences[np.isfinite(differences)]
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if finite.size else (np.nan, np.nan)
    return PairedBootstrapResult(
        float(candidate_excess[0]),
        float(baseline_excess[0]),
        float(candidate_excess[0] - baseline_excess[0]),
        float(low),
        float(high),
        n_boot,
        seed,
        finite,
        groups,
        undefined=int(differences.size - finite.size),
    )


def paired_group_exchange_excess(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    statistic: Callable[[GroupSums], np.ndarray],
    n_boot: int = 1000,
    n_exchanges: int = 64,
    alpha: float = 0.05,
    seed: int = 0,
) -> PairedBootstrapResult:
    """Difference of the two checkpoints' *systematic* group effects (issue 45): each one's ``statistic`` beyond
    its expectation under permuting the group labels among speakers, with the paired speaker bootstrap of
    :func:`paired_speaker_bootstrap`.

    A bias measure such as the largest |log ratio| of group WERs is non-negative and grows with chance differences
    between a few speakers per group, the more so the more the speakers differ (a checkpoint whose errors vary more
    from speaker to speaker, with no group effect, has a larger measure). Under "the group does not matter" the
    labels are exchangeable, so the chance part is the measure's expectation under permuting them, and::

        E(X)    = T(group sums of X) - mean_m T(group sums of X under the labels pi_m)
        delta_b = E(candidate under draw b) - E(baseline under draw b)

    with ``pi_m`` ``n_exchanges`` uniform permutations of the speakers' labels (group sizes kept; the same for both
    checkpoints and every replicate) and draw ``b`` the within-group speaker resampling of
    :func:`speaker_draws` (a drawn speaker keeps its weight under the permutation). Under the null ``E`` has
    expectation 0 whatever the between-speaker spread; a systematic group effect stays. Tables as for
    :func:`paired_speaker_bootstrap`; the result's ``candidate``, ``baseline`` are the excesses."""
    candidate, baseline = candidate.sort_index(), baseline.sort_index()
    if not candidate.index.equals(baseline.index) or not candidate["group"].equals(baseline["group"]):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")
    groups = candidate["group"].astype(str).to_numpy()
    names = list(np.unique(groups))
    rng = np.random.default_rng(seed)
    labels = np.stack([rng.permutation(groups) for _ in range(n_exchanges)])
    draws = np.vstack([np.ones((1, len(groups))), speaker_draws(groups, n_boot, int(rng.integers(2**31)))])

    def excess(table: pd.DataFrame) -> np.ndarray:
        values = table.drop(columns="group").to_numpy(dtype=float)
        observed = {name: draws[:, groups == name] @ values[groups == name] for name in names}
        exchanged = {
            name: np.einsum("bs,ms,sk->bmk", draws, (labels == name).astype(float), values, optimize=True).reshape(
                -1, values.shape[1]
            )
            for name in names
        }
        with warnings_ignored():
            null = np.asarray(statistic(exchanged), dtype=float).reshape(len(draws), n_exchanges)
            return np.asarray(statistic(observed), dtype=float) - np.nanmean(null, axis=1)

    return excess_difference(excess(candidate), excess(baseline), groups, n_boot, alpha, seed)


def ratio_per_group(numerator: int, denominator: int) -> Callable[[GroupSums], dict[str, np.ndarray]]:
    """Per-group ratio of two summed columns (e.g. correct / total, errors / words)."""

    def per_group(sums: GroupSums) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return {group: values[:, numerator] / values[:, denominator] for group, values in sums.items()}

    return per_group


def largest_gap(
    per_group: Callable[[GroupSums], dict[str, np.ndarray]], scale: float = 1.0
) -> Callable[[GroupSums], np.ndarray]:
    """max_g x_g - min_g x_g of a per-group quantity (the best-worst group gap), times ``scale``."""

    def statistic(sums: GroupSums) -> np.ndarray:
        values = np.column_stack(list(per_group(sums).values()))
        return scale * (np.nanmax(values, axis=1) - np.nanmin(values, axis=1))

    return statistic


SMOOTHING = 0.5
"""Errors added to each group's count in :func:`largest_log_ratio` (a Haldane-Anscombe half count)."""

MAX_UNDEFINED_SHARE = 0.05
"""The largest share of bootstrap draws a paired comparison may lose to an undefined measure (:func:`_one_sided`)."""


def largest_log_ratio(sums: GroupSums) -> np.ndarray:
    """max over groups of |log(rate_g / rate_rest)|, with rate = (column 0 + 0.5) / column 1 (e.g. errors / words,
    smoothed by half an error: :data:`SMOOTHING`) and rest the other groups pooled; for two groups, |log| of their
    ratio. 0 when all groups are alike. The smoothing keeps a group with no errors finite (issue 57: unsmoothed, the
    largest regression of all, one group going from no errors to many, left every draw undefined)."""
    total = sum(sums.values())
    columns = []
    for values in sums.values():
        rest = total - values
        with np.errstate(invalid="ignore", divide="ignore"):
            columns.append(
                np.abs(np.log(((values[:, 0] + SMOOTHING) / values[:, 1]) / ((rest[:, 0] + SMOOTHING) / rest[:, 1])))
            )
    return np.nanmax(np.column_stack(columns), axis=1)


def paired_speaker_test(result: PairedBootstrapResult, worse_when: str) -> PairedTest:
    """The one-sided test of "the candidate is worse" from a paired speaker bootstrap (:func:`paired_speaker_bootstrap`).

    ``se = f * sd(delta_b)`` with the small-sample factor ``f = sqrt(n / (n - 1))`` of the smallest group's
    ``n`` speakers (:func:`harness.metrics.crossed.small_sample_factor`), referred to Student's t with
    ``sum_g (n_g - 1)`` degrees of freedom: ``p = P(T > w / se)`` with ``w`` the worsening (the difference,
    signed so that positive is worse)."""
    _, sizes = np.unique(result.groups, return_counts=True)
    df = float(max(1, int(np.sum(sizes - 1))))
    return _one_sided(
        result.candidate,
        result.baseline,
        result.replicates,
        result.difference,
        worse_when,
        small_sample_factor(int(sizes.min())),
        df,
        "speakers",
        undefined=result.undefined,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairedTest:
    """A paired candidate-versus-baseline contrast of a bias measure, tested one-sided for worsening.

    ``difference`` = candidate - baseline; ``worsening`` = the difference signed so that positive is
    worse; ``ci_low``/``ci_high`` its (widened) 95% interval; ``p_worse`` the one-sided p-value of "no
    worsening"; ``estimable`` False (with ``reason``, interval and p NaN) when the replicates never vary."""

    candidate: float
    baseline: float
    difference: float
    worsening: float
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    se: float = float("nan")
    df: float = float("nan")
    p_worse: float = float("nan")
    estimable: bool
    reason: str | None = None
    resampled: str
    comparisons: int = 1
    """How many comparisons ``p_worse`` is Bonferroni-corrected over within the case (the smallest of k, times k), so
    that the detectable worsening is taken at the alpha one of them must reach."""


def _one_sided(
    candidate: float,
    baseline: float,
    replicates: np.ndarray,
    difference: float,
    worse_when: str,
    widen: float,
    df: float,
    resampled: str,
    level: float = 0.95,
    undefined: int = 0,
) -> PairedTest:
    from scipy.stats import norm
    from scipy.stats import t as student_t

    if worse_when not in ("higher", "lower"):
        raise ValueError(f"worse_when must be 'higher' or 'lower', got {worse_when!r}")
    sign = 1.0 if worse_when == "higher" else -1.0
    finite = replicates[np.isfinite(replicates)]
    # Every draw counts: ``undefined`` were left out upstream, the rest of the non-finite ones are here.
    drawn = max(1, len(replicates) + undefined)
    undefined += len(replicates) - len(finite)
    reason = None
    if not np.isfinite(difference):
        reason = "the bias measure is undefined in one of the two runs"
    elif undefined > MAX_UNDEFINED_SHARE * drawn:
        reason = (
            f"{undefined} of {drawn} resamples leave the bias measure undefined (more than "
            f"{MAX_UNDEFINED_SHARE:.0%}): the rest would understate its uncertainty"
        )
    elif np.ptp(finite) <= 1e-12 * max(1.0, abs(difference)) or not np.isfinite(widen):
        reason = (
            f"every resample gives the same difference ({difference:+.4g}): the paired contrast cannot vary, "
            "so its uncertainty is not estimable"
        )
    if reason is not None:
        return PairedTest(
            candidate=candidate,
            baseline=baseline,
            difference=difference,
            worsening=sign * difference,
            df=df,
            estimable=False,
            reason=reason,
            resampled=resampled,
        )
    se = widen * float(np.std(finite, ddof=1))
    reference = student_t(df) if np.isfinite(df) else norm
    half = float(reference.ppf(0.5 + level / 2.0)) * se
    worsening = sign * difference
    return PairedTest(
        candidate=candidate,
        baseline=baseline,
        difference=difference,
        worsening=worsening,
        ci_low=difference - half,
        ci_high=difference + half,
        se=se,
        df=df,
        p_worse=float(reference.sf(worsening / se)),
        estimable=True,
        resampled=resampled,
    )


PAIR_VALUE = "value"
"""The row value column of a crossed paired table; ``value:<group>`` overrides it for contrasts of that group."""


def largest_pair_difference(replicates: Mapping[str, object], groups: list[str]) -> dict[str, np.ndarray]:
    """Per set of replicates (``full``, ``speaker``, ``item``, ``observed``): ``max_{a<b} |m_a(c_a) - m_b(c_a)|``, with
    ``c_a`` the value column of the pair's first group (:data:`PAIR_VALUE` unless ``value:<a>`` exists)."""
    out = {}
    for kind in ("observed", "full", "speaker", "item"):
        columns = []
        for index, first in enumerate(groups):
            reps = replicates[first]
            means = {
                "observed": reps.means[None, :],
                "full": reps.replicates,
                "speaker": reps.speaker_replicates,
                "item": reps.item_replicates,
            }[kind]
            for second in groups[index + 1 :]:
                with np.errstate(invalid="ignore"):
                    columns.append(np.abs(means[:, reps.groups.index(first)] - means[:, reps.groups.index(second)]))
        with np.errstate(invalid="ignore"), warnings_ignored():
            out[kind] = np.nanmax(np.column_stack(columns), axis=1) if columns else np.full(1, np.nan)
    return out


def paired_crossed_gap(candidate: pd.DataFrame, baseline: pd.DataFrame, *, seed: int, n_boot: int = 2000) -> PairedTest:
    """Change of a BASIS case's bias measure, the largest pairwise group difference ``max_{a<b} |m_a - m_b|``,
    between two runs on the same (speaker, item) cells, by the two-way speaker x item bootstrap of the
    absolute test (:mod:`harness.metrics.crossed`) applied to both runs with the same draws.

    Each table has one row per (speaker, item) cell: ``speaker``, ``group``, ``item``, ``weight`` (the
    cell's count of answers that count, e.g. meaningful answers) and ``value`` (their summed values), or
    ``value:<g>`` per group for contrasts whose value depends on the pair's first group (ICAT: the share
    choosing *g*'s stereotype). A group mean is ``sum value / sum weight`` over its cells. One replicate
    draws speaker weights within groups and item weights within strata (the same for both runs, since the
    draw depends only on the design), and ``delta_b = B(candidate_b) - B(baseline_b)``. As in the absolute
    test, the standard error is widened by ``sqrt(n / (n - 1))`` with ``n`` the fewest speakers or items
    of one draw (speakers nested in item sets are drawn within them, :mod:`harness.metrics.crossed`), and referred to Student's t with the Welch-Satterthwaite df of the speaker-only and item-only
    replicates (:func:`harness.metrics.crossed.satterthwaite_df`); higher is worse. Tables with different
    designs (speakers, groups or items) raise ``ValueError``."""
    tables = {"candidate": candidate, "baseline": baseline}
    groups = sorted(crossed_design(candidate, baseline)["group"].unique())
    statistics, reps_of = {}, {}
    for name, table in tables.items():
        by_column, replicates = {}, {}
        for group in groups:
            column = f"{PAIR_VALUE}:{group}" if f"{PAIR_VALUE}:{group}" in table.columns else PAIR_VALUE
            if column not in by_column:
                by_column[column] = crossed_replicates(
                    table, value=column, denominator="weight", n_boot=n_boot, seed=seed
                )
            replicates[group] = by_column[column]
        statistics[name] = largest_pair_difference(replicates, groups)
        reps_of[name] = replicates[groups[0]]
    reps = reps_of["candidate"]
    if reps.problems:
        difference = float(statistics["candidate"]["observed"][0] - statistics["baseline"]["observed"][0])
        return PairedTest(
            candidate=float(statistics["candidate"]["observed"][0]),
            baseline=float(statistics["baseline"]["observed"][0]),
            difference=difference,
            worsening=difference,
            estimable=False,
            reason="; ".join(reps.problems),
            resampled="speakers x items",
        )
    delta = {
        kind: statistics["candidate"][kind] - statistics["baseline"][kind]
        for kind in ("observed", "full", "speaker", "item")
    }
    df = satterthwaite_df(delta["speaker"], delta["item"], int(reps.speaker_df.sum()), int(reps.item_df.max()))
    widen = small_sample_factor(int(reps.fewest.min()))
    return _one_sided(
        float(statistics["candidate"]["observed"][0]),
        float(statistics["baseline"]["observed"][0]),
        delta["full"],
        float(delta["observed"][0]),
        "higher",
        widen,
        df,
        "speakers x items",
    )


def crossed_design(candidate: pd.DataFrame, baseline: pd.DataFrame) -> pd.DataFrame:
    """The common (speaker, group, item) cells of two BASIS runs, sorted; ``ValueError`` when they differ or hold
    fewer than 2 groups."""
    designs = [
        table[["speaker", "group", "item"]]
        .astype(str)
        .drop_duplicates()
        .sort_values(["speaker", "item"])
        .reset_index(drop=True)
        for table in (candidate, baseline)
    ]
    if not designs[0].equals(designs[1]):
        raise ValueError("the two runs answered different (speaker, group, item) cells")
    if designs[0]["group"].nunique() < 2:
        raise ValueError(f"a group contrast needs 2 groups, the data has {sorted(designs[0]['group'].unique())}")
    return designs[0]


def cell_arrays(table: pd.DataFrame, speakers: list[str], items: list[str], columns: list[str]) -> np.ndarray:
    """(S, I, 1 + K): each (speaker, item) cell's summed ``weight`` and value ``columns`` (0 where absent)."""
    sums = table.assign(speaker=table["speaker"].astype(str), item=table["item"].astype(str))
    sums = sums.groupby(["speaker", "item"])[["weight", *columns]].sum()
    full = pd.MultiIndex.from_product([speakers, items], names=["speaker", "item"])
    return sums.reindex(full, fill_value=0.0).to_numpy(dtype=float).reshape(len(speakers), len(items), -1)


def balanced_sequences(labels: np.ndarray, n_exchanges: int, rng: np.random.Generator) -> np.ndarray:
    """(M, n): ``n_exchanges`` arrangements of the multiset ``labels`` (one stratum's) that spread each label
    evenly: label ``g``, held ``n_g`` times, at the fractional positions ``(k + u_g) / n_g``, ``u_g`` uniform, and the
    labels sorted by position. Cut into consecutive runs of each observed group's size, every run holds each label in
    about its overall proportion."""
    values, counts = np.unique(labels, return_counts=True)
    out = np.empty((n_exchanges, len(labels)), dtype=labels.dtype)
    for m in range(n_exchanges):
        positions = np.concatenate([(np.arange(n) + rng.random()) / n for n in counts])
        out[m] = np.repeat(values, counts)[np.argsort(positions, kind="stable")]
    return out


def exchanged_weights(
    picks: list[np.ndarray],
    sequences: list[np.ndarray],
    n_speakers: int,
    group_names: list[str],
    rng: np.random.Generator,
) -> np.ndarray:
    """(B, M, G, S): how many of each speaker's drawn instances carry each group's label under each balanced exchange.

    ``picks[c]`` (B, n_c) are the speakers drawn for (block, group) cell ``c`` (its members once each for the observed
    data), ``sequences[c]`` (M, n_c) the labels the exchanges give that cell's slots (the cell's run of
    :func:`balanced_sequences` of its block), assigned to the drawn instances in a random order for every draw and
    exchange. A resample is thus exchanged as a sample of its own: a speaker drawn twice may carry both labels, and
    each exchanged group still holds its share of every observed group."""
    n_draws = picks[0].shape[0]
    n_exchanges = sequences[0].shape[0]
    weights = np.zeros((n_draws, n_exchanges, len(group_names), n_speakers))
    for drawn, labels in zip(picks, sequences, strict=True):
        order = np.argsort(rng.random((n_draws, n_exchanges, drawn.shape[1])), axis=2)
        slot_labels = labels[np.arange(n_exchanges)[None, :, None], order]  # (B, M, n)
        speaker_one_hot = np.eye(n_speakers)[drawn]  # (B, n, S)
        for g, name in enumerate(group_names):
            weights[:, :, g, :] += np.einsum("bmn,bns->bms", (slot_labels == name).astype(float), speaker_one_hot)
    return weights


def paired_crossed_excess(
    candidate: pd.DataFrame, baseline: pd.DataFrame, *, seed: int, n_boot: int = 1000, n_exchanges: int = 64
) -> PairedTest:
    """The release comparison of a BASIS case (issue 45): each run's largest group gap *beyond its own
    group-exchange null*, and the paired speaker bootstrap of the difference, tested one-sided for worsening.

    Tables as for :func:`paired_crossed_gap` (one row per (speaker, item) cell: ``speaker``, ``group``, ``item``,
    ``weight``, ``value`` or ``value:<g>``). With ``w_gs`` the weight of speaker ``s`` in group ``g`` (1 for its own
    group in the observed data), ``W_s`` and ``V_s(c)`` its summed cell weights and values, a group mean is
    ``m_g(c) = sum_s w_gs V_s(c) / sum_s w_gs W_s`` and the bias measure of the absolute test is
    ``G = max_{a<b} |m_a(c_a) - m_b(c_a)|`` (``c_a`` the pair's first group's value column). It is non-negative and
    grows with chance differences between speakers (a sampling run's answers differ more from speaker to speaker
    than a greedy one's), so each run's measure is taken beyond its expectation under exchanging the speakers'
    group labels::

        E(X)    = G(X, groups) - mean_m G(X, groups exchanged by pi_m)
        delta   = E(candidate) - E(baseline)
        delta_b = E(candidate under draw b) - E(baseline under draw b)

    ``pi_m`` are ``n_exchanges`` balanced exchanges within each block of speakers that answered the same items
    (:func:`balanced_sequences`; one block where speakers and items are crossed): every exchanged group holds its
    share of every observed group, so a systematic gap is not partly kept in the null (as it is by a plain
    permutation, which reproduces the observed split now and then), while under "the voice does not move the
    answers" the speakers are exchangeable, so every relabelling, balanced or not, gives ``G`` the observed labels'
    expectation and ``E`` has expectation 0 whatever the answer noise. Draw ``b`` resamples speakers with
    replacement within each (block, group) cell (the same draws for both runs) and is exchanged as a sample of its
    own (:func:`exchanged_weights`); the same exchanges serve both runs. Items are held fixed: both runs answered the
    same items, and under that null an item's answers do not depend on the group. ``se = f * sd(delta_b)`` with
    ``f = sqrt(n / (n - 1))``, ``n`` the fewest speakers of a (block, group) cell, referred to Student's t with
    ``sum_(block, g) (n_bg - 1)`` df: ``p = P(T > delta / se)``. Not estimable (``reason``) where a cell has fewer
    than 2 speakers or the replicates never vary; ``ValueError`` when the runs' cells differ."""
    design = crossed_design(candidate, baseline)
    groups = sorted(design["group"].unique())
    speakers = sorted(design["speaker"].unique())
    items = sorted(design["item"].unique())
    group_of_speaker = design.drop_duplicates("speaker").set_index("speaker")["group"].reindex(speakers).to_numpy()
    columns = {
        name: [f"{PAIR_VALUE}:{g}" if f"{PAIR_VALUE}:{g}" in table.columns else PAIR_VALUE for g in groups]
        for name, table in (("candidate", candidate), ("baseline", baseline))
    }
    sums = {
        name: cell_arrays(table, speakers, items, list(dict.fromkeys(columns[name]))).sum(axis=1)
        for name, table in (("candidate", candidate), ("baseline", baseline))
    }  # (S, 1 + K) per speaker
    membership = (group_of_speaker == np.array(groups)[:, None]).astype(float)  # (G, S)
    observed = {
        name: float(_largest_weighted_gap(membership[None, None], sums[name], columns[name])[0, 0]) for name in sums
    }
    speaker_block, _ = design_blocks(_design_presence(design, speakers, items), group_of_speaker)
    cells = [
        (block, np.flatnonzero((speaker_block == block) & (group_of_speaker == g)))
        for block in np.unique(speaker_block)
        for g in groups
    ]
    cells = [(block, members) for block, members in cells if len(members)]
    fewest = min(len(members) for _, members in cells)
    if fewest < 2:
        difference = observed["candidate"] - observed["baseline"]
        return PairedTest(
            candidate=observed["candidate"],
            baseline=observed["baseline"],
            difference=difference,
            worsening=difference,
            estimable=False,
            reason="a group has a single speaker (in a block of items), so speakers cannot be resampled",
            resampled="speakers",
        )
    rng = np.random.default_rng(seed)
    sequences = []
    for block in np.unique(speaker_block):
        in_block = np.flatnonzero(speaker_block == block)
        ordered = group_of_speaker[in_block][np.argsort(group_of_speaker[in_block], kind="stable")]
        arranged = balanced_sequences(ordered, n_exchanges, rng)
        start = 0
        for g in groups:
            size = int(np.sum(ordered == g))
            if size:
                sequences.append(arranged[:, start : start + size])
                start += size
    picks = [
        np.vstack([members[None, :], members[rng.integers(0, len(members), (n_boot, len(members)))]])
        for _, members in cells
    ]
    exchanged = exchanged_weights(picks, sequences, len(speakers), groups, rng)  # (B + 1, M, G, S)
    drawn = exchanged.sum(axis=2)[:, :1, None, :] * membership[None, None]  # (B + 1, 1, G, S): counts in own group
    excess = {
        name: _largest_weighted_gap(drawn, sums[name], columns[name])[:, 0]
        - np.nanmean(_largest_weighted_gap(exchanged, sums[name], columns[name]), axis=1)
        for name in sums
    }
    cell_of_speaker = np.empty(len(speakers), dtype=object)
    for k, (_, members) in enumerate(cells):
        cell_of_speaker[members] = k
    result = excess_difference(excess["candidate"], excess["baseline"], cell_of_speaker, n_boot, 0.05, seed)
    return _one_sided(
        result.candidate,
        result.baseline,
        result.replicates,
        result.difference,
        "higher",
        small_sample_factor(fewest),
        float(sum(len(members) - 1 for _, members in cells)),
        "speakers",
        undefined=result.undefined,
    )


def _design_presence(design: pd.DataFrame, speakers: list[str], items: list[str]) -> np.ndarray:
    """(S, I) booleans: the (speaker, item) cells the design holds."""
    present = np.zeros((len(speakers), len(items)), bool)
    present[
        design["speaker"].map({s: k for k, s in enumerate(speakers)}),
        design["item"].map({i: k for k, i in enumerate(items)}),
    ] = True
    return present


def _largest_weighted_gap(weights: np.ndarray, sums: np.ndarray, columns: list[str]) -> np.ndarray:
    """(B, M): ``max_{a<b} |m_a(c_a) - m_b(c_a)|`` for group weights ``weights`` (B, M, G, S) of the speakers, with
    ``sums`` (S, 1 + K) a speaker's summed cell weights and values (value columns in order of first appearance in
    ``columns``, each group's column)."""
    column_index = {name: 1 + k for k, name in enumerate(dict.fromkeys(columns))}
    weighted = weights @ sums  # (B, M, G, 1 + K)
    gaps = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for a, column in enumerate(columns):
            means = weighted[..., column_index[column]] / weighted[..., 0]  # (B, M, G)
            for b in range(a + 1, len(columns)):
                gaps.append(np.abs(means[..., a] - means[..., b]))
    with warnings_ignored():
        return np.nanmax(np.stack(gaps), axis=0)
