"""Counterfactual voice measures: the same recordings answered in two arms (issue 39), compared within recording.

Every recording is answered twice, once per arm (``identity``: resynthesised unchanged; ``swap``: in the other
group's voice; :mod:`harness.data.voice_transforms`), so a speaker contributes both arms and is the unit of the
test. Pure functions on long tables with the columns ``speaker``, ``recording``, ``arm`` and the measure's own.

**Paired permutation test** (:func:`paired_permutation_test`). Under the null hypothesis that the voice change
does not change the answers, the two arms of a speaker's recordings are exchangeable. One permutation swaps the
arm labels of *all* of a speaker's recordings together, each speaker independently with probability 1/2 (a
recording's answers are not independent of its speaker's other recordings, so the speaker, not the recording, is
the unit). With per-speaker sufficient statistics ``first[s]``, ``second[s]`` (counts, sums) and swap indicators
``f[b, s]``::

    first_b  = sum_s (1 - f[b, s]) first[s] + f[b, s] second[s]
    second_b = sum_s f[b, s] first[s] + (1 - f[b, s]) second[s]
    p        = (1 + #{b : T(first_b, second_b) >= T(first, second)}) / (B + 1)

(Phipson & Smyth 2010, "Permutation p-values should never be zero"), with ``T`` a non-negative effect size, so
the test is two-sided. Its smallest attainable p (:class:`harness.metrics.permutation_floor.PermutationFloor`, ``sign flip``) is
``max(2^D / 2^S, 1 / (B + 1))`` over the S speakers whose swap moves the sums (a speaker whose two arms have the
same sums is no unit) in the D blocks (swap directions tested together) whose whole-block swap leaves ``T``
unchanged: 2 / 2^S for one direction.

**Measures** (issue 39, "Measures, per task and dimension"):

* VIBE tasks: :func:`arm_ntvd`, the nTVD of VIBE §II-D eq. 2-5 with the arm as the group (two groups, so nTVD is
  100 times the total variation distance between the arms' value distributions), per swap direction and
  attribute, averaged over the attributes with a retained value and then over directions; :func:`flip_rates`, the share of recordings whose extracted value set of
  an attribute differs between the arms; :func:`largest_shifts`, the values whose share moved most.
* BASIS choice items: :func:`choice_flips`, the share of items whose "stereotypical or not" changed between the
  arms, and the change in stereotype share (percentage points of all answers, BASIS-Bench §3.2's S%).
* WER: :func:`paired_wer_difference`, the arms' pooled WER difference (points) and the mean per-recording
  difference.
* Perceived group: :func:`perceived_shares`, per swap direction, the share of swapped clips a perceiver labels
  as the target group.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.core.values import require_columns
from harness.metrics.ntvd import mean_over_measured, ntvd_from_group_counts
from harness.metrics.paired import PairedBootstrapResult, excess_difference, speaker_draws, warnings_ignored
from harness.metrics.permutation_floor import SIGN_FLIP, PermutationFloor
from harness.metrics.sign_flip import (  # noqa: F401 (the module's public names, as before)
    PairedPermutationResult,
    paired_permutation_test,
    sign_flip_floor,
    sign_flip_sensitivity,
)

ARM_COLUMNS = ("speaker", "recording", "arm")


def _arm_rows(
    table: pd.DataFrame, arms: Sequence[str], columns: Sequence[str], what: str, *, drop_unpaired: bool = False
) -> pd.DataFrame:
    """The rows of the two ``arms``, checked: every column present and filled, and both arms on every recording (or,
    with ``drop_unpaired``, the recordings answered in both arms only)."""
    require_columns(table, list(ARM_COLUMNS) + list(columns), what, nonempty=True)
    if len(arms) != 2 or arms[0] == arms[1]:
        raise ValueError(f"{what}: needs two different arms, got {list(arms)}")
    rows = table[table["arm"].isin(arms)]
    missing = rows[list(ARM_COLUMNS) + list(columns)].isna().any(axis=1)
    if missing.any():
        raise ValueError(f"{what}: row {rows.index[missing.to_numpy()][0]!r} has a missing value")
    # integer codes instead of grouping by text: recordings sorted as groupby sorts its keys
    recording_codes, recordings = _codes(rows["recording"], sort=True)
    in_arm = np.zeros((len(recordings), 2), dtype=bool)
    in_arm[recording_codes, (rows["arm"] == arms[1]).to_numpy(dtype=np.intp)] = True
    paired = in_arm.all(axis=1)
    unpaired = recordings[~paired]
    if drop_unpaired:
        rows, unpaired = (rows if paired.all() else rows[paired[recording_codes]]), unpaired[:0]
    if len(unpaired) or rows.empty:
        where = f"recording {unpaired[0]!r}" if len(unpaired) else "the table"
        raise ValueError(f"{what}: {where} lacks an answer in one of the arms {list(arms)}")
    if _recordings_with_two_speakers(rows):
        speakers_per_recording = rows.groupby("recording")["speaker"].nunique()
        raise ValueError(f"{what}: recording {speakers_per_recording.idxmax()!r} is attributed to two speakers")
    return rows


def _recordings_with_two_speakers(rows: pd.DataFrame) -> bool:
    """Whether some recording of ``rows`` is attributed to more than one speaker (``groupby("recording")["speaker"]
    .nunique() > 1`` for some recording): each row's speaker against its recording's first row's, by integer codes."""
    recording_codes, recordings = _codes(rows["recording"])
    speaker_codes, _ = _codes(rows["speaker"])
    first_speaker = np.empty(len(recordings), dtype=speaker_codes.dtype)
    first_speaker[recording_codes[::-1]] = speaker_codes[::-1]  # the last write of a recording is its first row
    return bool((first_speaker[recording_codes] != speaker_codes).any())


def _per_speaker(rows: pd.DataFrame, arms: Sequence[str], columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    sums = rows.groupby(["arm", "speaker"])[list(columns)].sum()
    speakers = sorted(rows["speaker"].unique())
    return tuple(sums.loc[arm].reindex(speakers, fill_value=0).to_numpy(dtype=float) for arm in arms)


# ----------------------------------------------------------------------------------------------- VIBE tasks


@dataclasses.dataclass(frozen=True)
class ArmNTVDResult:
    """``score``: the mean over swap directions of each direction's mean nTVD over attributes between the arms
    (0-100); ``per_direction``: direction -> its score; ``per_attribute``: direction -> attribute -> nTVD;
    ``test``: the paired permutation test of ``score``; ``distributions``: per direction, attribute and value, each
    arm's share (0-1) of the attribute's retained values; ``recordings``: those compared (values in both arms)."""

    score: float
    per_direction: dict[str, float]
    per_attribute: dict[str, dict[str, float]]
    test: PairedPermutationResult
    distributions: pd.DataFrame
    recordings: int
    unpaired_recordings: int
    """Recordings with values in one arm only (a refusal or an unreadable answer in the other): left out."""


ALL_DIRECTIONS = "all"

OTHER_VALUE = "(other)"
"""The pooled value of an attribute's values rarer than tau in :func:`arm_ntvd`."""


def arm_ntvd(
    table: pd.DataFrame,
    arms: Sequence[str] = ("identity", "swap"),
    *,
    direction: str | None = "source_group",
    tau: int = 10,
    n_permutations: int = 1000,
    seed: int = 0,
) -> ArmNTVDResult:
    """The nTVD between two arms' attribute distributions (VIBE §II-D eq. 2-5, the arm as the group) per swap
    direction, averaged over directions, with its paired permutation test. ``table``: one row per extracted value,
    columns ``speaker, recording, arm, attribute, value`` and, when present, the ``direction`` column (the
    speaker's source group). Directions are kept apart because pooling them cancels the effect: male -> female
    and female -> male swaps move the answers in opposite ways, and both arms then hold the same mix of voices.
    Within a direction a value is retained when it occurs at least ``tau`` times in its two arms together; the
    rarer values of an attribute pool into :data:`OTHER_VALUE`, retained when the pool reaches ``tau`` (issue 57:
    a swap that moves every answer onto one value while the identity arm's values are each rare keeps a defined
    nTVD, 100, instead of leaving the attribute out). Only
    recordings with values in both arms are compared; the others are counted (``unpaired_recordings``). Counted
    over integer codes of the keys (text or categorical columns alike), each sorted as ``groupby`` sorts them."""
    answered = table.loc[table["arm"].isin(arms), "recording"].nunique() if "recording" in table.columns else 0
    rows = _arm_rows(table, arms, ("attribute", "value"), "arm_ntvd", drop_unpaired=True)
    keys = ["direction", "attribute", "value"]
    # Integer codes of every key, each sorted as groupby sorts its keys: (direction, attribute, value) triples
    # counted by np.unique (sorted), then per arm and speaker by one bincount.
    direction_codes, direction_names = (
        _sorted_text_codes(rows[direction])
        if direction is not None and direction in rows.columns
        else (np.zeros(len(rows), dtype=np.intp), pd.Index([ALL_DIRECTIONS]))
    )
    attribute_codes, attribute_names = _codes(rows["attribute"], sort=True)
    value_codes, value_names = _codes(rows["value"], sort=True)
    segment_code = direction_codes.astype(np.int64) * len(attribute_names) + attribute_codes
    triple = segment_code * len(value_names) + value_codes
    triples, triple_counts = np.unique(triple, return_counts=True)
    # Values rarer than tau pool into their attribute's OTHER_VALUE (issue 57), so an attribute whose answers in
    # one arm are all rare keeps a defined divergence instead of leaving the mean.
    rare = ~np.isin(triple, triples[triple_counts >= tau])
    if rare.any():  # coded again, so that the pool sorts among the values as groupby sorts them
        value_codes, value_names = _codes(rows["value"].astype(object).where(~rare, OTHER_VALUE), sort=True)
        triple = segment_code * len(value_names) + value_codes
        triples, triple_counts = np.unique(triple, return_counts=True)
    kept = triples[triple_counts >= tau]
    if not len(kept):
        raise ValueError(f"arm_ntvd: no attribute value occurs {tau} times (tau) in the two arms together")
    kept_direction, kept_rest = np.divmod(kept, len(attribute_names) * len(value_names))
    kept_attribute, kept_value = np.divmod(kept_rest, len(value_names))
    columns = pd.MultiIndex.from_arrays(
        [direction_names[kept_direction], attribute_names[kept_attribute], value_names[kept_value]], names=keys
    )
    column_segments = list(zip(columns.get_level_values(0), columns.get_level_values(1)))
    segments = list(dict.fromkeys(column_segments))
    segment_of_column = np.array([segments.index(pair) for pair in column_segments])
    directions = list(dict.fromkeys(name for name, _ in segments))
    members = [np.array([i for i, (name, _) in enumerate(segments) if name == d]) for d in directions]
    column_of_row = np.searchsorted(kept, triple)
    retained = column_of_row < len(kept)
    retained[retained] = kept[column_of_row[retained]] == triple[retained]
    speaker_codes, speakers = _codes(rows["speaker"], sort=True)
    second_arm = (rows["arm"] == arms[1]).to_numpy(dtype=np.int64)
    cell = (second_arm * len(speakers) + speaker_codes) * len(kept) + column_of_row
    grid = np.bincount(cell[retained], minlength=2 * len(speakers) * len(kept)).reshape(2, len(speakers), len(kept))
    first, second = grid[0].astype(float), grid[1].astype(float)

    def direction_scores(first_sums: np.ndarray, second_sums: np.ndarray) -> np.ndarray:
        stacked = np.stack([first_sums, second_sums], axis=-2)
        per_segment = ntvd_from_group_counts(stacked, segment_of_column, len(segments))
        return np.stack([mean_over_measured(per_segment[..., indices]) for indices in members], axis=-1)

    def statistic(first_sums: np.ndarray, second_sums: np.ndarray) -> np.ndarray:
        return mean_over_measured(direction_scores(first_sums, second_sums))

    first_row_of_speaker = np.unique(speaker_codes, return_index=True)[1]
    speaker_direction = direction_names[direction_codes[first_row_of_speaker]].to_numpy()
    test = paired_permutation_test(first, second, statistic, n_permutations, seed, blocks=speaker_direction)
    totals = first.sum(axis=0), second.sum(axis=0)
    per_segment = ntvd_from_group_counts(np.stack(totals), segment_of_column, len(segments))
    per_attribute: dict[str, dict[str, float]] = {name: {} for name in directions}
    for (name, attribute), value in zip(segments, per_segment):
        per_attribute[name][attribute] = float(value)
    distributions = pd.DataFrame(dict(zip(arms, totals)), index=columns)
    with np.errstate(divide="ignore", invalid="ignore"):
        distributions = distributions / np.stack(
            [np.bincount(segment_of_column, weights=total, minlength=len(segments))[segment_of_column] for total in totals], axis=1
        )  # fmt: skip
    return ArmNTVDResult(
        score=test.observed,
        per_direction=dict(zip(directions, direction_scores(totals[0][None, :], totals[1][None, :])[0].tolist())),
        per_attribute=per_attribute,
        test=test,
        distributions=distributions.fillna(0.0),
        recordings=rows["recording"].nunique(),
        unpaired_recordings=answered - rows["recording"].nunique(),
    )


def flip_rates(table: pd.DataFrame, arms: Sequence[str] = ("identity", "swap")) -> pd.DataFrame:
    """Per attribute: ``recordings`` (answered in both arms with a value of it), ``flipped`` (whose set of values
    differs between the arms; a multi-valued attribute flips when any value does) and ``flip_rate`` (0-1).
    ``table`` as for :func:`arm_ntvd`; values are compared as text (``str``). With ``V_k(a, r)`` the set of arm
    ``k``'s values of attribute ``a`` on recording ``r``, over the recordings with both sets non-empty::

        recordings(a) = #{r : V_1(a, r) and V_2(a, r) non-empty}
        flipped(a)    = #{r : ... and V_1(a, r) != V_2(a, r)},   flip_rate(a) = flipped(a) / recordings(a)

    The sets differ exactly when some distinct ``(a, r, value)`` occurs in one arm only, so no set is built: one
    pass over integer codes of the rows. Attributes with no such recording are left out; rows sorted by
    attribute."""
    rows = _arm_rows(table, arms, ("attribute", "value"), "flip_rates", drop_unpaired=True)
    attribute_codes, attributes = _codes(rows["attribute"], sort=True)
    recording_codes, recordings = _codes(rows["recording"])
    value_codes, values = _text_codes(rows["value"])
    arm = (rows["arm"] == arms[1]).to_numpy(dtype=np.intp)
    pair_codes, pairs = pd.factorize(attribute_codes.astype(np.int64) * len(recordings) + recording_codes)
    triple_codes, triples = pd.factorize(pair_codes.astype(np.int64) * len(values) + value_codes)
    in_arm = np.zeros((len(triples), 2), dtype=bool)
    in_arm[triple_codes, arm] = True
    has_arm = np.zeros((len(pairs), 2), dtype=bool)
    has_arm[pair_codes, arm] = True
    differs = np.zeros(len(pairs), dtype=bool)
    differs[triples[in_arm[:, 0] != in_arm[:, 1]] // len(values)] = True
    paired = has_arm.all(axis=1)
    attribute_of_pair = pairs // len(recordings)
    counts = np.bincount(attribute_of_pair[paired], minlength=len(attributes))
    flipped = np.bincount(attribute_of_pair[paired & differs], minlength=len(attributes))
    present = counts > 0
    index = attributes.infer_objects()[present].rename("attribute")  # typed as groupby types all its keys
    result = pd.DataFrame({"recordings": counts[present], "flipped": flipped[present]}, index=index)
    result["flip_rate"] = result["flipped"] / result["recordings"]
    return result


def _codes(values: pd.Series, sort: bool = False) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(values, sort=sort)`` with the uniques as a plain index of the values' own type, whether the
    column is text or categorical (whose codes factorize without reading its text: the arm tables'
    :func:`~harness.checks.counterfactual.arms.arm_rows` columns)."""
    codes, uniques = pd.factorize(values, sort=sort)
    if isinstance(uniques, pd.CategoricalIndex):
        uniques = uniques.categories.take(uniques.codes)
    return codes, uniques


def _text_codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize`` of ``str(value)`` per value: equal codes exactly where the text is equal (1 and "1" one
    value, 1.0 another); a text column is its own text."""
    if isinstance(values.dtype, pd.CategoricalDtype):  # the text of each category, once
        category_codes, texts = _text_codes(pd.Series(values.cat.categories))
        codes = values.cat.codes.to_numpy()
        return _first_seen_codes(category_codes[codes], texts)
    if not isinstance(values.dtype, pd.StringDtype):
        values = np.array([str(value) for value in values.tolist()], dtype=object)
    codes, texts = pd.factorize(values)
    return codes, pd.Index(texts)


def _sorted_text_codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """:func:`_text_codes` with the texts sorted (``pd.factorize(values.astype(str), sort=True)``)."""
    codes, texts = _text_codes(values)
    order, rank = _sort_ranks(texts.to_numpy(dtype=object))
    return rank[codes], pd.Index(texts.to_numpy(dtype=object)[order], dtype=texts.dtype)


def _sort_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable sorting order of ``values`` and each value's place in it (``rank[order] = 0, 1, ...``)."""
    order = np.argsort(values, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return order, rank


def _first_seen_codes(codes: np.ndarray, uniques: pd.Index) -> tuple[np.ndarray, pd.Index]:
    """``codes`` into ``uniques`` renumbered in order of first appearance, as ``pd.factorize`` numbers them."""
    renumbered, first_seen = pd.factorize(codes)
    return renumbered, uniques[first_seen]


def largest_shifts(distributions: pd.DataFrame, per_attribute: int = 2) -> pd.DataFrame:
    """From :attr:`ArmNTVDResult.distributions` (two arm columns): per direction and attribute, the
    ``per_attribute`` values whose share fell most (``from``) and rose most (``to``) from the first arm to the
    second, with ``change`` = second share - first share; e.g. "engineer" falling and "nurse" rising for a
    male -> female swap. Groups in sorted (direction, attribute) order, ``from`` before ``to``; within a shift the
    largest change first, ties in the table's order (what ``nsmallest`` / ``nlargest`` of each group give), picked
    for all groups at once by one stable sort."""
    first, second = distributions.columns[:2]
    columns = ["direction", "attribute", "shift", "value", "change"]
    change = (distributions[second] - distributions[first]).to_numpy(dtype=float)
    index = distributions.index
    group_codes, groups = pd.factorize(
        pd.MultiIndex.from_arrays([index.get_level_values("direction"), index.get_level_values("attribute")]),
        sort=True,
    )
    values = index.get_level_values("value")
    frames = []
    for label, moved, signed in (("from", change < 0, change), ("to", change > 0, -change)):
        candidates = np.flatnonzero(moved)
        # by group, then by the signed change, ties in the table's order
        ordered = candidates[np.lexsort((candidates, signed[candidates], group_codes[candidates]))]
        starts = np.r_[0, np.flatnonzero(np.diff(group_codes[ordered])) + 1]
        rank = np.arange(len(ordered)) - np.repeat(starts, np.diff(np.r_[starts, len(ordered)]))
        picked = ordered[rank < per_attribute]
        frames.append((group_codes[picked], np.full(len(picked), label == "to"), picked))
    group, shift, rows = (np.concatenate(parts) for parts in zip(*frames))
    if not len(rows):
        return pd.DataFrame(columns=columns)
    order = np.lexsort((np.arange(len(rows)), shift, group))
    group, shift, rows = group[order], shift[order], rows[order]
    return pd.DataFrame(
        {
            "direction": groups.get_level_values(0).to_numpy()[group],
            "attribute": groups.get_level_values(1).to_numpy()[group],
            "shift": np.where(shift, "to", "from").astype(object),
            "value": values.to_numpy()[rows],
            "change": change[rows],
        }
    )


# ----------------------------------------------------------------------------------------- BASIS choices


@dataclasses.dataclass(frozen=True)
class ChoiceFlipResult:
    """``flip_rate``: share (0-1) of items whose "stereotypical or not" differs between the arms;
    ``stereotype_share``: arm -> share (0-100) of its answers that chose the stereotype; ``share_change``: second
    arm's share - first arm's (points); ``test``: the paired permutation test of ``|share_change|``."""

    items: int
    flip_rate: float
    stereotype_share: dict[str, float]
    share_change: float
    test: PairedPermutationResult


def choice_flips(
    table: pd.DataFrame, arms: Sequence[str] = ("identity", "swap"), *, n_permutations: int = 1000, seed: int = 0
) -> ChoiceFlipResult:
    """BASIS choice items under two arms: one row per answered item (``recording``) and arm, column ``choice`` in
    :data:`harness.metrics.basis.CHOICES` (one swap direction at a time: the caller splits by direction)."""
    rows = _arm_rows(table, arms, ("choice",), "choice_flips")
    rows = rows.assign(stereotype=(rows["choice"] == "stereotype").astype(float), answered=1.0)
    stereotyped = rows.pivot_table(index="recording", columns="arm", values="stereotype", aggfunc="mean")
    flip_rate = float((stereotyped[arms[0]] != stereotyped[arms[1]]).mean())
    first, second = _per_speaker(rows, arms, ("stereotype", "answered"))

    def statistic(first_sums: np.ndarray, second_sums: np.ndarray) -> np.ndarray:
        return 100.0 * np.abs(second_sums[:, 0] / second_sums[:, 1] - first_sums[:, 0] / first_sums[:, 1])

    test = paired_permutation_test(first, second, statistic, n_permutations, seed)
    shares = {arm: float(100.0 * sums[:, 0].sum() / sums[:, 1].sum()) for arm, sums in zip(arms, (first, second))}
    return ChoiceFlipResult(len(stereotyped), flip_rate, shares, shares[arms[1]] - shares[arms[0]], test)


# ---------------------------------------------------------------------------------------------------- WER


@dataclasses.dataclass(frozen=True)
class PairedWerResult:
    """``wer``: arm -> pooled WER (percent, errors / reference words); ``difference``: second - first (points);
    ``mean_recording_difference``: the mean over recordings of each recording's WER difference (points);
    ``test``: the paired permutation test of ``|difference|``."""

    recordings: int
    wer: dict[str, float]
    difference: float
    mean_recording_difference: float
    test: PairedPermutationResult


def paired_wer_difference(
    table: pd.DataFrame, arms: Sequence[str] = ("identity", "swap"), *, n_permutations: int = 1000, seed: int = 0
) -> PairedWerResult:
    """The paired per-recording WER difference between two arms: one row per recording and arm with ``errors``
    (S + D + I) and ``words`` (reference words, > 0)."""
    rows = _arm_rows(table, arms, ("errors", "words"), "paired_wer_difference")
    if (rows["words"] <= 0).any():
        raise ValueError(f"paired_wer_difference: row {rows.index[(rows['words'] <= 0).to_numpy()][0]!r} has no "
                         "reference words")  # fmt: skip
    per_recording = rows.assign(wer=100.0 * rows["errors"] / rows["words"]).pivot_table(
        index="recording", columns="arm", values="wer", aggfunc="mean"
    )
    first, second = _per_speaker(rows, arms, ("errors", "words"))

    def statistic(first_sums: np.ndarray, second_sums: np.ndarray) -> np.ndarray:
        return 100.0 * np.abs(second_sums[:, 0] / second_sums[:, 1] - first_sums[:, 0] / first_sums[:, 1])

    test = paired_permutation_test(first, second, statistic, n_permutations, seed)
    wer = {arm: float(100.0 * sums[:, 0].sum() / sums[:, 1].sum()) for arm, sums in zip(arms, (first, second))}
    return PairedWerResult(
        len(per_recording),
        wer,
        wer[arms[1]] - wer[arms[0]],
        float((per_recording[arms[1]] - per_recording[arms[0]]).mean()),
        test,
    )


# ------------------------------------------------------------------------------------------ release comparison

COLUMN_SEPARATOR = "\t"


def speaker_arm_sums(table: pd.DataFrame, kind: str, arms: Sequence[str] = ("identity", "swap")) -> pd.DataFrame:
    """Per speaker, the sufficient statistics of a counterfactual measure in both arms, for a paired comparison of
    two checkpoints on the same recordings (:func:`release_statistic`): index ``speaker``, column ``group`` (the
    speaker's swap direction, the source group), and per arm ``kind``'s sums. ``vibe``: the count of each
    (attribute, value) per arm (columns ``arm<TAB>attribute<TAB>value``; no tau filter, applied by the statistic);
    ``wer``: ``arm<TAB>errors`` and ``arm<TAB>words``; ``stereotype``: ``arm<TAB>stereotype`` and
    ``arm<TAB>answered``. ``table`` as for :func:`arm_ntvd`, :func:`paired_wer_difference` or :func:`choice_flips`."""
    columns = {"vibe": ("attribute", "value"), "wer": ("errors", "words"), "stereotype": ("choice",)}[kind]
    rows = _arm_rows(table, arms, columns, f"speaker_arm_sums ({kind})", drop_unpaired=True)
    groups = rows.groupby("speaker")["source_group"].first().astype(str)
    if kind == "vibe":
        sums = _value_counts_per_speaker(rows)
    else:
        if kind == "stereotype":
            rows = rows.assign(stereotype=(rows["choice"] == "stereotype").astype(float), answered=1.0)
            columns = ("stereotype", "answered")
        sums = rows.groupby(["speaker", "arm"])[list(columns)].sum().unstack("arm", fill_value=0)
        sums.columns = [f"{arm}{COLUMN_SEPARATOR}{name}" for name, arm in sums.columns]
    sums = sums.astype(float)
    sums.insert(0, "group", groups.reindex(sums.index).to_numpy())
    return sums.sort_index(axis=1, key=lambda index: [(name != "group", name) for name in index])


def _value_counts_per_speaker(rows: pd.DataFrame) -> pd.DataFrame:
    """Per speaker (sorted), the count of each ``arm<TAB>attribute<TAB>value`` (each part as text; columns sorted):
    ``rows.groupby(["speaker", column]).size().unstack(column, fill_value=0)``, by integer codes, the column names
    written once per distinct triple."""
    speaker_codes, speakers = _codes(rows["speaker"], sort=True)
    parts = [_text_codes(rows[name]) for name in ("arm", "attribute", "value")]
    triple = np.zeros(len(rows), dtype=np.int64)
    for codes, texts in parts:
        triple = triple * len(texts) + codes
    triple_codes, triples = pd.factorize(triple)
    remainder, pieces = triples, []
    for _, texts in reversed(parts):
        remainder, code = np.divmod(remainder, len(texts))
        pieces.append(texts.to_numpy(dtype=object)[code])
    names = np.empty(len(triples), dtype=object)
    names[:] = [COLUMN_SEPARATOR.join(triple_texts) for triple_texts in zip(*reversed(pieces))]
    order, rank = _sort_ranks(names)
    counts = np.bincount(speaker_codes * len(names) + rank[triple_codes], minlength=len(speakers) * len(names))
    return pd.DataFrame(
        counts.reshape(len(speakers), len(names)),
        index=pd.Index(speakers, name="speaker"),
        columns=pd.Index(names[order].tolist(), name="column"),
    )


def release_statistic(
    kind: str,
    columns: Sequence[str],
    arms: Sequence[str] = ("identity", "swap"),
    *,
    retained: Mapping[str, Collection[tuple[str, str]]] | None = None,
) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """The counterfactual effect from per-direction sums of :func:`speaker_arm_sums` columns (``columns``, less
    ``group``), vectorised over bootstrap replicates: ``sums[direction]`` is (B, k). ``vibe``: the arm nTVD of
    :func:`arm_ntvd` (per direction, the mean over attributes of the nTVD between the arms' value distributions
    over the direction's ``retained`` (attribute, value) pairs, fixed beforehand as :func:`retained_values`
    does; then the mean over directions); ``wer`` and ``stereotype``: the largest absolute difference swap -
    identity over directions (points). A release compares it beyond its arm-exchange null
    (:func:`paired_excess_bootstrap`), never raw: noise alone raises it."""
    names = list(columns)
    if kind == "vibe":
        if retained is None:
            raise ValueError("release_statistic: the vibe statistic needs the retained values per direction")
        parsed = [name.split(COLUMN_SEPARATOR, 2) for name in names]
        pairs = sorted({(attribute, value) for _, attribute, value in parsed})
        position = {tuple(part): index for index, part in enumerate(parsed)}
        attributes = sorted({attribute for attribute, _ in pairs})
        segment = np.array([attributes.index(attribute) for attribute, _ in pairs], dtype=int)  # sorted: contiguous
        selectors = {
            arm: np.array([position.get((arm, attribute, value), -1) for attribute, value in pairs]) for arm in arms
        }
        masks = {direction: np.array([pair in set(kept) for pair in pairs]) for direction, kept in retained.items()}

        def arm_counts(sums: np.ndarray, arm: str, mask: np.ndarray) -> np.ndarray:
            chosen = selectors[arm]
            padded = np.concatenate([sums, np.zeros((sums.shape[0], 1))], axis=1)
            return padded[:, chosen] * mask

        def statistic(sums: dict[str, np.ndarray]) -> np.ndarray:
            per_direction = []
            for direction, direction_sums in sums.items():
                mask = masks.get(direction, np.zeros(len(pairs), dtype=bool))
                stacked = np.stack([arm_counts(direction_sums, arm, mask) for arm in arms], axis=-2)
                per_direction.append(mean_over_measured(ntvd_from_group_counts(stacked, segment, len(attributes))))
            return mean_over_measured(np.stack(per_direction, axis=-1))

        return statistic
    numerator, denominator = {"wer": ("errors", "words"), "stereotype": ("stereotype", "answered")}[kind]
    index = {name: i for i, name in enumerate(names)}
    first = [index[f"{arms[0]}{COLUMN_SEPARATOR}{name}"] for name in (numerator, denominator)]
    second = [index[f"{arms[1]}{COLUMN_SEPARATOR}{name}"] for name in (numerator, denominator)]

    def difference(sums: dict[str, np.ndarray]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            per_direction = [
                100.0 * np.abs(s[:, second[0]] / s[:, second[1]] - s[:, first[0]] / s[:, first[1]])
                for s in sums.values()
            ]
        stacked = np.stack(per_direction, axis=-1)
        return np.where(
            np.isnan(stacked).all(axis=-1), np.nan, np.nanmax(np.where(np.isnan(stacked), -np.inf, stacked), axis=-1)
        )

    return difference


def retained_values(tables: Sequence[pd.DataFrame], tau: int) -> dict[str, set[tuple[str, str]]]:
    """Per direction (``group``), the (attribute, value) pairs that occur at least ``tau`` times in the two arms
    together in any of ``tables`` (:func:`speaker_arm_sums` of the checkpoints compared), as :func:`arm_ntvd`
    retains a value; fixed once, so that every bootstrap replicate and both checkpoints compare the same values."""
    kept: dict[str, set[tuple[str, str]]] = {}
    for table in tables:
        for direction, rows in table.groupby("group"):
            totals: dict[tuple[str, str], float] = {}
            for name, total in rows.drop(columns="group").sum().items():
                _, attribute, value = str(name).split(COLUMN_SEPARATOR, 2)
                totals[(attribute, value)] = totals.get((attribute, value), 0.0) + float(total)
            kept.setdefault(str(direction), set()).update(pair for pair, total in totals.items() if total >= tau)
    return kept


def with_arm_counterparts(columns: Sequence[str], arms: Sequence[str] = ("identity", "swap")) -> list[str]:
    """``columns`` (:func:`speaker_arm_sums`, less ``group``) with every column's counterpart in the other arm added
    (a value stated in one arm only), sorted: exchanging a speaker's arms (:func:`arm_exchange_index`) then maps
    every column onto one that exists."""
    completed = set(columns)
    for name in columns:
        arm, rest = name.split(COLUMN_SEPARATOR, 1)
        if arm not in arms:
            raise ValueError(f"with_arm_counterparts: column {name!r} names arm {arm!r}, not one of {list(arms)}")
        completed.add(f"{arms[1] if arm == arms[0] else arms[0]}{COLUMN_SEPARATOR}{rest}")
    return sorted(completed)


def arm_exchange_index(columns: Sequence[str], arms: Sequence[str] = ("identity", "swap")) -> np.ndarray:
    """For each column of ``columns`` (complete: :func:`with_arm_counterparts`) the position of the same sum in the
    other arm, so that ``sums[:, index]`` is a speaker's sums with its two arms exchanged."""
    position = {name: index for index, name in enumerate(columns)}
    index = []
    for name in columns:
        arm, rest = name.split(COLUMN_SEPARATOR, 1)
        counterpart = f"{arms[1] if arm == arms[0] else arms[0]}{COLUMN_SEPARATOR}{rest}"
        if counterpart not in position:
            raise ValueError(f"arm_exchange_index: column {name!r} has no counterpart {counterpart!r} in the other arm")
        index.append(position[counterpart])
    return np.asarray(index, dtype=int)


def paired_excess_bootstrap(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    statistic: Callable[[dict[str, np.ndarray]], np.ndarray],
    exchange: np.ndarray,
    *,
    n_boot: int = 1000,
    n_exchanges: int = 64,
    alpha: float = 0.05,
    seed: int = 0,
) -> PairedBootstrapResult:
    """The release comparison of two checkpoints' *systematic* counterfactual effects (issue 45): each checkpoint's
    effect beyond its own arm-exchange null, and the paired speaker bootstrap of their difference.

    A raw effect ``T`` (the arm nTVD, or a largest |swap - identity|) is non-negative, so any difference between
    the arms raises it, systematic or not: a checkpoint whose answers are redrawn on every arm (a sampling decoder)
    has a large ``T`` with no voice effect at all, and compared by raw ``T`` with a checkpoint that answers alike
    on both arms it looks worse. Under "the voice change does not move the answers" a speaker's two arms are
    exchangeable (the null of :func:`paired_permutation_test`), so the noise part of ``T`` is its expectation
    under exchanging arms within speakers, and the systematic part is the excess::

        E(X)    = T(X) - mean_m T(X with the arms of speakers {s : f[m, s] = 1} exchanged)
        delta   = E(candidate) - E(baseline)
        delta_b = E(candidate under draw b) - E(baseline under draw b)

    with ``f[m, s]`` independent fair coins (``n_exchanges`` patterns, the same for both checkpoints and every
    replicate, so that the Monte Carlo error largely cancels in the difference) and draw ``b`` speakers resampled
    with replacement within their group (:func:`harness.metrics.paired.speaker_draws`, the same for both). Under
    the null ``E`` has expectation 0 whatever the answer noise (``T(X)`` is then itself one draw of the exchange
    distribution), so a noisier fair checkpoint is not worse; a systematic effect moves ``T(X)`` beyond the
    exchanged values and stays. A checkpoint whose arms answer alike has ``E = 0`` in every replicate. Computed
    from the per-speaker sums alone (:func:`speaker_arm_sums`, the records' paired data): with ``X`` a speaker's
    sums and ``X'`` = ``X[:, exchange]`` (:func:`arm_exchange_index`), the exchanged group sums of draw ``w`` are
    ``w @ X + (w * f_m) @ (X' - X)``.

    Both tables are indexed by speaker with a ``group`` column and the same numeric columns in the same order as
    ``exchange``; a ``ValueError`` when their speakers or groups differ or no replicate is finite. Returns a
    :class:`~harness.metrics.paired.PairedBootstrapResult` whose ``candidate``, ``baseline`` are the excesses."""
    candidate, baseline = candidate.sort_index(), baseline.sort_index()
    if not candidate.index.equals(baseline.index) or not candidate["group"].equals(baseline["group"]):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")
    groups = candidate["group"].astype(str).to_numpy()
    values = [table.drop(columns="group").to_numpy(dtype=float) for table in (candidate, baseline)]
    if values[0].shape[1] != len(exchange):
        raise ValueError(f"paired_excess_bootstrap: {values[0].shape[1]} columns but {len(exchange)} exchange indices")
    rng = np.random.default_rng(seed)
    flips = rng.integers(0, 2, size=(n_exchanges, len(candidate))).astype(float)
    draws = np.vstack([np.ones((1, len(candidate))), speaker_draws(groups, n_boot, int(rng.integers(2**31)))])
    members = {group: groups == group for group in np.unique(groups)}
    chunk = max(1, 4_000_000 // max(1, n_exchanges * values[0].shape[1] * len(members)))

    def excess(table: np.ndarray) -> np.ndarray:
        change = table[:, exchange] - table
        out = np.empty(len(draws))
        for start in range(0, len(draws), chunk):
            weights = draws[start : start + chunk]
            observed, exchanged = {}, {}
            for group, member in members.items():
                w, x, d = weights[:, member], table[member], change[member]
                observed[group] = w @ x
                moved = np.einsum("bs,ms,sk->bmk", w, flips[:, member], d, optimize=True)
                exchanged[group] = (observed[group][:, None, :] + moved).reshape(-1, x.shape[1])
            with warnings_ignored():
                null = in_row_blocks(statistic, exchanged).reshape(len(weights), n_exchanges)
                out[start : start + chunk] = statistic(observed) - np.nanmean(null, axis=1)
        return out

    return excess_difference(excess(values[0]), excess(values[1]), groups, n_boot, alpha, seed)


def in_row_blocks(
    statistic: Callable[[dict[str, np.ndarray]], np.ndarray], sums: dict[str, np.ndarray], block_values: int = 2**16
) -> np.ndarray:
    """``statistic(sums)`` for a :func:`release_statistic`, whose every row is computed from that row alone, in
    blocks of about ``block_values`` sums, so that each block's intermediate arrays stay in the CPU's cache: bit for
    bit the one-pass values."""
    rows, width = len(next(iter(sums.values()))), sum(values.shape[1] for values in sums.values())
    step = max(1, block_values // max(1, width))
    if rows <= 2 * step:
        return statistic(sums)
    return np.concatenate(
        [
            statistic({name: values[start : start + step] for name, values in sums.items()})
            for start in range(0, rows, step)
        ]
    )


# ------------------------------------------------------------------------------------------ perceived group


def perceived_shares(table: pd.DataFrame) -> pd.DataFrame:
    """Per swap direction (``source_group`` -> ``target_group``): ``clips``, ``perceived_as_target`` and ``share``
    (0-1). ``table``: one row per swapped clip with the columns ``source_group``, ``target_group`` and
    ``perceived_group`` (None or NaN when the perceiver could not tell, which counts as not the target)."""
    require_columns(table, ["source_group", "target_group", "perceived_group"], "perceived_shares", nonempty=True)
    hit = table["perceived_group"].astype(object).eq(table["target_group"]).astype(int)
    grouped = table.assign(hit=hit).groupby(["source_group", "target_group"])["hit"]
    result = pd.DataFrame({"clips": grouped.size(), "perceived_as_target": grouped.sum().astype(int)})
    result["share"] = result["perceived_as_target"] / result["clips"]
    return result


def smallest_p_value(speakers: int, directions: int = 1) -> float:
    """The smallest p-value the exact paired test can give with ``speakers`` units in ``directions`` blocks swapped
    together: ``2^D / 2^S`` (:class:`~harness.metrics.permutation_floor.PermutationFloor`); ``2 / 2^S`` for one direction. A design
    where this exceeds the case's corrected alpha cannot show a significant effect, however large."""
    if speakers < 1 or not 1 <= directions <= speakers:
        raise ValueError(f"smallest_p_value: needs 1 <= directions <= speakers, got {directions} and {speakers}")
    units = [speakers // directions + (i < speakers % directions) for i in range(directions)]
    return PermutationFloor(test=SIGN_FLIP, units=tuple(units)).design_p
