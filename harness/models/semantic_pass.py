"""The forward pass behind a model's own semantic embeddings, Embed-AGG and Embed-EOWL (semantic-aware paper
§III-B, eq. 7 and 8; the formulas and the exact reduction of the logits are in :mod:`harness.semantic`).

Any loaded transformers model that can encode raw text gives one: the ``hf:`` audio LLMs through their
architecture adapter's text path, SmolLM2 (the demo cascade's LLM) through its tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.core.errors import ModelError


def agg_layers(depth: int) -> tuple[int, int, int]:
    """Eq. 7's layers of a model with ``depth`` Transformer layers: the first, ``floor(L / 2)`` and the last
    (indices into ``h_0 .. h_L``; ``L = 1`` gives ``(1, 0, 1)``, the embedding layer as the middle one)."""
    if depth < 1:
        raise ModelError(f"Embed-AGG needs at least one Transformer layer, got {depth}")
    return 1, depth // 2, depth


def soft_capped(config: Any) -> bool:
    """Whether the model's logits pass through a final soft-cap (``c tanh(z / c)``), so are not linear in its last
    hidden state."""
    configs = [config]
    if hasattr(config, "get_text_config"):
        configs.append(config.get_text_config())
    return any(getattr(item, "final_logit_softcapping", None) for item in configs)


class SemanticPass:
    """Embed-AGG and Embed-EOWL of raw texts from one loaded model.

    ``encode(texts)`` gives the batch's tensors (``input_ids``, ``attention_mask``) on the model's device;
    ``forward(inputs, **kwargs)`` runs the model; ``head`` is its output projection (``get_output_embeddings()``)
    or None.
    """

    def __init__(
        self,
        spec: str,
        encode: Callable[[list[str]], Any],
        forward: Callable[..., Any],
        head: Any,
        *,
        batch_size: int = 8,
        linear_logits: bool = True,
    ) -> None:
        self.spec = spec
        self.encode = encode
        self.forward = forward
        self.head = head
        self.batch_size = max(1, int(batch_size))
        self.linear_logits = linear_logits and head is not None and getattr(head, "weight", None) is not None
        self._basis: Any = None

    def _batches(self, texts: Sequence[str]) -> Any:
        import torch

        for start in range(0, len(texts), self.batch_size):
            inputs = self.encode(list(texts[start : start + self.batch_size]))
            try:
                with torch.inference_mode():
                    outputs = self.forward(inputs, output_hidden_states=True)
            except Exception as exc:
                raise ModelError(f"{self.spec}: the embedding pass failed: {type(exc).__name__}: {exc}") from exc
            yield inputs["attention_mask"], outputs

    def embed_agg(self, texts: Sequence[str]) -> np.ndarray:
        """Eq. 7: the token means of the first, floor(L/2)-th and last layers' hidden states, averaged."""
        rows = []
        for mask, outputs in self._batches(texts):
            states = outputs.hidden_states
            weights = mask.to(states[0].device).unsqueeze(-1).float()
            counts = weights.sum(1).clamp(min=1.0)
            pooled = [(states[layer].float() * weights).sum(1) / counts for layer in agg_layers(len(states) - 1)]
            rows.append((sum(pooled) / 3.0).cpu().numpy().astype(np.float64))
        return np.concatenate(rows) if rows else np.zeros((0, 0))

    def embed_eowl(self, prompts: Sequence[str]) -> np.ndarray:
        """Eq. 8: the next-token logits after each prompt, as ``Q' l`` (an isometry of the logits; see
        :mod:`harness.semantic`), or the full logits when they are not linear in the last hidden state."""
        rows = []
        for mask, outputs in self._batches(prompts):
            logits = outputs.logits
            last = mask.to(logits.device).long().cumsum(1).argmax(1)
            final = logits[range(len(last)), last].float()
            if self.linear_logits:
                final = final @ self.basis().to(final.device)
            rows.append(final.cpu().numpy().astype(np.float64))
        return np.concatenate(rows) if rows else np.zeros((0, 0))

    def basis(self) -> Any:
        """``Q`` of the reduced QR decomposition of the output head's weight ``W = Q R`` (vocab x d)."""
        if self._basis is None:
            import torch

            with torch.inference_mode():
                self._basis = torch.linalg.qr(self.head.weight.detach().float(), mode="reduced").Q
        return self._basis


def left_padded(token_ids: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """``input_ids`` and ``attention_mask`` of token sequences, padded on the left with ``pad_id``."""
    import torch

    width = max(len(ids) for ids in token_ids)
    input_ids = torch.full((len(token_ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(token_ids), width), dtype=torch.long)
    for row, ids in enumerate(token_ids):
        if ids:
            input_ids[row, width - len(ids) :] = torch.tensor(list(ids), dtype=torch.long)
            mask[row, width - len(ids) :] = 1
    return input_ids, mask
