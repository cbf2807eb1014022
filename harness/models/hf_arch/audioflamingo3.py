"""Audio Flamingo 3 (nvidia/audio-flamingo-3-hf): Whisper-style encoder over 30 s windows, ``<sound>``.

The processor cuts audio into 30 s windows, each padded to 30 s with a feature mask, per item: batching
does not change what the model hears.
"""

from __future__ import annotations

from typing import Any

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter


class AudioFlamingo3Adapter(AudioLMAdapter):
    name = "audioflamingo3"
    model_types = ("audioflamingo3",)
    model_class = "AudioFlamingo3ForConditionalGeneration"
    audio_batching = "free"

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.chatml(getattr(processor, "audio_token", "<sound>"), default_system=False)
