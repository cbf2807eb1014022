"""Granite Speech (ibm-granite/granite-speech-3.3-8b): conformer encoder + Q-Former projector, ``<|audio|>``.

Its feature extractor needs ``torchaudio`` and pads a batch to its longest item, so only audios of equal
length share a batch.
"""

from __future__ import annotations

from typing import Any

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter


class GraniteSpeechAdapter(AudioLMAdapter):
    name = "granite_speech"
    model_types = ("granite_speech",)
    model_class = "GraniteSpeechForConditionalGeneration"
    audio_batching = "equal_length"
    requires = ("torchaudio",)

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.fill(_templates.GRANITE, getattr(processor, "audio_token", "<|audio|>"))
