"""Gemma 3n (google/gemma-3n-E4B-it): USM-style conformer audio encoder, ``<audio_soft_token>``.

The model class always builds its vision tower, which needs ``timm``. The audio feature extractor pads
a batch to its longest item (with a mask, but the conformer's convolutions see the padding), so only
audios of equal length share a batch. Gemma has no system role: a system text is prepended to the user
turn, as Gemma's own template does.
"""

from __future__ import annotations

from typing import Any

from harness.core.requests import GenerationRequest
from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter


class Gemma3nAdapter(AudioLMAdapter):
    name = "gemma3n"
    model_types = ("gemma3n",)
    model_class = "Gemma3nForConditionalGeneration"
    audio_batching = "equal_length"
    requires = ("timm",)

    def messages(self, request: GenerationRequest) -> list[dict[str, Any]]:
        msgs = super().messages(request)
        if msgs[0]["role"] == "system":
            system = msgs.pop(0)["content"][0]["text"]
            text = next(p for p in msgs[0]["content"] if p["type"] == "text")
            text["text"] = f"{system}\n\n{text['text']}"
        return msgs

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.fill(_templates.GEMMA, getattr(processor, "audio_token", "<audio_soft_token>"))
