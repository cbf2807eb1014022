"""Qwen2.5-Omni's thinker (Qwen/Qwen2.5-Omni-7B, text output only): Whisper-style encoder, ChatML.

A full Omni checkpoint (``model_type: qwen2_5_omni``) is loaded with ``enable_audio_output=False`` and
its thinker generates (the talker / token2wav speech output is never built). A thinker-only checkpoint
loads directly.

Its processor also needs a video processor (torchvision). Without torchvision the adapter assembles the
audio path by hand, as the processor does: Whisper features padded to 30 s per item with a feature mask,
and ``<|AUDIO|>`` expanded to the encoder's output length.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter, whisper_tokenizer_and_features


def audio_token_count(feature_lengths: Any) -> Any:
    """Encoder output length for a feature length (the processor's ``_get_feat_extract_output_lengths``)."""
    lengths = (feature_lengths - 1) // 2 + 1
    return (lengths - 2) // 2 + 1


class OmniAudioProcessor:
    """The audio+text half of ``Qwen2_5OmniProcessor``, for environments without torchvision: Whisper features,
    and each audio placeholder of the text repeated once per encoder output token. A sibling architecture
    overrides :meth:`features` (how the batch is padded) and :meth:`token_counts` (how the encoder counts)."""

    audio_token = "<|AUDIO|>"

    def __init__(self, tokenizer: Any, feature_extractor: Any) -> None:
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.chat_template = getattr(tokenizer, "chat_template", None)

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(conversation, **kwargs)

    def features(self, audio: Sequence[np.ndarray], sampling_rate: int) -> Any:
        return self.feature_extractor(
            list(audio), sampling_rate=sampling_rate, return_attention_mask=True, padding="max_length",
            return_tensors="pt",
        )  # fmt: skip

    def token_counts(self, feature_lengths: Any) -> list[int]:
        return audio_token_count(feature_lengths).tolist()

    def __call__(self, text: Sequence[str], audio: Sequence[np.ndarray] | None = None, return_tensors: str = "pt",
                 text_kwargs: dict | None = None, audio_kwargs: dict | None = None, **_: Any) -> Any:  # fmt: skip
        from transformers import BatchFeature

        sampling_rate = (audio_kwargs or {}).get("sampling_rate", self.feature_extractor.sampling_rate)
        padding = (text_kwargs or {}).get("padding", True)
        texts = list(text)
        data: dict[str, Any] = {}
        if audio is not None:
            feats = self.features(audio, sampling_rate)
            data["input_features"] = feats["input_features"]
            data["feature_attention_mask"] = feats["attention_mask"]
            counts = iter(self.token_counts(feats["attention_mask"].sum(-1)))
            expanded = []
            for t in texts:
                parts = t.split(self.audio_token)
                out = parts[0]
                for rest in parts[1:]:
                    out += self.audio_token * int(next(counts)) + rest
                expanded.append(out)
            texts = expanded
        enc = self.tokenizer(texts, return_tensors=return_tensors, padding=padding)
        return BatchFeature({**enc, **data})


class Qwen25OmniAdapter(AudioLMAdapter):
    name = "qwen2_5_omni"
    model_types = ("qwen2_5_omni", "qwen2_5_omni_thinker")
    model_class = "Qwen2_5OmniThinkerForConditionalGeneration"
    audio_batching = "free"

    def audio_only_processor(self, path: str, hub: Mapping[str, Any]) -> Any:
        tok, fe = whisper_tokenizer_and_features(path, hub)
        return OmniAudioProcessor(tok, fe)

    def load_model(self, path: str, hub: Mapping[str, Any], load_kwargs: Mapping[str, Any]) -> Any:
        model_type = None
        if os.path.isdir(path):
            with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
                model_type = json.load(fh).get("model_type")
        else:
            from transformers import AutoConfig

            model_type = AutoConfig.from_pretrained(path, **hub).model_type
        if model_type == "qwen2_5_omni":
            from transformers import Qwen2_5OmniForConditionalGeneration

            full = Qwen2_5OmniForConditionalGeneration.from_pretrained(
                path, enable_audio_output=False, **hub, **load_kwargs
            )
            return full.thinker
        return super().load_model(path, hub, load_kwargs)

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.chatml("<|audio_bos|><|AUDIO|><|audio_eos|>")
