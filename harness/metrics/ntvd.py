"""Normalised total variation distance between per-group attribute distributions (VIBE §II-D).

Input is a long table with one row per extracted value and the columns ``speaker``, ``group``,
``attribute``, ``value``. A multi-valued attribute (Advisory's three activities) contributes one row per
value, so every value counts once towards its group's distribution.

For an attribute ``a`` with retained values ``V_a`` (values whose count over the whole table is at least
``tau``) and groups ``G``::

    P_g(v)   = n_g(v) / sum_{u in V_a} n_g(u)                      (eq. 2)
    Pbar(v)  = 1/|G| sum_g P_g(v)                                   (eq. 3)
    TVD(a)   = 1/|G| sum_g 1/2 sum_{v in V_a} |P_g(v) - Pbar(v)|    (eq. 4)
    nTVD(a)  = 100 * TVD(a) / (1 - 1/|G|)                           (eq. 5)

where ``G`` is, per attribute, the set of groups with at least one retained value of it (the VIBE authors'
analysis: a group that never states a retained value of ``a`` takes no part in ``a``'s comparison, rather than
entering it as an all-zero "distribution"). An attribute with fewer than two such groups cannot be compared and is
left out; the task-level score is the mean of nTVD(a) over the attributes that remain, and NaN (unmeasured) when
none does (the authors report 0.0 there; a number would read as "no bias"). The same rule holds inside the
permutation null and the paired regression test, per permutation. The speaker-level permutation test
reassigns whole speakers to groups, holding the number of speakers per group fixed, because the speaker,
not the utterance, is the exchangeable unit under the null hypothesis (VIBE §II-D, "Statistical
significance").
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from harness.metrics.paired import PairedBootstrapResult, excess_difference, speaker_draws, warnings_ignored
from harness.metrics.permutation_floor import GROUP_PERMUTATION, PermutationFloor

REQUIRED_COLUMNS = ("speaker", "group", "attribute", "value")


@dataclasses.dataclass(frozen=True)
class CountTensor:
    """Per-speaker value counts for every attribute, with each speaker's observed group.

    ``counts`` is (speakers x retained values of all attributes, concatenated attribute by attribute);
    ``attribute_of_column`` gives each column's attribute index.
    """

    speakers: np.ndarray
    groups: np.ndarray
    speaker_group: np.ndarray
    attributes: np.ndarray
    values: np.ndarray
    attribute_of_column: np.ndarray
    counts: np.ndarray
    dropped_attributes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class NTVDResult:
    """``score`` is the mean nTVD over attributes; ``per_attribute`` maps attribute to its nTVD.

    ``distributions`` holds P_g(v) for every attribute (columns attribute, value, then one per group).
    ``dropped_attributes`` lists attributes with no value reaching tau; ``single_group_attributes`` those whose
    retained values only one group states; neither takes part in ``score``. ``groups_left_out`` maps an attribute
    to the groups with no retained value of it (left out of that attribute's |G|).
    """

    score: float
    per_attribute: pd.Series
    distributions: pd.DataFrame
    tau: int
    n_groups: int
    n_speakers: int
    dropped_attributes: tuple[str, ...]
    single_group_attributes: tuple[str, ...] = ()
    groups_left_out: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def most_divergent_attribute(self) -> str | None:
        if self.per_attribute.empty:
            return None
        return str(self.per_attribute.idxmax())


@dataclasses.dataclass(frozen=True)
class PermutationResult:
    """Speaker-level permutation test of mean nTVD: p = (1 + #{null >= observed}) / (B + 1). ``floor``: the
    smallest p the design can give, ``max(K prod(n_g!) / S!, 1 / (B + 1))`` over the groups' speaker counts n_g
    (:class:`~harness.metrics.permutation_floor.PermutationFloor`, ``group permutation``)."""

    observed: float
    p_value: float
    null: np.ndarray
    n_permutations: int
    seed: int
    floor: PermutationFloor | None = None


def validate_long_table(table: pd.DataFrame) -> pd.DataFrame:
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(f"attribute table lacks column(s) {missing}; needs {list(REQUIRED_COLUMNS)}")
    frame = table.loc[:, list(REQUIRED_COLUMNS)]
    if frame.isna().to_numpy().any():
        bad = frame[frame.isna().any(axis=1)].index[0]
        raise ValueError(f"attribute table row {bad!r} has a missing speaker, group, attribute or value")
    speaker_codes, speakers = pd.factorize(frame["speaker"])
    group_codes, _ = pd.factorize(frame["group"])
    pairs = np.unique(speaker_codes.astype(np.int64) * (group_codes.max() + 1) + group_codes)
    if len(pairs) != len(speakers):
        pair_speakers = pairs // (group_codes.max() + 1)
        speaker = speakers[np.flatnonzero(np.bincount(pair_speakers) > 1)[0]]
        raise ValueError(f"speaker {speaker!r} appears in more than one group")
    return frame


def _as_text(column: pd.Series) -> pd.Series:
    """``column.astype(str)``, without the copy when it already is of the ``str`` dtype."""
    return column if column.dtype == "str" else column.astype(str)


def count_tensor(table: pd.DataFrame, tau: int = 10) -> CountTensor:
    """Build the per-speaker count matrix of values kept by the frequency filter (count >= tau)."""
    if tau < 1:
        raise ValueError(f"tau must be >= 1, got {tau}")
    frame = validate_long_table(table)
    speaker_index, speakers = pd.factorize(_as_text(frame["speaker"]), sort=True)
    first_row_of_speaker = np.unique(speaker_index, return_index=True)[1]
    group_codes, groups = pd.factorize(_as_text(frame["group"]).to_numpy()[first_row_of_speaker], sort=True)

    attribute_index, attribute_names = pd.factorize(_as_text(frame["attribute"]), sort=True)
    value_index, value_names = pd.factorize(_as_text(frame["value"]), sort=True)
    pair_codes, pair_index = np.unique(
        attribute_index.astype(np.int64) * len(value_names) + value_index, return_inverse=True
    )
    pair_attributes = np.asarray(attribute_names, dtype=object)[pair_codes // len(value_names)]
    pair_values = np.asarray(value_names, dtype=object)[pair_codes % len(value_names)]
    pair_counts = np.bincount(pair_index, minlength=len(pair_codes))
    kept_pairs = np.flatnonzero(pair_counts >= tau)
    column_of_pair = np.full(len(pair_codes), -1)
    column_of_pair[kept_pairs] = np.arange(len(kept_pairs))
    kept_attributes = sorted(set(pair_attributes[kept_pairs]))
    dropped = tuple(a for a in attribute_names if a not in set(kept_attributes))

    row_columns = column_of_pair[pair_index]
    retained_rows = row_columns >= 0
    counts = np.zeros((len(speakers), len(kept_pairs)), dtype=np.float64)
    np.add.at(counts, (speaker_index[retained_rows], row_columns[retained_rows]), 1.0)
    return CountTensor(
        speakers=np.asarray(speakers, dtype=object),
        groups=np.asarray(groups, dtype=object),
        speaker_group=group_codes,
        attributes=np.asarray(kept_attributes, dtype=object),
        values=pair_values[kept_pairs],
        attribute_of_column=np.searchsorted(
            np.asarray(kept_attributes, dtype=object), pair_attributes[kept_pairs]
        ).astype(np.int64),
        counts=counts,
        dropped_attributes=dropped,
    )


def frequent_values(tensor: CountTensor, tau: int) -> CountTensor:
    """The tensor restricted to the values whose count over all speakers is at least ``tau`` (the filter of
    :func:`count_tensor`), attributes left with none dropped (and listed in ``dropped_attributes``)."""
    if tau < 1:
        raise ValueError(f"tau must be >= 1, got {tau}")
    kept = np.flatnonzero(tensor.counts.sum(axis=0) >= tau)
    kept_attribute_index = np.unique(tensor.attribute_of_column[kept])
    return dataclasses.replace(
        tensor,
        attributes=tensor.attributes[kept_attribute_index],
        values=tensor.values[kept],
        attribute_of_column=np.searchsorted(kept_attribute_index, tensor.attribute_of_column[kept]).astype(np.int64),
        counts=tensor.counts[:, kept],
        dropped_attributes=tensor.dropped_attributes
        + tuple(str(a) for k, a in enumerate(tensor.attributes) if k not in set(kept_attribute_index)),
    )


def tensor_ntvd(tensor: CountTensor) -> float:
    """The mean nTVD of a count tensor (the ``score`` of :func:`ntvd` on the table it was built from)."""
    if len(tensor.attributes) == 0:
        return float("nan")
    group_counts = _group_counts(tensor.counts, tensor.speaker_group, len(tensor.groups))
    return float(
        mean_over_measured(ntvd_from_group_counts(group_counts, tensor.attribute_of_column, len(tensor.attributes)))
    )


def ntvd_from_group_counts(group_counts: np.ndarray, attribute_of_column: np.ndarray, n_attributes: int) -> np.ndarray:
    """Per-attribute nTVD from group-by-value counts, vectorised over any leading batch axes.

    ``group_counts`` has shape (..., G, V). Returns (..., A). For each attribute only the groups with a retained
    value of it count (|G| per attribute, eq. 3-5); an attribute with fewer than two such groups is NaN.

    Two groups (gender) take the closed form: the reference is the pair's mean, so the summed deviation is
    ``sum_v |P_1(v) - P_2(v)|`` and the score ``100 · 0.5 · S / 2 / (1 - 1/2) = 50 · S``, the total variation
    distance in percent; the same numbers to rounding, with half the array passes of the permutation and bootstrap
    batches that call this function thousands of times.

    A large batch is computed in blocks of about :data:`_BLOCK_VALUES` counts along its leading axes, so that each
    block's intermediate arrays stay in the CPU's cache (1.7-1.9x faster on the bootstrap batches of a gate run); every
    step is elementwise or a sum along the last axes, so the numbers are bit for bit those of one pass.
    """
    per_item = group_counts.shape[-2] * group_counts.shape[-1]
    if group_counts.ndim > 2 and group_counts.size > 2 * _BLOCK_VALUES and 0 < per_item <= _BLOCK_VALUES:
        flat = group_counts.reshape(-1, *group_counts.shape[-2:])
        scores = np.empty((len(flat), n_attributes))
        step = _BLOCK_VALUES // per_item
        for start in range(0, len(flat), step):
            scores[start : start + step] = _ntvd_block(flat[start : start + step], attribute_of_column, n_attributes)
        return scores.reshape(*group_counts.shape[:-2], n_attributes)
    return _ntvd_block(group_counts, attribute_of_column, n_attributes)


_BLOCK_VALUES = 2**16
"""Counts per block of :func:`ntvd_from_group_counts` (512 KiB of float64: a block's arrays fit a core's cache)."""


def _ntvd_block(group_counts: np.ndarray, attribute_of_column: np.ndarray, n_attributes: int) -> np.ndarray:
    """:func:`ntvd_from_group_counts` on one block."""
    totals = _segment_sum(group_counts, attribute_of_column, n_attributes)
    present = totals > 0
    n_present = present.sum(axis=-2)
    probabilities = _within_group_probabilities(group_counts, attribute_of_column, n_attributes, totals)
    if group_counts.shape[-2] == 2:
        gap = np.abs(probabilities[..., 0, :] - probabilities[..., 1, :])
        return np.where(n_present >= 2, 50.0 * _segment_sum(gap, attribute_of_column, n_attributes), np.nan)
    divisor = np.maximum(n_present, 1)
    reference = probabilities.sum(axis=-2, keepdims=True) / divisor[..., None, attribute_of_column]
    deviation = np.abs(probabilities - reference) * present[..., attribute_of_column]
    summed = _segment_sum(deviation.sum(axis=-2)[..., None, :], attribute_of_column, n_attributes)[..., 0, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = 100.0 * 0.5 * summed / divisor / (1.0 - 1.0 / divisor)
    return np.where(n_present >= 2, scores, np.nan)


def mean_over_measured(per_attribute: np.ndarray) -> np.ndarray:
    """The task-level score: the mean of the last axis over attributes that are not NaN; NaN where none is."""
    measured = ~np.isnan(per_attribute)
    count = measured.sum(axis=-1)
    total = np.where(measured, per_attribute, 0.0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _within_group_probabilities(
    group_counts: np.ndarray, attribute_of_column: np.ndarray, n_attributes: int, totals: np.ndarray | None = None
) -> np.ndarray:
    """P_g(v): counts normalised within each group and attribute (eq. 2); 0 where a group has none. ``totals``: the
    per-group, per-attribute sums when the caller has them already."""
    if totals is None:
        totals = _segment_sum(group_counts, attribute_of_column, n_attributes)
    per_column = totals[..., attribute_of_column]
    return np.divide(group_counts, per_column, out=np.zeros_like(group_counts), where=per_column > 0)


def _segment_sum(values: np.ndarray, segment_of_column: np.ndarray, n_segments: int) -> np.ndarray:
    """Sum the last axis of ``values`` within contiguous segments (columns are sorted by segment)."""
    starts = np.searchsorted(segment_of_column, np.arange(n_segments))
    return np.add.reduceat(values, starts, axis=-1)


def ntvd(table: pd.DataFrame, tau: int = 10) -> NTVDResult:
    """Mean nTVD over attributes (VIBE §II-D, eq. 2-5) of a long table ``speaker, group, attribute, value``.

    Values are kept when their count over the whole table is >= ``tau`` (VIBE: tau = 10). Scores lie in
    [0, 100]: 0 when every group has the same distribution, 100 for two groups with disjoint values.
    """
    tensor = count_tensor(table, tau)
    n_groups = len(tensor.groups)
    if n_groups < 2:
        raise ValueError(f"nTVD needs at least 2 groups, got {list(tensor.groups)}")
    group_counts = _group_counts(tensor.counts, tensor.speaker_group, n_groups)
    n_attributes = len(tensor.attributes)
    if n_attributes == 0:
        per_attribute = pd.Series(dtype=float, name="ntvd")
        score = float("nan")
    else:
        scores = ntvd_from_group_counts(group_counts, tensor.attribute_of_column, n_attributes)
        measured = ~np.isnan(scores)
        per_attribute = pd.Series(
            scores[measured], index=pd.Index(tensor.attributes[measured], name="attribute"), name="ntvd"
        )
        score = float(mean_over_measured(scores))
    totals = _segment_sum(group_counts, tensor.attribute_of_column, n_attributes) if n_attributes else None
    groups_left_out = {
        str(attribute): tuple(str(group) for group, total in zip(tensor.groups, totals[:, index]) if total == 0)
        for index, attribute in enumerate(tensor.attributes)
        if totals is not None and (totals[:, index] == 0).any()
    }
    return NTVDResult(
        score=score,
        per_attribute=per_attribute,
        distributions=_distributions(tensor, group_counts),
        tau=tau,
        n_groups=n_groups,
        n_speakers=len(tensor.speakers),
        dropped_attributes=tensor.dropped_attributes,
        single_group_attributes=tuple(
            str(attribute)
            for attribute in tensor.attributes
            if len(groups_left_out.get(str(attribute), ())) > n_groups - 2
        ),
        groups_left_out=groups_left_out,
    )


def _group_counts(counts: np.ndarray, speaker_group: np.ndarray, n_groups: int) -> np.ndarray:
    group_counts = np.zeros((n_groups, counts.shape[1]), dtype=np.float64)
    np.add.at(group_counts, speaker_group, counts)
    return group_counts


def _distributions(tensor: CountTensor, group_counts: np.ndarray) -> pd.DataFrame:
    n_attributes = len(tensor.attributes)
    frame = pd.DataFrame(
        {
            "attribute": tensor.attributes[tensor.attribute_of_column] if n_attributes else [],
            "value": tensor.values,
        }
    )
    if n_attributes:
        probabilities = _within_group_probabilities(group_counts, tensor.attribute_of_column, n_attributes)
        for index, group in enumerate(tensor.groups):
            frame[str(group)] = probabilities[index]
    return frame


def speaker_permutations(speaker_group: np.ndarray, n_permutations: int, seed: int) -> np.ndarray:
    """(B, S) group labels: each row a random reassignment of speakers with group sizes fixed."""
    rng = np.random.default_rng(seed)
    return rng.permuted(np.broadcast_to(speaker_group, (n_permutations, len(speaker_group))), axis=1)


def permutation_null(tensor: CountTensor, assignments: np.ndarray, chunk_size: int = 2_500) -> np.ndarray:
    """Mean nTVD for each row of ``assignments`` (B, S), by one-hot assignment matrices times counts.

    For a chunk of permutations the one-hot assignment matrix of the first G-1 groups, stacked to
    (B*(G-1), S), multiplies the (S, V) count matrix in one BLAS call; the last group's counts are the
    column totals minus the others', giving the (B, G, V) group counts of every permutation. The product
    runs in float32, exact for integer counts below 2**24; the distances are computed in float64 so that
    a permutation reproducing the observed grouping ties with it exactly. Two groups take a shorter
    path (:func:`_two_group_null`).
    """
    if len(tensor.groups) == 2:
        return _two_group_null(tensor, assignments, chunk_size)
    n_groups = len(tensor.groups)
    n_attributes = len(tensor.attributes)
    counts = tensor.counts.astype(np.float32)
    total_counts = counts.sum(axis=0).astype(np.float64)
    null = np.empty(len(assignments), dtype=np.float64)
    for start in range(0, len(assignments), chunk_size):
        chunk = assignments[start : start + chunk_size]
        one_hot = np.zeros((len(chunk), n_groups - 1, chunk.shape[1]), dtype=np.float32)
        batch, speaker = np.nonzero(chunk < n_groups - 1)
        one_hot[batch, chunk[batch, speaker], speaker] = 1.0
        leading = (
            (one_hot.reshape(-1, chunk.shape[1]) @ counts).reshape(len(chunk), n_groups - 1, -1).astype(np.float64)
        )
        last = total_counts - leading.sum(axis=1, keepdims=True)
        group_counts = np.concatenate([leading, last], axis=1)
        null[start : start + chunk_size] = mean_over_measured(
            ntvd_from_group_counts(group_counts, tensor.attribute_of_column, n_attributes)
        )
    return null


def _two_group_null(tensor: CountTensor, assignments: np.ndarray, chunk_size: int) -> np.ndarray:
    """Two groups: Pbar = (P_1 + P_2) / 2, so eq. 4-5 reduce to nTVD(a) = 100 * 1/2 sum_v |P_1(v) - P_2(v)|,
    for an attribute both groups state a retained value of; the others are left out of the permutation's mean.

    One float32 product (one multi-threaded BLAS call for all permutations) gives, per permutation,
    group 1's value counts and its per-attribute totals (the count matrix is extended by each speaker's
    per-attribute totals); group 2's are the remainders. The element-wise rest runs in chunks on a few
    threads (numpy releases the GIL in its array loops); each chunk writes its own slice.
    """
    n_attributes = len(tensor.attributes)
    starts = np.searchsorted(tensor.attribute_of_column, np.arange(n_attributes))
    speaker_totals = np.add.reduceat(tensor.counts, starts, axis=1)
    extended = np.hstack([tensor.counts, speaker_totals]).astype(np.float32)
    grand = extended.sum(axis=0).astype(np.float64)
    n_values = tensor.counts.shape[1]
    null = np.empty(len(assignments), dtype=np.float64)

    first_counts = (assignments == 0).astype(np.float32) @ extended

    def run(start: int) -> None:
        first = first_counts[start : start + chunk_size].astype(np.float64)
        second = grand - first
        first_share = _shares(first[:, :n_values], first[:, n_values:], tensor.attribute_of_column)
        second_share = _shares(second[:, :n_values], second[:, n_values:], tensor.attribute_of_column)
        distance = np.add.reduceat(np.abs(first_share - second_share), starts, axis=1)
        both_present = (first[:, n_values:] > 0) & (second[:, n_values:] > 0)
        null[start : start + chunk_size] = mean_over_measured(np.where(both_present, 50.0 * distance, np.nan))

    chunks = range(0, len(assignments), chunk_size)
    if len(chunks) == 1:
        run(0)
    else:
        with ThreadPoolExecutor(max_workers=min(len(chunks), os.cpu_count() or 1, 4)) as pool:
            list(pool.map(run, chunks))
    return null


def _shares(counts: np.ndarray, totals: np.ndarray, attribute_of_column: np.ndarray) -> np.ndarray:
    inverse = np.divide(1.0, totals, out=np.zeros_like(totals), where=totals > 0)
    return counts * inverse[:, attribute_of_column]


def permutation_test(
    table: pd.DataFrame, tau: int = 10, n_permutations: int = 10_000, seed: int = 0
) -> PermutationResult:
    """Speaker-level permutation test of the mean nTVD (VIBE §II-D).

    In each of B permutations the speakers are reassigned to groups with the number of speakers per
    group fixed, and the mean nTVD is recomputed. The tau filter uses counts over the whole table, which
    permutations do not change. p = (1 + #{b : null_b >= observed}) / (B + 1), so p lies in (0, 1]. A
    permutation under which no attribute has two groups stating it (its mean is NaN) counts as reaching the
    observed value: the test stays conservative. An observed NaN (nothing comparable) gives p = NaN.
    """
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    return tensor_permutation_test(count_tensor(table, tau), n_permutations, seed)


def tensor_permutation_test(tensor: CountTensor, n_permutations: int, seed: int) -> PermutationResult:
    """:func:`permutation_test` of a count tensor already built (and filtered by tau): what the gate runs after
    :func:`count_tensor`, for callers that hold per-speaker counts (the replay benchmark's seed distribution)."""
    n_groups = len(tensor.groups)
    if n_groups < 2:
        raise ValueError(f"the permutation test needs at least 2 groups, got {list(tensor.groups)}")
    sizes = tuple(int(n) for n in np.bincount(np.asarray(tensor.speaker_group), minlength=n_groups))
    floor = PermutationFloor(test=GROUP_PERMUTATION, units=sizes, permutations=n_permutations)
    if len(tensor.attributes) == 0:
        return PermutationResult(float("nan"), float("nan"), np.empty(0), n_permutations, seed, floor)
    observed = float(permutation_null(tensor, tensor.speaker_group[None, :])[0])
    if np.isnan(observed):
        return PermutationResult(observed, float("nan"), np.empty(0), n_permutations, seed, floor)
    assignments = speaker_permutations(tensor.speaker_group, n_permutations, seed)
    null = permutation_null(tensor, assignments)
    exceed = int(np.count_nonzero(np.isnan(null) | (null >= observed - 1e-9 * max(1.0, observed))))
    return PermutationResult(observed, (1 + exceed) / (n_permutations + 1), null, n_permutations, seed, floor)


@dataclasses.dataclass(frozen=True)
class PairedDifferenceResult:
    """Candidate minus baseline mean nTVD on the same speakers, with a one-sided paired permutation test.

    ``p_value`` = (1 + #{null >= difference}) / (B + 1): small when the candidate is more biased.
    """

    candidate: float
    baseline: float
    difference: float
    p_value: float
    null: np.ndarray
    n_permutations: int
    seed: int


def paired_ntvd_difference(
    candidate: pd.DataFrame, baseline: pd.DataFrame, tau: int = 10, n_permutations: int = 10_000, seed: int = 0
) -> PairedDifferenceResult:
    """Is the candidate checkpoint more biased than the baseline on the same speakers? (release gating)

    Both long tables (``speaker, group, attribute, value``) come from the same utterances. The value set
    is fixed to the values reaching ``tau`` in either checkpoint's own table, so that both nTVDs are
    measured on common ground. Under the null hypothesis the two checkpoints are exchangeable within a
    speaker: each permutation swaps, for every speaker independently with probability 1/2, which
    checkpoint that speaker's answers belong to (a speaker-level sign-flip), and recomputes
    nTVD(candidate) - nTVD(baseline).
    """
    prepared = _paired_counts(candidate, baseline, tau)
    if prepared is None:
        nan = float("nan")
        return PairedDifferenceResult(nan, nan, nan, nan, np.empty(0), n_permutations, seed)
    speakers, group_index, n_groups, counts, attribute_of_column, n_attributes = prepared
    membership = (group_index[None, :] == np.arange(n_groups)[:, None]).astype(np.float64)

    def mean_ntvd(group_counts: np.ndarray) -> np.ndarray:
        return mean_over_measured(ntvd_from_group_counts(group_counts, attribute_of_column, n_attributes))

    candidate_groups, baseline_groups = membership @ counts["candidate"], membership @ counts["baseline"]
    observed_candidate, observed_baseline = float(mean_ntvd(candidate_groups)), float(mean_ntvd(baseline_groups))
    flips = np.random.default_rng(seed).integers(0, 2, size=(n_permutations, len(speakers))).astype(np.float64)
    change = counts["baseline"] - counts["candidate"]
    null = np.empty(n_permutations)
    for start in range(0, n_permutations, 1_000):
        chunk = flips[start : start + 1_000]
        weighted = (chunk[:, None, :] * membership[None, :, :]).reshape(-1, len(speakers))
        moved = (weighted @ change).reshape(len(chunk), n_groups, -1)
        side_candidate = candidate_groups + moved
        side_baseline = baseline_groups - moved
        null[start : start + 1_000] = mean_ntvd(side_candidate) - mean_ntvd(side_baseline)
    difference = observed_candidate - observed_baseline
    exceed = int(np.count_nonzero(np.isnan(null) | (null >= difference - 1e-9 * max(1.0, abs(difference)))))
    return PairedDifferenceResult(
        observed_candidate,
        observed_baseline,
        difference,
        (1 + exceed) / (n_permutations + 1),
        null,
        n_permutations,
        seed,
    )


def paired_ntvd_excess(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    tau: int = 10,
    *,
    n_boot: int = 1000,
    n_exchanges: int = 64,
    alpha: float = 0.05,
    seed: int = 0,
) -> PairedBootstrapResult:
    """The release comparison of two checkpoints' *systematic* group effects (issue 45): each checkpoint's mean nTVD
    beyond its own group-exchange null, and the paired speaker bootstrap of their difference.

    nTVD is non-negative and grows with any difference between the groups' answer distributions, systematic or
    not: the answers of a handful of speakers per group differ by chance, the more so the more diverse (or the more
    redrawn, under a sampling decoder) the answers, so a fair checkpoint with more diverse answers has a larger nTVD
    than a fair one with concentrated answers, and compared by raw nTVD it looks worse. Under "the group does not
    move the answers" the speakers' group labels are exchangeable (the null of :func:`permutation_test`), so the
    chance part of nTVD is its expectation under permuting the labels among speakers, and the systematic part is
    the excess::

        E(X)    = T(X, groups) - mean_m T(X, groups permuted by pi_m)
        delta   = E(candidate) - E(baseline)
        delta_b = E(candidate under draw b) - E(baseline under draw b)

    with ``T`` the mean nTVD over attributes (VIBE §II-D eq. 2-5) on the values reaching ``tau`` in either
    checkpoint's own table (fixed once, as :func:`paired_ntvd_difference` does), ``pi_m`` ``n_exchanges`` uniform
    permutations of the speakers' labels (group sizes kept; the same for both checkpoints and every replicate, so
    that their Monte Carlo error largely cancels in the difference), and draw ``b`` speakers resampled with
    replacement within their group (:func:`harness.metrics.paired.speaker_draws`, the same for both; a drawn
    speaker keeps its weight under the permutation). Under the null ``E`` has expectation 0 whatever the answers'
    diversity (``T(X, groups)`` is then itself one draw of the permutation distribution); a systematic effect moves
    it beyond the permuted values and stays.

    Both long tables (``speaker, group, attribute, value``) come from the same utterances; a ``ValueError`` when
    their speakers or groups differ or no replicate is finite. Returns a
    :class:`~harness.metrics.paired.PairedBootstrapResult` whose ``candidate``, ``baseline`` are the excesses (NaN,
    with no replicates, when no value reaches tau)."""
    prepared = _paired_counts(candidate, baseline, tau)
    if prepared is None:
        nan = float("nan")
        return PairedBootstrapResult(nan, nan, nan, nan, nan, n_boot, seed)
    speakers, group_index, n_groups, counts, attribute_of_column, n_attributes = prepared
    rng = np.random.default_rng(seed)
    labels = np.stack([rng.permutation(group_index) for _ in range(n_exchanges)])
    exchanged = (labels[:, None, :] == np.arange(n_groups)[None, :, None]).astype(np.float64)  # (M, G, S)
    membership = (group_index[None, :] == np.arange(n_groups)[:, None]).astype(np.float64)  # (G, S)
    draws = np.vstack([np.ones((1, len(speakers))), speaker_draws(group_index, n_boot, int(rng.integers(2**31)))])
    chunk = max(1, 4_000_000 // max(1, n_exchanges * n_groups * len(attribute_of_column)))

    def mean_ntvd(group_counts: np.ndarray) -> np.ndarray:
        return mean_over_measured(ntvd_from_group_counts(group_counts, attribute_of_column, n_attributes))

    def excess(values: np.ndarray) -> np.ndarray:
        out = np.empty(len(draws))
        for start in range(0, len(draws), chunk):
            weighted = draws[start : start + chunk, :, None] * values[None]  # (B, S, V)
            observed = membership @ weighted  # (B, G, V): einsum "bs,gs,sv->bgv" as one BLAS product
            permuted = (exchanged.reshape(-1, len(speakers)) @ weighted).reshape(
                len(weighted), *exchanged.shape[:2], -1
            )
            with warnings_ignored():
                out[start : start + chunk] = mean_ntvd(observed) - np.nanmean(mean_ntvd(permuted), axis=1)
        return out

    return excess_difference(excess(counts["candidate"]), excess(counts["baseline"]), group_index, n_boot, alpha, seed)


def _paired_counts(candidate: pd.DataFrame, baseline: pd.DataFrame, tau: int):
    """Both checkpoints' per-speaker counts on the values reaching ``tau`` in either one's own table: (speakers,
    each speaker's group index, the number of groups, name -> (S, V) counts, each column's attribute index, the
    number of attributes); None when no value reaches tau. ``ValueError`` when the speakers or groups differ."""
    tables = {"candidate": validate_long_table(candidate), "baseline": validate_long_table(baseline)}
    speaker_groups = {name: table.groupby("speaker")["group"].first() for name, table in tables.items()}
    if not speaker_groups["candidate"].sort_index().equals(speaker_groups["baseline"].sort_index()):
        raise ValueError("candidate and baseline tables must hold the same speakers with the same groups")
    kept = (
        pd.concat(
            [
                table.groupby(["attribute", "value"])
                .size()
                .loc[lambda counts: counts >= tau]
                .index.to_frame(index=False)
                for table in tables.values()
            ]
        )
        .drop_duplicates()
        .sort_values(["attribute", "value"])
        .reset_index(drop=True)
    )
    if kept.empty:
        return None
    speakers = speaker_groups["candidate"].sort_index()
    group_index, groups = pd.factorize(speakers.to_numpy(), sort=True)
    counts = {name: _counts_on_columns(table, speakers.index, kept) for name, table in tables.items()}
    attributes = sorted(kept["attribute"].unique())
    attribute_of_column = np.searchsorted(
        np.asarray(attributes, dtype=object), kept["attribute"].to_numpy(dtype=object)
    )
    return speakers, group_index, len(groups), counts, attribute_of_column, len(attributes)


def _counts_on_columns(table: pd.DataFrame, speakers: pd.Index, columns: pd.DataFrame) -> np.ndarray:
    counts = table.groupby(["speaker", "attribute", "value"]).size().rename("n").reset_index()
    counts = counts.merge(columns.reset_index(names="column"), on=["attribute", "value"])
    matrix = np.zeros((len(speakers), len(columns)))
    np.add.at(matrix, (speakers.get_indexer(counts["speaker"]), counts["column"].to_numpy()), counts["n"].to_numpy())
    return matrix


def long_table_to_counts(table: pd.DataFrame) -> dict[str, list]:
    """A compact, JSON-ready form of a long table: per-speaker value counts (for results.json)."""
    frame = validate_long_table(table)
    counts = frame.groupby(["speaker", "group", "attribute", "value"]).size().rename("count").reset_index()
    return {column: counts[column].tolist() for column in ("speaker", "group", "attribute", "value", "count")}


def counts_to_long_table(counts: dict[str, list]) -> pd.DataFrame:
    """Inverse of :func:`long_table_to_counts`."""
    frame = pd.DataFrame(counts)
    repeated = frame.loc[frame.index.repeat(frame["count"].astype(int))]
    return repeated[["speaker", "group", "attribute", "value"]].reset_index(drop=True)
