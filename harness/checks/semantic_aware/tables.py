"""What the ratio checks are fitted on: each utterance's reply to one prompt, and the semantic covariates of
its reference text (the PCA components of its embeddings; semantic-aware mixed-effects paper §III-B)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.checks.base import CheckContext
from harness.core.requests import GenerationRequest
from harness.semantic import semantic_covariates


def spoken_replies(context: CheckContext, model: Any, corpus_name: str, prompt: str, label: str) -> pd.DataFrame:
    """The reply of ``model`` (a spec or a cached model) to ``prompt`` with each utterance's audio:
    ``utterance_id, speaker_id, content_id, transcript, heard, reply``."""
    audio = context.corpus_audio(corpus_name)
    frame = (
        context.corpora[corpus_name]
        .table[["utterance_id", "speaker_id", "content_id", "transcript"]]
        .reset_index(drop=True)
    )
    requests = [GenerationRequest(prompt=prompt, audio=audio[utterance_id]) for utterance_id in frame["utterance_id"]]
    outputs = context.outputs(model, requests, f"{corpus_name}/{label}").rename(columns={"answer": "reply"})
    return pd.concat([frame, outputs], axis=1)


def with_semantic_covariates(
    context: CheckContext, table: pd.DataFrame, texts: Sequence[str], components: int
) -> tuple[pd.DataFrame, tuple[str, ...], dict[str, Any]]:
    """``table`` with the PCA components of the texts' embeddings as columns (none without an embedder),
    the column names, and what to report of them (embedder, explained variance)."""
    semantics: dict[str, Any] = {"embedder": context.embedder_name, "explained_variance": []}
    if context.embedder is None:
        return table, (), semantics
    covariates = semantic_covariates(context.embedder, texts, context.cache, k=components)
    table = table.assign(**{column: covariates.scores[:, index] for index, column in enumerate(covariates.columns)})
    semantics["explained_variance"] = [round(float(v), 6) for v in covariates.explained_variance_ratio]
    return table, covariates.columns, semantics
