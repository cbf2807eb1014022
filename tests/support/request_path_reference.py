"""The per-request hot path as it was before issue 46's vectorisation, kept verbatim as the reference the fast
versions are compared with (tests/metrics/test_request_path_equivalence.py) and timed against
(benchmarks/bench_request_path.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jiwer
import numpy as np
import pandas as pd

from harness.metrics.counterfactual import (
    ALL_DIRECTIONS,
    COLUMN_SEPARATOR,
    OTHER_VALUE,
    ArmNTVDResult,
    _arm_rows,
    paired_permutation_test,
)
from harness.metrics.ntvd import mean_over_measured, ntvd_from_group_counts
from harness.metrics.wer import WordErrors, normalise_text


def flip_rates_reference(table: pd.DataFrame, arms: Sequence[str] = ("identity", "swap")) -> pd.DataFrame:
    """One frozenset of ``str(value)`` per attribute, recording and arm; a recording flips where its two differ."""
    rows = _arm_rows(table, arms, ("attribute", "value"), "flip_rates", drop_unpaired=True)
    value_sets = rows.groupby(["attribute", "recording", "arm"])["value"].agg(
        lambda values: frozenset(map(str, values))
    )
    paired = value_sets.unstack("arm").reindex(columns=list(arms)).dropna()
    flipped = (paired[arms[0]] != paired[arms[1]]).groupby(level="attribute")
    result = pd.DataFrame({"recordings": flipped.size(), "flipped": flipped.sum().astype(int)})
    result["flip_rate"] = result["flipped"] / result["recordings"]
    return result


def cache_key_reference(
    namespace: str, model_fingerprint: str, params: Mapping[str, Any], request: Mapping[str, Any]
) -> str:
    """SHA-256 of ``json.dumps`` of the whole key payload, one call per request."""
    payload = {"namespace": namespace, "model": model_fingerprint, "params": dict(params), "request": dict(request)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def word_errors_reference(reference: str, hypothesis: str, *, normalise: bool = True) -> WordErrors:
    """Normalised, split, and aligned by ``jiwer.process_words`` per pair."""
    ref = (normalise_text(reference) if normalise else str(reference)).split()
    hyp = (normalise_text(hypothesis) if normalise else str(hypothesis)).split()
    if not ref:
        return WordErrors(0, 0, len(hyp), 0)
    if not hyp:
        return WordErrors(0, len(ref), 0, len(ref))
    alignment = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return WordErrors(alignment.substitutions, alignment.deletions, alignment.insertions, len(ref))


def arm_ntvd_reference(table, arms=("identity", "swap"), *, direction="source_group", tau=10, n_permutations=1000,
                       seed=0) -> ArmNTVDResult:  # fmt: skip
    """The arm nTVD by pandas grouping on the text keys (the retained values by ``groupby(...).size()``, the counts
    by a five-key ``groupby`` unstacked), as it was before the arm tables' integer codes."""
    answered = table.loc[table["arm"].isin(arms), "recording"].nunique() if "recording" in table.columns else 0
    rows = _arm_rows(table, arms, ("attribute", "value"), "arm_ntvd", drop_unpaired=True)
    stratum = rows[direction].astype(str) if direction is not None and direction in rows.columns else ALL_DIRECTIONS
    rows = rows.assign(direction=stratum)
    keys = ["direction", "attribute", "value"]
    pairs = rows.groupby(keys).size()
    rare = ~rows.set_index(keys).index.isin(pairs[pairs >= tau].index)
    if rare.any():  # values rarer than tau pool into their attribute's "(other)" (issue 57)
        rows = rows.assign(value=rows["value"].astype(str).where(~rare, OTHER_VALUE))
        pairs = rows.groupby(keys).size()
    kept = pairs[pairs >= tau].sort_index()
    if kept.empty:
        raise ValueError(f"arm_ntvd: no attribute value occurs {tau} times (tau) in the two arms together")
    columns = pd.MultiIndex.from_tuples(kept.index, names=keys)
    column_segments = list(zip(columns.get_level_values(0), columns.get_level_values(1)))
    segments = list(dict.fromkeys(column_segments))
    segment_of_column = np.array([segments.index(pair) for pair in column_segments])
    directions = list(dict.fromkeys(name for name, _ in segments))
    members = [np.array([i for i, (name, _) in enumerate(segments) if name == d]) for d in directions]
    retained = rows.set_index(keys).index.isin(columns)
    grid = rows[retained].groupby(["arm", "speaker", *keys]).size().unstack(keys, fill_value=0)
    speakers = sorted(rows["speaker"].unique())
    first, second = (
        grid.reindex(index=pd.MultiIndex.from_product([[arm], speakers]), columns=columns, fill_value=0)
        .fillna(0).to_numpy(dtype=float)
        for arm in arms
    )  # fmt: skip

    def direction_scores(first_sums, second_sums):
        stacked = np.stack([first_sums, second_sums], axis=-2)
        per_segment = ntvd_from_group_counts(stacked, segment_of_column, len(segments))
        return np.stack([mean_over_measured(per_segment[..., indices]) for indices in members], axis=-1)

    def statistic(first_sums, second_sums):
        return mean_over_measured(direction_scores(first_sums, second_sums))

    speaker_direction = rows.groupby("speaker")["direction"].first().reindex(speakers).to_numpy()
    test = paired_permutation_test(first, second, statistic, n_permutations, seed, blocks=speaker_direction)
    totals = first.sum(axis=0), second.sum(axis=0)
    per_segment = ntvd_from_group_counts(np.stack(totals), segment_of_column, len(segments))
    per_attribute = {name: {} for name in directions}
    for (name, attribute), value in zip(segments, per_segment):
        per_attribute[name][attribute] = float(value)
    distributions = pd.DataFrame(dict(zip(arms, totals)), index=columns)
    distributions = distributions / distributions.groupby(level=["direction", "attribute"]).transform("sum")
    return ArmNTVDResult(
        score=test.observed,
        per_direction=dict(zip(directions, direction_scores(totals[0][None, :], totals[1][None, :])[0].tolist())),
        per_attribute=per_attribute,
        test=test,
        distributions=distributions.fillna(0.0),
        recordings=rows["recording"].nunique(),
        unpaired_recordings=answered - rows["recording"].nunique(),
    )


def largest_shifts_reference(distributions: pd.DataFrame, per_attribute: int = 2) -> pd.DataFrame:
    """``nsmallest`` and ``nlargest`` of each (direction, attribute) group, one frame per group and shift."""
    first, second = distributions.columns[:2]
    change = (distributions[second] - distributions[first]).rename("change")
    columns = ["direction", "attribute", "shift", "value", "change"]
    frames = []
    for (direction, attribute), values in change.groupby(level=["direction", "attribute"]):
        values = values.droplevel(["direction", "attribute"])
        falling, rising = values.nsmallest(per_attribute), values.nlargest(per_attribute)
        for label, picked in (("from", falling[falling < 0]), ("to", rising[rising > 0])):
            frame = pd.DataFrame({"value": picked.index, "change": picked.to_numpy()})
            frames.append(frame.assign(direction=direction, attribute=attribute, shift=label)[columns])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def value_counts_per_speaker_reference(rows: pd.DataFrame) -> pd.DataFrame:
    """The per-speaker counts of ``arm<TAB>attribute<TAB>value`` by concatenating the text of every row."""
    keys = (
        rows["arm"].astype(str)
        + COLUMN_SEPARATOR
        + rows["attribute"].astype(str)
        + COLUMN_SEPARATOR
        + rows["value"].astype(str)
    )
    return rows.assign(column=keys).groupby(["speaker", "column"]).size().unstack("column", fill_value=0)
