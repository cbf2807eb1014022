"""Voxtral (mistralai/Voxtral-Mini-3B-2507): Whisper encoder, mistral-common (Tekken) tokenizer.

The processor cannot take audio through ``__call__``: conversations go through its
``apply_chat_template`` (mistral-common renders ``[INST][BEGIN_AUDIO][AUDIO]...[/INST]`` and expands the
audio tokens), with audio passed as base64 WAV. Every audio is padded to a multiple of 30 s on its own,
so batching does not change what the model hears.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.core.requests import GenerationRequest
from harness.models.hf_arch.base import AudioLMAdapter


def wav_base64(samples: np.ndarray, sample_rate: int) -> str:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.asarray(samples, dtype=np.float32), sample_rate, format="WAV", subtype="FLOAT")
    return base64.b64encode(buf.getvalue()).decode("ascii")


class VoxtralAdapter(AudioLMAdapter):
    name = "voxtral"
    model_types = ("voxtral",)
    model_class = "VoxtralForConditionalGeneration"
    audio_batching = "free"
    requires = ("mistral_common",)

    def prepare(self, processor: Any) -> None:
        processor.tokenizer.padding_side = "left"

    def _conversation(self, request: GenerationRequest, audio: np.ndarray | None, sr: int) -> list[dict[str, Any]]:
        # mistral-common refuses a system message beside audio before tokenizer v13 (Voxtral's is v7):
        # the system text is prepended to the user turn, for audio and text-only requests alike.
        text = request.prompt if request.system is None else f"{request.system}\n\n{request.prompt}"
        if audio is None:
            return [{"role": "user", "content": text}]
        parts = [{"type": "audio", "base64": wav_base64(audio, sr)}, {"type": "text", "text": text}]
        return [{"role": "user", "content": parts}]

    def render(self, processor: Any, request: GenerationRequest) -> str:
        audio = None
        if request.audio is not None:
            audio = np.asarray(request.audio.samples, dtype=np.float32)
        conv = self._conversation(request, audio, self.sampling_rate(processor))
        return processor.tokenizer.apply_chat_template(conv, tokenize=False)

    def encode(self, processor: Any, requests: Sequence[GenerationRequest], audios: Sequence[np.ndarray | None]) -> Any:
        sr = self.sampling_rate(processor)
        convs = [self._conversation(r, a, sr) for r, a in zip(requests, audios)]
        return processor.apply_chat_template(convs, tokenize=True, return_dict=True, return_tensors="pt")

    def encode_text(self, processor: Any, texts: Sequence[str]) -> Any:
        return processor.tokenizer(list(texts), return_tensors="pt", padding=True)
