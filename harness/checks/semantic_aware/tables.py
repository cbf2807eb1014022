"""What the ratio checks are fitted on: each utterance's reply to one prompt, and the semantic covariates of
its reference text (the PCA components of its embeddings; semantic-aware mixed-effects paper §III-B)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.checks.context import CheckContext
from harness.core.errors import ModelError, RequestsPlanned
from harness.core.requests import GenerationRequest
from harness.semantic import semantic_covariates


def spoken_replies(
    context: CheckContext, model: Any, corpus_name: str, prompt: str | Sequence[str], label: str
) -> pd.DataFrame:
    """The reply of ``model`` (a spec or a cached model) to ``prompt`` (one for every utterance, or one each, in
    the corpus's row order) with each utterance's audio: ``utterance_id, speaker_id, content_id, transcript,
    prompt, heard, reply``."""
    audio = context.corpus_audio(corpus_name)
    frame = (
        context.corpora[corpus_name]
        .table[["utterance_id", "speaker_id", "content_id", "transcript"]]
        .reset_index(drop=True)
    )
    prompts = [prompt] * len(frame) if isinstance(prompt, str) else list(prompt)
    if len(prompts) != len(frame):
        raise ValueError(f"{corpus_name}: {len(prompts)} prompts for {len(frame)} utterances")
    frame = frame.assign(prompt=prompts)
    requests = [
        GenerationRequest(prompt=text, audio=audio[utterance_id])
        for utterance_id, text in zip(frame["utterance_id"], prompts)
    ]
    outputs = context.outputs(model, requests, f"{corpus_name}/{label}").rename(columns={"answer": "reply"})
    return pd.concat([frame, outputs], axis=1)


def with_semantic_covariates(
    context: CheckContext, model: str, table: pd.DataFrame, texts: Sequence[str], components: int
) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]], dict[str, Any]]:
    """``table`` with the PCA components of the texts' embeddings by each of ``model``'s semantic embedders
    (:meth:`~harness.checks.context.CheckContext.semantics`) as columns, the column set of each embedder by name (one
    ratio row each), and what to report of them: where they come from, each embedder's fingerprint, explained
    variance and first two components (the paper's Fig. 1), or why it could not be computed; an embedder that could
    not be computed is named in the deviation (the case is then judged on another row than the paper's). Under
    ``--plan``, every embedder's missing embeddings are planned before :class:`~harness.core.errors.RequestsPlanned` stops
    the case."""
    setup = context.semantics(model)
    semantics: dict[str, Any] = {**setup.as_dict(), "embeddings": {}}
    covariate_sets: dict[str, tuple[str, ...]] = {}
    planned: RequestsPlanned | None = None
    for embedder in setup.embedders:
        entry: dict[str, Any] = {"fingerprint": embedder.fingerprint}
        try:
            covariates = semantic_covariates(
                embedder, texts, context.cache, k=components, prefix=f"{_slug(embedder.name)}_pc"
            )
        except RequestsPlanned as exc:
            planned = planned or exc
            continue
        except ModelError as exc:
            entry["error"] = str(exc)
        else:
            table = table.assign(
                **{column: covariates.scores[:, index] for index, column in enumerate(covariates.columns)}
            )
            covariate_sets[embedder.name] = covariates.columns
            entry |= {
                "components": len(covariates.columns),
                "explained_variance": [round(float(v), 6) for v in covariates.explained_variance_ratio],
                "columns": list(covariates.columns),
            }
        semantics["embeddings"][embedder.name] = entry
    if planned is not None:
        raise planned
    named = [f"{name} ({entry['fingerprint']})" for name, entry in semantics["embeddings"].items()]
    semantics["embedder"] = ", ".join(named) or "none"
    failed = [f"{name} ({entry['error']})" for name, entry in semantics["embeddings"].items() if "error" in entry]
    if failed:
        semantics["deviation"] = "; ".join(
            filter(
                None,
                [
                    semantics.get("deviation"),
                    f"semantic covariates of {model}: {', '.join(failed)} could not be computed, so its ratio cases "
                    "are not judged on those embeddings' rows (semantic-aware paper §III-B)",
                ],
            )
        )
    return table, covariate_sets, semantics


def first_components(table: pd.DataFrame, semantics: dict[str, Any], dimension: str) -> dict[str, Any]:
    """Per embedder: each group's utterances on its first two principal components (the paper's Fig. 1)."""
    figure = {}
    for name, entry in semantics.get("embeddings", {}).items():
        columns = entry.get("columns") or []
        if len(columns) < 2:
            continue
        groups = {
            str(group): [[round(float(x), 3), round(float(y), 3)] for x, y in rows[columns[:2]].to_numpy()]
            for group, rows in table.groupby(dimension)
        }
        figure[name] = {"groups": groups, "explained_variance": entry["explained_variance"][:2]}
    return figure


def _slug(name: str) -> str:
    return "".join(character if character.isalnum() else "_" for character in name.lower())
