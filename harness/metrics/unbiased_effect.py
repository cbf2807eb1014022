"""Unbiased estimates of a squared systematic effect, and their paired release test (issue 58, item 1).

The release excesses (:func:`harness.metrics.counterfactual.paired_excess_bootstrap`,
:func:`harness.metrics.ntvd.paired_ntvd_excess`) subtract a magnitude's expectation under exchange. That is 0 in
expectation with no effect, but with an effect ``Delta`` it behaves like ``E|Delta + noise| - E|noise|``, which falls
as the answer noise grows: two checkpoints with the same systematic effect and different answer noise (greedy and
sampling decoding) read differently. A U-statistic of the *squared* effect has no such term: the cross products of
independent speakers have the product of their means as expectation, whatever each speaker's noise.

**Counterfactual** (:func:`counterfactual_squared_effect`; the same recordings answered in two arms). Per swap
direction and attribute, speaker ``s`` (of ``S`` in the direction) has the signed per-value share contrast::

    d_s(v) = n_s(swap, v) / n_s(swap) - n_s(identity, v) / n_s(identity)

(its shares of the attribute's stated values in each arm). The systematic effect is ``mu = E d_s`` (the mean over
speakers of their expected contrast), and::

    U = 1 / (S (S - 1)) sum_{s != t} <d_s, d_t> = (||sum_s d_s||^2 - sum_s ||d_s||^2) / (S (S - 1))

has ``E U = ||mu||^2`` for independent speakers (Hoeffding 1948), at any effect and any per-speaker noise.

**Between groups** (:func:`group_squared_distance`; the nTVD design, VIBE §II-D). Per attribute, speaker ``s`` has
its value shares ``x_s(v)`` (eq. 2 on its own answers); a group's mean answer distribution is ``m_g = E x_s``. For
a pair of groups ``g, h`` with ``n_g, n_h`` speakers the two-sample U-statistic::

    U_gh = 1 / (n_g (n_g - 1)) sum_{i != j in g} <x_i, x_j> + 1 / (n_h (n_h - 1)) sum_{i != j in h} <x_i, x_j>
           - 2 / (n_g n_h) sum_{i in g, j in h} <x_i, x_j>

is unbiased for ``||m_g - m_h||^2``; with more than two groups the statistic is the mean over pairs of groups.

**Scale.** Every estimate is reported in *squared points*, ``Q = 100^2 / 2 * U`` (a mean over the measured
cells: directions x attributes, or attributes), and read as ``P = sqrt(max(Q, 0))`` points
(:func:`to_points`). For an effect that moves a share ``delta`` between two values, ``||mu||^2 = 2 delta^2`` and
``P = 100 delta``, the (arm) nTVD; in general ``P <= nTVD`` (for vectors summing to 0, ``||mu||_2 <= ||mu||_1 /
sqrt 2``), and over several cells ``P`` is their root mean square where nTVD takes the mean. ``P`` is not unbiased
(a square root), so the test is on ``Q``; a margin ``m`` in points is carried to ``Q``'s scale by
:func:`margin_in_squares`: ``Q_c - Q_b > (P_b + m)^2 - Q_b`` exactly when ``P_c > P_b + m``.

**Paired test** (:func:`paired_counterfactual_u_test`, :func:`paired_group_u_test`). Both checkpoints answered the
same recordings, so ``D = Q(candidate) - Q(baseline)`` is unbiased for the change of the squared systematic effect,
and is tested one-sided for worsening by the stratified (grouped) delete-one-speaker jackknife, each speaker left
out of both checkpoints at once (Arvesen 1969 for two-sample U-statistics)::

    se^2 = sum_g (n_g - 1) / n_g sum_{i in g} (D_(i) - mean_{j in g} D_(j))^2
    p    = P(T > D / se),  T ~ Student t with sum_g (n_g - 1) df

(``g`` the speakers' strata: swap directions, or groups). The leave-one-out values come in closed form from the
sums above, so the test costs one pass over the data (no resampling: the bootstrap would pair a speaker with its own
copies, and ``<d_s, d_s>`` is the noise the U-statistic leaves out). The result is a
:class:`harness.metrics.paired.PairedTest` on the ``Q`` scale, ``resampled`` "speakers (jackknife)".

**Which scale.** ``D`` is unbiased for ``||mu_c||^2 - ||mu_b||^2`` at every effect, so its test holds its level
wherever the two effects are equal, zero or not, whatever each checkpoint's noise. Its price is power against a
growth from no effect: there the standard error of ``Q_c`` is about ``2 ||mu|| sigma / sqrt(S)`` (the delta method,
``sigma^2`` the speakers' variance along ``mu``), so ``D / se`` is half the ``||mu|| sqrt(S) / sigma`` of a test on
``P``. The ``points`` scale (``scale="points"``: ``P_c - P_b`` with the jackknife of ``P = sqrt(max(Q, 0))``) has
that power and the same test to first order at equal non-zero effects, but ``P`` is biased up at no effect (the
truncated root of a zero-mean estimate), by more the noisier the checkpoint: it trades back some of the bias this
module removes. ``benchmarks/bench_release_noise.py`` measures both.

A speaker enters a cell when it has answers in both arms (counterfactual) or any answer (between groups) for the
attribute; a cell is measured when every stratum it spans has at least 3 such speakers in both checkpoints (so that
every leave-one-out value is defined), and the statistic is the mean over the cells measured in both checkpoints.
Speakers count alike (a per-speaker mean; nTVD pools answers, which is the same when speakers answer equally often).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from harness.metrics.paired import PairedTest

SQUARED_POINTS = 100.0**2 / 2.0
"""``Q = SQUARED_POINTS * ||mu||^2``: the squared nTVD points of an effect moving a share between two values."""

FEWEST_SPEAKERS = 3
"""The fewest speakers a stratum needs in a cell for the cell to be measured (its leave-one-out U defined)."""

RESAMPLED = "speakers (jackknife)"
SEPARATOR = "\t"
"""The column separator of :func:`harness.metrics.counterfactual.speaker_arm_sums` (``arm<TAB>attribute<TAB>value``)."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One measured cell's speaker data: ``members`` (indices into the table's sorted speakers) and ``vectors`` (one
    row per member: its contrast ``d_s`` or its shares ``x_s``), ``group_of_member`` (the members' strata codes)."""

    members: np.ndarray
    vectors: np.ndarray
    group_of_member: np.ndarray


@dataclasses.dataclass(frozen=True)
class SquaredEffect:
    """A checkpoint's unbiased squared systematic effect ``squared`` (Q, squared points), its ``points``
    (``sqrt(max(Q, 0))``) and the ``cells`` it averages (NaN and 0 when none is measured)."""

    squared: float
    points: float
    cells: int


def to_points(squared: float) -> float:
    """``P = sqrt(max(Q, 0))``: squared points read as points (NaN stays NaN)."""
    return float(np.sqrt(max(squared, 0.0))) if np.isfinite(squared) else float("nan")


def margin_in_squares(margin: float, baseline_squared: float) -> float:
    """A worsening margin ``m`` in points on the squared scale at the baseline's estimate ``Q_b``:
    ``(P_b + m)^2 - Q_b`` with ``P_b = sqrt(max(Q_b, 0))``, so ``Q_c - Q_b`` exceeds it exactly when ``P_c > P_b + m``."""
    return (to_points(baseline_squared) + margin) ** 2 - baseline_squared


# ------------------------------------------------------------------------------------------ U-statistics


def one_sample_u(vectors: np.ndarray) -> float:
    """``(||sum_s d_s||^2 - sum_s ||d_s||^2) / (S (S - 1))`` over the rows ``d_s`` of ``vectors`` (S, V): the mean
    inner product of distinct rows, unbiased for ``||E d||^2``; NaN for fewer than 2 rows."""
    count = len(vectors)
    if count < 2:
        return float("nan")
    total = vectors.sum(axis=0)
    return float((total @ total - np.sum(vectors * vectors)) / (count * (count - 1)))


def one_sample_u_leave_one_out(vectors: np.ndarray) -> np.ndarray:
    """(S,): :func:`one_sample_u` with each row left out in turn, in closed form from the full sums."""
    count = len(vectors)
    norms = np.sum(vectors * vectors, axis=1)
    rest = vectors.sum(axis=0)[None, :] - vectors
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.sum(rest * rest, axis=1) - (norms.sum() - norms)) / ((count - 1) * (count - 2))


def group_u(vectors: np.ndarray, groups: np.ndarray) -> float:
    """The mean over pairs of groups ``g < h`` of the two-sample U-statistic ``U_gh`` (module docstring), unbiased
    for the mean of ``||m_g - m_h||^2``; ``vectors`` (S, V) the speakers' shares, ``groups`` (S,) their groups. NaN
    when fewer than 2 groups have 2 speakers each."""
    return float(_group_u_with_leave_one_out(vectors, groups)[0])


def group_u_leave_one_out(vectors: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """(S,): :func:`group_u` with each speaker left out in turn, in closed form from the Gram matrix's block sums."""
    return _group_u_with_leave_one_out(vectors, groups)[1]


def _group_u_with_leave_one_out(vectors: np.ndarray, groups: np.ndarray) -> tuple[float, np.ndarray]:
    """Within a group ``g`` (``n`` speakers, Gram block sum ``A`` with trace ``t``) the mean of distinct pairs is
    ``(A - t) / (n (n - 1))``; leaving out its speaker ``i`` (row sum ``r_i`` within ``g``, ``K_ii`` its own inner
    product) removes ``2 (r_i - K_ii)`` from ``A - t``. Across groups ``g, h`` the mean ``C / (n_g n_h)`` loses
    ``i``'s row sum into ``h``."""
    names = [name for name in np.unique(groups) if np.sum(groups == name) >= 2]
    if len(names) < 2:
        return float("nan"), np.full(len(vectors), np.nan)
    gram = vectors @ vectors.T
    masks = {name: groups == name for name in names}
    sizes = {name: int(mask.sum()) for name, mask in masks.items()}
    rows = {name: gram[:, mask].sum(axis=1) for name, mask in masks.items()}  # (S,): each speaker's sum into a group
    diagonal = np.diag(gram)
    within, within_out, cross, cross_out = {}, {}, {}, {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, mask in masks.items():
            n, off = sizes[name], rows[name][mask].sum() - diagonal[mask].sum()
            within[name] = off / (n * (n - 1))
            left = np.full(len(vectors), within[name])
            left[mask] = (off - 2.0 * (rows[name][mask] - diagonal[mask])) / ((n - 1) * (n - 2))
            within_out[name] = left
        for a, first in enumerate(names):
            for second in names[a + 1 :]:
                total = rows[second][masks[first]].sum()
                cross[first, second] = total / (sizes[first] * sizes[second])
                left = np.full(len(vectors), cross[first, second])
                left[masks[first]] = (total - rows[second][masks[first]]) / ((sizes[first] - 1) * sizes[second])
                left[masks[second]] = (total - rows[first][masks[second]]) / (sizes[first] * (sizes[second] - 1))
                cross_out[first, second] = left
    pairs = list(cross)
    full = np.mean([within[g] + within[h] - 2.0 * cross[g, h] for g, h in pairs])
    out = np.mean([within_out[g] + within_out[h] - 2.0 * cross_out[g, h] for g, h in pairs], axis=0)
    return float(full), out


# ------------------------------------------------------------------------------------------ cells from tables


def _shares(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row shares of ``counts`` (S, V) and which rows have any count."""
    totals = counts.sum(axis=1)
    stated = totals > 0
    return np.divide(counts, totals[:, None], out=np.zeros_like(counts), where=stated[:, None]), stated


def counterfactual_cells(
    arm_sums: pd.DataFrame,
    retained: Mapping[str, Collection[tuple[str, str]]] | None = None,
    arms: tuple[str, str] = ("identity", "swap"),
) -> dict[tuple[str, str], Cell]:
    """Per (direction, attribute), the speakers' share contrasts ``d_s`` (swap minus identity) from per-speaker arm
    sums (:func:`harness.metrics.counterfactual.speaker_arm_sums` ``vibe``: index speaker, column ``group`` the swap
    direction, columns ``arm<TAB>attribute<TAB>value`` counts), over the direction's ``retained`` (attribute, value)
    pairs (:func:`harness.metrics.counterfactual.retained_values`; every value when None). Speakers are indexed in
    sorted order; a speaker enters a cell when it states a value of the attribute in both arms."""
    table = arm_sums.sort_index()
    groups = table["group"].astype(str).to_numpy()
    parsed = {}
    for name in table.columns:
        if name == "group":
            continue
        arm, attribute, value = str(name).split(SEPARATOR, 2)
        if arm not in arms:
            raise ValueError(f"counterfactual_cells: column {name!r} names arm {arm!r}, not one of {list(arms)}")
        parsed[name] = (arm, attribute, value)
    counts = table.drop(columns="group").to_numpy(dtype=float)
    position = {key: k for k, key in enumerate(parsed.values())}
    cells = {}
    for direction in sorted(set(groups)):
        in_direction = np.flatnonzero(groups == direction)
        kept = None if retained is None else set(retained.get(direction, ()))
        for attribute in sorted({attribute for _, attribute, _ in parsed.values()}):
            values = sorted({v for _, a, v in parsed.values() if a == attribute and (kept is None or (a, v) in kept)})
            if not values:
                continue
            arm_shares = []
            for arm in arms:
                columns = [position.get((arm, attribute, value), -1) for value in values]
                padded = np.concatenate([counts[in_direction], np.zeros((len(in_direction), 1))], axis=1)
                arm_shares.append(_shares(padded[:, columns]))
            (first, first_stated), (second, second_stated) = arm_shares
            both = first_stated & second_stated
            cells[direction, attribute] = Cell(in_direction[both], (second - first)[both], groups[in_direction[both]])
    return cells


def group_cells(counts: np.ndarray, groups: np.ndarray, attribute_of_column: np.ndarray) -> dict[int, Cell]:
    """Per attribute index, the speakers' value shares ``x_s`` from per-speaker counts (S, V) whose columns belong to
    the attributes ``attribute_of_column``; a speaker enters an attribute's cell when it states one of its values."""
    cells = {}
    for attribute in np.unique(attribute_of_column):
        shares, stated = _shares(counts[:, attribute_of_column == attribute])
        members = np.flatnonzero(stated)
        cells[int(attribute)] = Cell(members, shares[members], groups[members])
    return cells


# ------------------------------------------------------------------------------------------ estimates and tests


def _measured(cell: Cell, strata: int) -> bool:
    _, sizes = np.unique(cell.group_of_member, return_counts=True)
    return len(sizes) == strata and bool(np.all(sizes >= FEWEST_SPEAKERS))


def _cell_values(cell: Cell, speakers: int, kind: str) -> tuple[float, np.ndarray]:
    """A cell's Q and its (speakers,) leave-one-out Q (the full value for a speaker not in the cell)."""
    if kind == "one":
        full, left = one_sample_u(cell.vectors), one_sample_u_leave_one_out(cell.vectors)
    else:
        full, left = (
            group_u(cell.vectors, cell.group_of_member),
            group_u_leave_one_out(cell.vectors, cell.group_of_member),
        )
    out = np.full(speakers, SQUARED_POINTS * full)
    out[cell.members] = SQUARED_POINTS * left
    return SQUARED_POINTS * full, out


def _estimate(cells: Mapping, keys: list, speakers: int, kind: str) -> tuple[float, np.ndarray]:
    """The mean over ``keys`` of the cells' Q, and its (speakers,) leave-one-out values."""
    if not keys:
        return float("nan"), np.full(speakers, np.nan)
    values = [_cell_values(cells[key], speakers, kind) for key in keys]
    return float(np.mean([full for full, _ in values])), np.mean([left for _, left in values], axis=0)


def counterfactual_squared_effect(
    arm_sums: pd.DataFrame, retained: Mapping[str, Collection[tuple[str, str]]] | None = None
) -> SquaredEffect:
    """One checkpoint's counterfactual ``Q``: the mean over measured (direction, attribute) cells of
    ``SQUARED_POINTS * U`` (:func:`one_sample_u` of the share contrasts, :func:`counterfactual_cells`)."""
    cells = counterfactual_cells(arm_sums, retained)
    keys = [key for key, cell in cells.items() if _measured(cell, 1)]
    squared, _ = _estimate(cells, keys, len(arm_sums), "one")
    return SquaredEffect(squared, to_points(squared), len(keys))


def group_squared_distance(counts: np.ndarray, groups: np.ndarray, attribute_of_column: np.ndarray) -> SquaredEffect:
    """One checkpoint's between-group ``Q``: the mean over measured attributes of ``SQUARED_POINTS * group_u`` of the
    speakers' value shares (:func:`group_cells`); an attribute is measured when every group has 3 speakers stating
    it (the nTVD check's groups are two; with more, every group must)."""
    cells = group_cells(counts, np.asarray(groups), attribute_of_column)
    strata = len(np.unique(groups))
    keys = [key for key, cell in cells.items() if _measured(cell, strata)]
    squared, _ = _estimate(cells, keys, len(counts), "group")
    return SquaredEffect(squared, to_points(squared), len(keys))


SCALES = ("squared", "points")
"""The scale a paired test is on: ``squared`` (``Q``, unbiased: the default) or ``points`` (``P = sqrt(max(Q, 0))``,
module docstring)."""


def _jackknife_test(
    candidate: tuple[float, np.ndarray], baseline: tuple[float, np.ndarray], strata: np.ndarray, scale: str
) -> PairedTest:
    """The one-sided test of ``D = Q_c - Q_b`` (or ``P_c - P_b`` on the ``points`` scale) by the stratified
    delete-one-speaker jackknife (module docstring)."""
    from scipy.stats import t as student_t

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
    if scale == "points":
        candidate, baseline = (
            (to_points(full), np.sqrt(np.maximum(left, 0.0))) for full, left in (candidate, baseline)
        )
    difference = candidate[0] - baseline[0]
    left = candidate[1] - baseline[1]
    names, sizes = np.unique(strata, return_counts=True)
    df = float(max(1, int(np.sum(sizes - 1))))
    reason = None
    if not np.isfinite(difference) or not np.all(np.isfinite(left)):
        reason = "no cell is measured in both runs (each needs 3 speakers per stratum stating the attribute)"
        variance = float("nan")
    else:
        variance = 0.0
        for name, size in zip(names, sizes, strict=True):
            within = left[strata == name]
            variance += (size - 1) / size * float(np.sum((within - within.mean()) ** 2))
        if variance <= 1e-24 * max(1.0, difference**2):
            reason = (
                f"every leave-one-out difference is the same ({difference:+.4g}): the paired contrast cannot vary, "
                "so its uncertainty is not estimable"
            )
    common = {"candidate": candidate[0], "baseline": baseline[0], "difference": difference, "worsening": difference}
    if reason is not None:
        return PairedTest(**common, df=df, estimable=False, reason=reason, resampled=RESAMPLED)
    se = float(np.sqrt(variance))
    half = float(student_t(df).ppf(0.975)) * se
    return PairedTest(
        **common,
        ci_low=difference - half,
        ci_high=difference + half,
        se=se,
        df=df,
        p_worse=float(student_t(df).sf(difference / se)),
        estimable=True,
        resampled=RESAMPLED,
    )


def _same_speakers(candidate: pd.DataFrame, baseline: pd.DataFrame) -> None:
    if not candidate.index.equals(baseline.index) or not candidate["group"].equals(baseline["group"]):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")


def paired_counterfactual_u_test(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    retained: Mapping[str, Collection[tuple[str, str]]] | None = None,
    *,
    scale: str = "squared",
) -> PairedTest:
    """The release test of two checkpoints' counterfactual effects on the same recordings: ``D = Q_c - Q_b`` over the
    (direction, attribute) cells measured in both, tested one-sided (higher is worse) by the stratified jackknife
    over speakers (strata: the swap directions). Tables as for :func:`counterfactual_cells` (their value columns may
    differ; a missing one counts 0); ``ValueError`` when their speakers or directions differ. ``scale`` ``squared``
    (default): on the ``Q`` scale, compare ``worsening`` with :func:`margin_in_squares` of the margin at
    ``baseline``; ``points``: ``P_c - P_b`` (module docstring, "Which scale"), compared with the margin itself."""
    candidate, baseline = candidate.sort_index(), baseline.sort_index()
    _same_speakers(candidate, baseline)
    strata = candidate["group"].astype(str).to_numpy()
    cells = [counterfactual_cells(table, retained) for table in (candidate, baseline)]
    keys = [key for key in cells[0] if key in cells[1] and all(_measured(run[key], 1) for run in cells)]
    estimates = [_estimate(run, keys, len(candidate), "one") for run in cells]
    return _jackknife_test(estimates[0], estimates[1], strata, scale)


def paired_group_u_test(
    candidate: pd.DataFrame, baseline: pd.DataFrame, tau: int = 10, *, scale: str = "squared"
) -> PairedTest:
    """The release test of two checkpoints' between-group effects on the same utterances: ``D = Q_c - Q_b`` over the
    attributes measured in both, on the values reaching ``tau`` in either checkpoint's own table (the nTVD release
    comparison's columns, :func:`harness.metrics.ntvd.paired_ntvd_excess`), tested one-sided (higher is worse) by the
    stratified jackknife over speakers (strata: the groups). Long tables ``speaker, group, attribute, value``;
    ``ValueError`` when their speakers or groups differ. ``scale`` as for :func:`paired_counterfactual_u_test`."""
    from harness.metrics.ntvd import _paired_counts

    prepared = _paired_counts(candidate, baseline, tau)
    if prepared is None:
        nan = float("nan")
        return PairedTest(
            candidate=nan, baseline=nan, difference=nan, worsening=nan, estimable=False,
            reason=f"no value reaches tau = {tau}", resampled=RESAMPLED,
        )  # fmt: skip
    speakers, group_index, n_groups, counts, attribute_of_column, _ = prepared
    cells = [group_cells(counts[name], group_index, attribute_of_column) for name in ("candidate", "baseline")]
    keys = [key for key in cells[0] if key in cells[1] and all(_measured(run[key], n_groups) for run in cells)]
    estimates = [_estimate(run, keys, len(speakers), "group") for run in cells]
    return _jackknife_test(estimates[0], estimates[1], group_index, scale)
