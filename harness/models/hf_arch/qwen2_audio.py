"""Qwen2-Audio (Qwen/Qwen2-Audio-7B-Instruct): Whisper encoder, ChatML, ``<|AUDIO|>`` placeholder.

Its processor pads every audio to a 30 s window with a feature mask, independently of the batch.
"""

from __future__ import annotations

from typing import Any

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter


class Qwen2AudioAdapter(AudioLMAdapter):
    name = "qwen2_audio"
    model_types = ("qwen2_audio",)
    model_class = "Qwen2AudioForConditionalGeneration"
    audio_batching = "free"

    def fallback_chat_template(self, processor: Any) -> str | None:
        bos, tok, eos = (getattr(processor, a, d) for a, d in (
            ("audio_bos_token", "<|audio_bos|>"), ("audio_token", "<|AUDIO|>"), ("audio_eos_token", "<|audio_eos|>")))  # fmt: skip
        return _templates.chatml(f"Audio 1: {bos}{tok}{eos}\n")
