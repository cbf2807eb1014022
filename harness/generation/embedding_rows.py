"""A plan's embedding rows answered: the model's own semantic embeddings of the rows' texts, as the gate computes them.

Rows of namespace ``embedding`` (:data:`harness.generation.request_plan.EMBEDDING_NAMESPACE`) ask for the Embed-AGG
or Embed-EOWL of a text by the weights of the model under test (:mod:`harness.semantic`). Both fills, in process
(:mod:`harness.generation.fill_plan`) and on Ray (:mod:`harness.generation.ray_fill`), answer them here, through the
model's own embedders (:func:`harness.semantic.own_embedders`), so that a planned embedding is the one the gate would
compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.generation.cached_model import CachedModel
from harness.generation.request_plan import PlannedRequest, RefusedRow
from harness.semantic import embedding_entries, embedding_key, own_embedders


def planned_embedding_entries(
    model: CachedModel, rows: Sequence[PlannedRequest]
) -> tuple[list[tuple[str, str, str, str, dict[str, Any]]], list[RefusedRow]]:
    """The cache entries (:meth:`OutputCache.put_many`'s) of the embeddings plan ``rows`` (namespace ``embedding``)
    ask of ``model`` (built from the rows' spec and options; its fingerprint is the fill's to check), by its own
    embedders (:func:`own_embedders`); and the rows refused, each naming the row: a kind the model has no
    embedder of here, or a key other than the one its text hashes to here (:func:`embedding_key`)."""
    embedders = {embedder.kind: embedder for embedder in own_embedders(model)}
    kept: dict[str, list[PlannedRequest]] = {}
    refused = []
    for row in rows:
        embedder = embedders.get(row.embedding or "")
        if embedder is None:
            refused.append(
                RefusedRow(
                    row.key,
                    f"plan row {row.key} ({row.spec}, {row.label}): this model gives no {row.embedding!r} embedding "
                    f"here (it has {sorted(embedders) or 'none'}): refused",
                )
            )
        elif embedding_key(embedder.fingerprint, row.prompt) != row.key:
            refused.append(
                RefusedRow(
                    row.key,
                    f"plan row {row.key} ({row.spec}, {row.label}): its text hashes to "
                    f"{embedding_key(embedder.fingerprint, row.prompt)} here, not to the row's key: refused, as an "
                    "embedding stored under the row's key would be found for another text",
                )
            )
        else:
            kept.setdefault(row.embedding or "", []).append(row)
    entries = []
    for kind, kind_rows in kept.items():
        entries += embedding_entries(embedders[kind], list(dict.fromkeys(row.prompt for row in kind_rows)))
    return entries, refused
