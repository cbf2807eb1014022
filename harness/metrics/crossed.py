"""Group contrasts of per-(speaker, item) scores with a two-way (speaker x item) cluster bootstrap.

BASIS-Bench (§3.1-§3.3) and the semantic-aware WER study (§III) score every (speaker, item) pair: speakers
are nested in demographic groups, items (stereotype items, questions, sentences) are read by several
speakers and are crossed with them, or differ between groups. Both are samples: a gap between groups
must be judged against speaker-to-speaker *and* item-to-item variation. A bootstrap over speakers only
treats the items as fixed; with two speakers per group it can even be degenerate (every resample equal,
``16.7 to 16.7``) while the gap is nothing but which items each group happened to miss.

The statistic. For group ``g`` with rows ``r`` (one per answer; several per (speaker, item) cell are
allowed, e.g. option orders) the group mean is the ratio ``m_g = sum_r v_r / sum_r d_r`` of a ``value``
column and a ``denominator`` column (1 per row by default, so a plain mean; ``errors / words`` for WER).
Contrasts: ``difference`` ``m_a - m_b`` or ``log_ratio`` ``log(m_a / m_b)``, for a pair of groups, a
group against the rest pooled, or the best against the worst group (fixed at their observed order).

The bootstrap (Owen 2007, "The pigeonhole bootstrap", Ann. Appl. Stat. 1(2); McCullagh 2000, Bernoulli
6(2)). One replicate draws, independently, speakers with replacement within each group (``n_g`` draws of
the group's ``n_g`` speakers, giving counts ``a_s``) and items with replacement within each item stratum
(the items answered by the same set of groups; ``n_k`` draws of ``n_k``, counts ``b_i``); every row of
cell ``(s, i)`` gets the weight ``a_s * b_i``, and ``m*_g = sum a_s b_i v_r / sum a_s b_i d_r``. Under the
crossed random-effects model ``v_si = mu + A_s + B_i + E_si`` the variance of a mean over ``R`` speakers
and ``C`` items is ``sigma_A^2/R + sigma_B^2/C + sigma_E^2/(RC)``, and the product bootstrap's expected
variance is about ``sigma_A^2/R + sigma_B^2/C + 3 sigma_E^2/(RC)`` (the residual is counted by the speaker
draw, the item draw and their product): mildly conservative, by at most ``2 sigma_E^2/(RC)``, and no
two-way bootstrap is exactly unbiased (McCullagh 2000). With few speakers per group the speaker draw
underestimates: the bootstrap variance of a mean over ``n`` resampled units is ``(n - 1)/n`` times the
unbiased one, half of it at 2 speakers per group, the demo's design. So every interval and standard error
is widened about the estimate by ``sqrt(n / (n - 1))`` with ``n`` the fewest speakers or items of the
groups compared (:func:`small_sample_factor`: 1.41 at 2, 1.05 at 10, 1.01 at 45; the item draw has the
same bias). Intervals are these
widened percentile intervals ``est + f (q - est)``; the two-sided p-value of ``contrast = 0`` is the normal
one from the widened bootstrap standard error, ``2 Phi(-|est| / (f se*))``, so that it can be small enough
for a whole-gate correction (a percentile p-value cannot go below ``2 / (B + 1)``), referred to Student's
t with Welch-Satterthwaite degrees of freedom from the speaker-only and item-only bootstrap variances
(:func:`satterthwaite_df`), since with a handful of speakers or items the standard error is itself
uncertain; the interval is widened by the same ``t / z`` quantile ratio, and a difference's interval is
cut to the range a difference of two means can take (``±(max - min)`` of the row values: ±100 points for
percentages). ``CrossedGap.widen`` is the total
factor applied to the percentile interval about the estimate, ``CrossedGap.df`` the degrees of freedom.

Speakers nested in item sets (BASIS-Bench §3.1's classification pools several item sets, each read by its own
speakers). The speaker x item incidence then falls into blocks, the connected components of the graph joining
each speaker to the items it answered; a speaker of one set never meets another set's items. When there are
several blocks and each holds at least 2 speakers of every group it contains, a replicate draws speakers within
each (block, group) cell and items within each (block, stratum), so a resample keeps every set's speakers with
that set's items. The degrees of freedom follow the draw: the speaker part has ``sum_(b,g) (n_bg - 1)`` (the
demo's 2 sets x 2 groups x 2 speakers: 4, not the ``8 - 2 = 6`` of a pool of 4 speakers per group), the item
part ``n_items_g - (blocks holding g)``, and the widening ``sqrt(n / (n - 1))`` takes ``n`` from the smallest
cell (2 at the demo). A single block (speakers crossed with items) or a block with a lone speaker of a group
(items nested in speakers, e.g. each speaker reads its own sentences) is the crossed design above, unchanged.

Not estimable (``estimable=False`` with a ``reason``, interval and p NaN) rather than a degenerate
interval: a group with fewer than 2 speakers, an item stratum with fewer than 2 items, or a contrast
whose replicates never vary (all equal to the estimate).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.stats import norm
from scipy.stats import t as student_t

from harness.core.values import require_columns

DIFFERENCE = "difference"
LOG_RATIO = "log_ratio"
REST = "(rest)"


@dataclasses.dataclass(frozen=True)
class CrossedGap:
    """One group contrast with its two-way bootstrap interval.

    ``minuend``/``subtrahend`` name the groups (``subtrahend`` may be :data:`REST`); ``estimate`` is the
    contrast of the observed means on ``scale``; ``n_speakers``/``n_items`` count them per group.
    ``replicates`` holds the bootstrap contrasts (NaN where a resample left a group without weight).
    """

    minuend: str
    subtrahend: str
    scale: str
    estimate: float
    ci_low: float
    ci_high: float
    p_value: float
    se: float
    means: pd.Series
    n_speakers: pd.Series
    n_items: pd.Series
    n_boot: int
    level: float
    seed: int
    estimable: bool
    reason: str | None
    replicates: np.ndarray = dataclasses.field(repr=False)
    df: float = float("nan")
    widen: float = 1.0

    @property
    def label(self) -> str:
        return (
            f"{self.minuend} - {self.subtrahend}"
            if self.scale == DIFFERENCE
            else f"log({self.minuend} / {self.subtrahend})"
        )

    @property
    def significant(self) -> bool:
        """The interval excludes 0 (False when not estimable)."""
        return bool(self.estimable and (self.ci_low > 0 or self.ci_high < 0))


@dataclasses.dataclass(frozen=True)
class CrossedReplicates:
    """Observed and bootstrap group means: ``means`` (G,), ``replicates`` (B, G), columns in ``groups`` order."""

    groups: list[str]
    means: np.ndarray
    replicates: np.ndarray
    rest_means: np.ndarray
    rest_replicates: np.ndarray
    n_speakers: pd.Series
    n_items: pd.Series
    problems: list[str]
    seed: int
    speaker_replicates: np.ndarray | None = None
    item_replicates: np.ndarray | None = None
    rest_speaker_replicates: np.ndarray | None = None
    rest_item_replicates: np.ndarray | None = None
    value_range: tuple[float, float] = (float("nan"), float("nan"))
    """The smallest and largest row value (``value / denominator``): every group mean lies between them."""
    speaker_df: pd.Series | None = None
    """Per group, the speaker draw's degrees of freedom ``sum_b (n_bg - 1)`` over the blocks holding it."""
    item_df: pd.Series | None = None
    """Per group, the item draw's degrees of freedom: its items less the number of blocks holding it."""
    fewest: pd.Series | None = None
    """Per group, the fewest units of one draw: speakers of one (block, group) cell or items of one block."""
    n_blocks: int = 1
    """How many blocks the draw resamples within (1: speakers crossed with items, the plain two-way draw)."""


def _cells(table: pd.DataFrame, value: str, denominator: str | None, group: str, speaker: str, item: str):
    require_columns(
        table, [value, group, speaker, item] + ([denominator] if denominator else []), "crossed", nonempty=True
    )
    if table[[group, speaker, item]].isna().any().any():
        raise ValueError("crossed: group, speaker and item must not be missing")
    values = pd.to_numeric(table[value], errors="coerce").to_numpy(float)
    denominators = (
        np.ones(len(table))
        if denominator is None
        else pd.to_numeric(table[denominator], errors="coerce").to_numpy(float)
    )
    if np.isnan(values).any() or np.isnan(denominators).any():
        raise ValueError(f"crossed: {value!r} (and {denominator!r}) must be numeric and present in every row")
    straddling = table.groupby(speaker)[group].nunique()
    if (straddling > 1).any():
        raise ValueError(f"crossed: speaker {straddling.index[straddling > 1][0]!r} appears in several groups")
    return values, denominators


def crossed_replicates(
    table: pd.DataFrame,
    *,
    value: str,
    denominator: str | None = None,
    group: str = "group",
    speaker: str = "speaker",
    item: str = "item",
    n_boot: int = 2000,
    seed: int = 0,
) -> CrossedReplicates:
    """Group means and their two-way bootstrap replicates (module docstring), vectorised.

    Random-number protocol (the tests' brute force repeats it): ``rng = default_rng(seed)``; for each
    block (module docstring; one block when speakers and items are crossed) in order of its first item, for each
    group in sorted order that it holds, ``rng.integers(0, n_bg, (n_boot, n_bg))`` picks speaker positions
    (the cell's speakers sorted); then for each block, for each item stratum of the block in sorted order of
    its (sorted) group tuple, ``rng.integers(0, n_k, (n_boot, n_k))`` picks item positions (items sorted).
    """
    values, denominators = _cells(table, value, denominator, group, speaker, item)
    groups = sorted(table[group].astype(str).unique())
    speakers = sorted(table[speaker].astype(str).unique())
    items = sorted(table[item].astype(str).unique())
    s_index = {s: k for k, s in enumerate(speakers)}
    i_index = {i: k for k, i in enumerate(items)}
    s_codes = table[speaker].astype(str).map(s_index).to_numpy()
    i_codes = table[item].astype(str).map(i_index).to_numpy()
    group_of_speaker = table.groupby(table[speaker].astype(str))[group].first().astype(str).reindex(speakers).to_numpy()
    # per (speaker, item) sums of value and denominator
    num = np.zeros((len(speakers), len(items)))
    den = np.zeros((len(speakers), len(items)))
    np.add.at(num, (s_codes, i_codes), values)
    np.add.at(den, (s_codes, i_codes), denominators)
    groups_of_item = (
        table.groupby(table[item].astype(str))[group].agg(lambda g: tuple(sorted(set(g.astype(str))))).reindex(items)
    )

    present = np.zeros((len(speakers), len(items)), bool)
    present[s_codes, i_codes] = True
    speaker_block, item_block = design_blocks(present, group_of_speaker)
    blocks = sorted(set(speaker_block))

    rng = np.random.default_rng(seed)
    a = np.zeros((n_boot, len(speakers)))
    problems = []
    n_speakers, speaker_df, fewest = {}, dict.fromkeys(groups, 0), {}
    for block in blocks:
        for g in groups:
            members = np.flatnonzero((group_of_speaker == g) & (speaker_block == block))
            if len(blocks) > 1 and len(members) == 0:
                continue
            n_speakers[g] = n_speakers.get(g, 0) + len(members)
            speaker_df[g] += len(members) - 1
            fewest[g] = min(fewest.get(g, len(members)), len(members))
            if len(members) < 2:
                problems.append(f"group {g!r} has {len(members)} speaker(s); speaker variation needs at least 2")
            picks = rng.integers(0, len(members), size=(n_boot, len(members)))
            np.add.at(a, (np.arange(n_boot)[:, None], members[picks]), 1.0)
    b = np.zeros((n_boot, len(items)))
    items_of_block = {}
    for block in blocks:
        in_block = item_block == block
        for stratum in sorted({groups_of_item.iloc[k] for k in np.flatnonzero(in_block)}):
            members = np.flatnonzero(in_block & np.array([groups_of_item[i] == stratum for i in items]))
            for g in stratum:
                items_of_block[(block, g)] = items_of_block.get((block, g), 0) + len(members)
            if len(members) < 2:
                problems.append(
                    f"the items answered by {', '.join(stratum)} number {len(members)}; item variation needs at least 2"
                )
            picks = rng.integers(0, len(members), size=(n_boot, len(members)))
            np.add.at(b, (np.arange(n_boot)[:, None], members[picks]), 1.0)
    for (_, g), count in items_of_block.items():
        fewest[g] = min(fewest[g], count)
    item_df = {
        g: sum(n for (_, h), n in items_of_block.items() if h == g) - sum(h == g for _, h in items_of_block)
        for g in groups
    }

    n_items = pd.Series({g: int(sum(g in stratum for stratum in groups_of_item)) for g in groups}, name="items")
    num_g = np.array([num[group_of_speaker == g].sum() for g in groups])
    den_g = np.array([den[group_of_speaker == g].sum() for g in groups])

    def resampled(speaker_weights: np.ndarray, item_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sums = [
            (
                np.einsum("bs,si,bi->b", speaker_weights[:, rows], num[rows], item_weights, optimize=True),
                np.einsum("bs,si,bi->b", speaker_weights[:, rows], den[rows], item_weights, optimize=True),
            )
            for rows in (group_of_speaker == g for g in groups)
        ]
        num_bg, den_bg = np.column_stack([n for n, _ in sums]), np.column_stack([d for _, d in sums])
        with np.errstate(invalid="ignore", divide="ignore"):
            return num_bg / den_bg, (num_bg.sum(axis=1, keepdims=True) - num_bg) / (
                den_bg.sum(axis=1, keepdims=True) - den_bg
            )

    with np.errstate(invalid="ignore", divide="ignore"):
        means = num_g / den_g
        rest_means = (num_g.sum() - num_g) / (den_g.sum() - den_g)
    reps, rest_reps = resampled(a, b)
    speaker_reps, rest_speaker_reps = resampled(a, np.ones_like(b))
    item_reps, rest_item_reps = resampled(np.ones_like(a), b)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = values / denominators
    rates = rates[np.isfinite(rates)]
    value_range = (float(rates.min()), float(rates.max())) if len(rates) else (np.nan, np.nan)
    return CrossedReplicates(
        groups,
        means,
        reps,
        rest_means,
        rest_reps,
        pd.Series(n_speakers, name="speakers"),
        n_items,
        problems,
        seed,
        speaker_reps,
        item_reps,
        rest_speaker_reps,
        rest_item_reps,
        value_range,
        pd.Series(speaker_df, name="speaker_df"),
        pd.Series(item_df, name="item_df"),
        pd.Series(fewest, name="fewest").reindex(groups),
        len(blocks),
    )


def design_blocks(present: np.ndarray, group_of_speaker: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block labels of the speakers and items (module docstring): the connected components of the bipartite
    speaker-item graph ``present`` (S x I), numbered in order of their first item; all 0 (one block) when
    there is one component or some component holds a lone speaker of a group."""
    n_speakers, n_items = present.shape
    graph = sparse.bmat([[None, sparse.csr_matrix(present)], [sparse.csr_matrix(present.T), None]])
    _, labels = connected_components(graph, directed=False)
    speaker_labels, item_labels = labels[:n_speakers], labels[n_speakers:]
    order = {label: k for k, label in enumerate(dict.fromkeys(item_labels))}
    speaker_block = np.array([order.get(label, -1) for label in speaker_labels])
    item_block = np.array([order[label] for label in item_labels])
    cells = pd.Series(1, index=pd.MultiIndex.from_arrays([speaker_block, group_of_speaker])).groupby(level=[0, 1]).sum()
    if len(order) == 1 or (speaker_block < 0).any() or (cells < 2).any():
        return np.zeros(n_speakers, int), np.zeros(n_items, int)
    return speaker_block, item_block


def _contrast(x: np.ndarray, y: np.ndarray, scale: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return x - y if scale == DIFFERENCE else np.log(x / y)


def small_sample_factor(n_speakers: int) -> float:
    """``sqrt(n / (n - 1))``: the bootstrap variance of a mean over ``n`` resampled speakers is
    ``(n - 1) / n`` times the unbiased one (Efron & Tibshirani 1993, §5.2), half of it at 2 speakers."""
    return float(np.sqrt(n_speakers / (n_speakers - 1))) if n_speakers > 1 else float("nan")


def satterthwaite_df(
    speaker_replicates: np.ndarray, item_replicates: np.ndarray, speaker_df: int, item_df: int
) -> float:
    """Welch-Satterthwaite degrees of freedom of the contrast's variance ``V_s + V_i``, with ``V_s`` and
    ``V_i`` the variances of its speaker-only and item-only bootstrap replicates and ``speaker_df =
    sum_g (n_g - 1)``, ``item_df = n_items - 1`` their own degrees of freedom::

        df = (V_s + V_i)^2 / (V_s^2 / speaker_df + V_i^2 / item_df)

    (Satterthwaite 1946). A component that cannot vary (e.g. identical answers of a group's speakers)
    gives the other's df; NaN when neither varies."""
    components = [
        (float(np.var(r[np.isfinite(r)], ddof=1)) if np.isfinite(r).sum() > 1 else 0.0, df)
        for r, df in ((speaker_replicates, speaker_df), (item_replicates, item_df))
    ]
    components = [(v, df) for v, df in components if v > 0 and df > 0]
    if not components:
        return float("nan")
    total = sum(v for v, _ in components)
    return float(total**2 / sum(v**2 / df for v, df in components))


@functools.lru_cache(maxsize=4096)
def _t_over_normal(level: float, df: float) -> float:
    """How much wider a Student-t interval with ``df`` is than the normal one (1 for an unknown df)."""
    if not np.isfinite(df):
        return 1.0
    return float(student_t.ppf(0.5 + level / 2.0, df) / norm.ppf(0.5 + level / 2.0))


def _summarise(
    estimate: float, replicates: np.ndarray, level: float, widen: float = 1.0, df: float = float("nan")
) -> tuple[float, float, float, float, str | None]:
    finite = replicates[np.isfinite(replicates)]
    if not np.isfinite(estimate):
        return (
            np.nan,
            np.nan,
            np.nan,
            np.nan,
            "the contrast is undefined on the observed data (a group mean of 0 on a log scale?)",
        )
    if len(finite) < 0.5 * len(replicates):
        return np.nan, np.nan, np.nan, np.nan, "most resamples leave the contrast undefined"
    if np.ptp(finite) <= 1e-12 * max(1.0, abs(estimate)):
        return (
            np.nan,
            np.nan,
            np.nan,
            np.nan,
            (
                f"every resample gives the same contrast ({estimate:.4g}): the data cannot vary under resampling, "
                "so no interval can be estimated"
            ),
        )
    tail = (1.0 - level) / 2.0
    low, high = estimate + widen * _t_over_normal(level, df) * (np.quantile(finite, [tail, 1.0 - tail]) - estimate)
    se = widen * float(np.std(finite, ddof=1))
    # the distributions' own sf with df as an argument: what a frozen ``student_t(df).sf`` calls, without building one
    tail_p = student_t.sf(abs(estimate) / se, df) if np.isfinite(df) else norm.sf(abs(estimate) / se)
    return float(low), float(high), float(2.0 * tail_p), se, None


def crossed_gap(
    reps: CrossedReplicates,
    *,
    contrast: str | tuple[str, str] = "best-worst",
    scale: str = DIFFERENCE,
    level: float = 0.95,
) -> CrossedGap:
    """One group contrast from :func:`crossed_replicates`: estimate, percentile interval and p-value.

    ``contrast``: ``"best-worst"`` (highest minus lowest observed group mean, the pair then fixed),
    ``(a, b)`` for ``a`` against ``b``, or ``(a, REST)`` for ``a`` against the other groups pooled.
    ``scale``: :data:`DIFFERENCE` (``m_a - m_b``) or :data:`LOG_RATIO` (``log(m_a / m_b)``).
    """
    if scale not in (DIFFERENCE, LOG_RATIO):
        raise ValueError(f"crossed_gap: scale must be {DIFFERENCE!r} or {LOG_RATIO!r}, got {scale!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"crossed_gap: level must be in (0, 1), got {level}")
    groups = reps.groups
    if len(groups) < 2:
        raise ValueError(f"crossed_gap: need at least 2 groups, got {groups}")
    if contrast == "best-worst":
        order = np.argsort(-reps.means, kind="stable")
        a_name, b_name = groups[int(order[0])], groups[int(order[-1])]
    else:
        a_name, b_name = (str(contrast[0]), str(contrast[1]))
        if a_name not in groups or (b_name != REST and b_name not in groups) or a_name == b_name:
            raise ValueError(f"crossed_gap: contrast {contrast!r} must name groups among {groups} (or {REST!r})")
    i = groups.index(a_name)
    if b_name == REST:
        other, other_boot = reps.rest_means[i], reps.rest_replicates[:, i]
    else:
        other, other_boot = reps.means[groups.index(b_name)], reps.replicates[:, groups.index(b_name)]
    est = float(_contrast(reps.means[i], other, scale))
    boot = np.asarray(_contrast(reps.replicates[:, i], other_boot, scale), float)
    involved = [a_name] + ([g for g in groups if g != a_name] if b_name == REST else [b_name])
    one_way = {}
    for name, group_reps, rest_reps in (
        ("speaker", reps.speaker_replicates, reps.rest_speaker_replicates),
        ("item", reps.item_replicates, reps.rest_item_replicates),
    ):
        other_one_way = rest_reps[:, i] if b_name == REST else group_reps[:, groups.index(b_name)]
        one_way[name] = np.asarray(_contrast(group_reps[:, i], other_one_way, scale), float)
    df = satterthwaite_df(
        one_way["speaker"], one_way["item"], int(reps.speaker_df[involved].sum()), int(reps.item_df[involved].max())
    )
    widen = small_sample_factor(int(reps.fewest[involved].min()))
    low, high, p, se, reason = _summarise(est, boot, level, widen, df)
    if scale == DIFFERENCE and np.isfinite(low):
        span = reps.value_range[1] - reps.value_range[0]
        low, high = max(low, -span), min(high, span)
    if reps.problems:
        low, high, p, se, reason = np.nan, np.nan, np.nan, np.nan, "; ".join(reps.problems)
    return CrossedGap(
        minuend=a_name,
        subtrahend=b_name,
        scale=scale,
        estimate=est,
        ci_low=low,
        ci_high=high,
        p_value=p,
        se=se,
        means=pd.Series(reps.means, index=groups, name="mean"),
        n_speakers=reps.n_speakers,
        n_items=reps.n_items,
        n_boot=len(boot),
        level=level,
        seed=reps.seed,
        estimable=reason is None,
        reason=reason,
        replicates=boot,
        df=df,
        widen=widen * _t_over_normal(level, df),
    )


def crossed_group_gap(
    table: pd.DataFrame,
    *,
    contrast: str | tuple[str, str] = "best-worst",
    scale: str = DIFFERENCE,
    level: float = 0.95,
    **design,
) -> CrossedGap:
    """One group contrast of per-(speaker, item) scores with a two-way bootstrap interval and p-value:
    :func:`crossed_gap` of :func:`crossed_replicates` (``design``: its ``value``, ``denominator``,
    ``group``, ``speaker``, ``item``, ``n_boot``, ``seed``)."""
    return crossed_gap(crossed_replicates(table, **design), contrast=contrast, scale=scale, level=level)


def crossed_contrasts(
    table: pd.DataFrame,
    *,
    kind: str = "pairwise",
    scale: str = DIFFERENCE,
    level: float = 0.95,
    **design,
) -> list[CrossedGap]:
    """Every contrast of one case from one set of replicates: ``kind="pairwise"`` (each pair ``a - b``,
    sorted ``a < b``) or ``"vs_rest"`` (each group against the rest). With two groups both give one
    contrast. Combine their p-values with :func:`harness.metrics.multitest.holm` (the within-case step)."""
    reps = crossed_replicates(table, **design)
    groups = reps.groups
    if len(groups) == 2 or kind == "pairwise":
        pairs = [(a, b) for k, a in enumerate(groups) for b in groups[k + 1 :]]
    elif kind == "vs_rest":
        pairs = [(a, REST) for a in groups]
    else:
        raise ValueError(f"crossed_contrasts: kind must be 'pairwise' or 'vs_rest', got {kind!r}")
    return [crossed_gap(reps, contrast=pair, scale=scale, level=level) for pair in pairs]


def crossed_paired_contrast(
    table: pd.DataFrame,
    *,
    value: str,
    condition: str,
    contrast: tuple[str, str],
    denominator: str | None = None,
    speaker: str = "speaker",
    item: str = "item",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> CrossedGap:
    """The difference ``m_a - m_b`` between two conditions answered by the same speakers on the same items
    (BASIS-Bench §3.4: an evaluation mode against another, text modes carrying the speaker whose utterance
    was transcribed), with the two-way bootstrap of the module docstring applied *paired*.

    ``m_c = sum_{r in c} v_r / sum_{r in c} d_r``. One replicate draws speakers (counts ``a_s``) and items
    (counts ``b_i``) with replacement once, and weights the rows of both conditions alike, so whatever a
    speaker or an item adds to both conditions cancels in the difference. Interval, p-value (Student's t
    with Welch-Satterthwaite df from the speaker-only and item-only replicates, ``df_s = n_speakers - 1``,
    ``df_i = n_items - 1``) and the ``sqrt(n / (n - 1))`` widening are those of :func:`crossed_gap`.

    Random-number protocol: ``rng = default_rng(seed)``; ``rng.integers(0, S, (n_boot, S))`` for the
    sorted speakers, then ``rng.integers(0, I, (n_boot, I))`` for the sorted items."""
    first, second = (str(c) for c in contrast)
    require_columns(
        table, [value, condition, speaker, item] + ([denominator] if denominator else []), "crossed", nonempty=True
    )
    rows = table[table[condition].astype(str).isin([first, second])]
    missing = [c for c in (first, second) if not (rows[condition].astype(str) == c).any()]
    if missing:
        raise ValueError(f"crossed_paired_contrast: no row of condition {missing[0]!r} (column {condition!r})")
    values = pd.to_numeric(rows[value], errors="coerce").to_numpy(float)
    denominators = (
        np.ones(len(rows)) if denominator is None else pd.to_numeric(rows[denominator], errors="coerce").to_numpy(float)
    )
    if np.isnan(values).any() or np.isnan(denominators).any():
        raise ValueError(f"crossed_paired_contrast: {value!r} (and {denominator!r}) must be numeric in every row")
    speaker_codes, speakers = pd.factorize(rows[speaker].astype(str), sort=True)
    item_codes, items = pd.factorize(rows[item].astype(str), sort=True)
    shape = (2, len(speakers), len(items))
    num, den = np.zeros(shape), np.zeros(shape)
    side = (rows[condition].astype(str) == second).to_numpy().astype(int)
    np.add.at(num, (side, speaker_codes, item_codes), values)
    np.add.at(den, (side, speaker_codes, item_codes), denominators)
    rng = np.random.default_rng(seed)
    a = np.zeros((n_boot, len(speakers)))
    np.add.at(a, (np.arange(n_boot)[:, None], rng.integers(0, len(speakers), (n_boot, len(speakers)))), 1.0)
    b = np.zeros((n_boot, len(items)))
    np.add.at(b, (np.arange(n_boot)[:, None], rng.integers(0, len(items), (n_boot, len(items)))), 1.0)

    def difference(speaker_weights: np.ndarray, item_weights: np.ndarray) -> np.ndarray:
        means = [
            np.einsum("bs,si,bi->b", speaker_weights, num[k], item_weights, optimize=True)
            / np.einsum("bs,si,bi->b", speaker_weights, den[k], item_weights, optimize=True)
            for k in (0, 1)
        ]
        return means[0] - means[1]

    with np.errstate(invalid="ignore", divide="ignore"):
        means = num.sum(axis=(1, 2)) / den.sum(axis=(1, 2))
        estimate = float(means[0] - means[1])
        boot = difference(a, b)
        df = satterthwaite_df(
            difference(a, np.ones_like(b)), difference(np.ones_like(a), b), len(speakers) - 1, len(items) - 1
        )
        rates = values / denominators
    problems = [
        f"{len(units)} {name}(s); {name} variation needs at least 2"
        for name, units in (("speaker", speakers), ("item", items))
        if len(units) < 2
    ]
    widen = small_sample_factor(min(len(speakers), len(items)))
    low, high, p, se, reason = _summarise(estimate, boot, level, widen, df)
    rates = rates[np.isfinite(rates)]
    if np.isfinite(low) and len(rates):
        span = float(rates.max() - rates.min())
        low, high = max(low, -span), min(high, span)
    if problems:
        low, high, p, se, reason = np.nan, np.nan, np.nan, np.nan, "; ".join(problems)
    counts = pd.Series({first: len(speakers), second: len(speakers)}, name="speakers")
    return CrossedGap(
        minuend=first,
        subtrahend=second,
        scale=DIFFERENCE,
        estimate=estimate,
        ci_low=low,
        ci_high=high,
        p_value=p,
        se=se,
        means=pd.Series(means, index=[first, second], name="mean"),
        n_speakers=counts,
        n_items=pd.Series({first: len(items), second: len(items)}, name="items"),
        n_boot=len(boot),
        level=level,
        seed=seed,
        estimable=reason is None,
        reason=reason,
        replicates=boot,
        df=df,
        widen=widen * _t_over_normal(level, df),
    )


__all__ = [
    "CrossedGap",
    "CrossedReplicates",
    "DIFFERENCE",
    "LOG_RATIO",
    "REST",
    "crossed_contrasts",
    "crossed_gap",
    "crossed_group_gap",
    "crossed_paired_contrast",
    "crossed_replicates",
]
