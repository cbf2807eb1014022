"""Qwen3-Omni's thinker (Qwen/Qwen3-Omni-30B-A3B-Instruct and its -Thinking / -Captioner siblings, text
output only): a chunked Whisper-style audio encoder feeding a mixture-of-experts decoder, ChatML with
``<|audio_start|><|audio_pad|><|audio_end|>`` for each audio.

A full Omni checkpoint (``model_type: qwen3_omni_moe``) is loaded with ``enable_audio_output=False`` and
its thinker generates (the talker / code2wav speech output is never built); a thinker-only checkpoint
(``qwen3_omni_moe_thinker``) loads directly. Generation stops at ``<|im_end|>``, as the full model's own
``generate`` stops its thinker.

Its processor pads a batch's audio to the longest item (not to a fixed window): the padding changes the
last log-mel frame of a shorter audio and can add one frame to its feature mask (measured: 8850 samples
give 55 frames alone, 56 beside a longer audio), so only audios of equal length share a batch
(``equal_length``). The encoder itself drops masked frames before its 100-frame chunks.

Its processor also needs a video processor (torchvision). Without torchvision the adapter assembles the
audio path by hand, as the processor does: Whisper features padded to the batch's longest item with a
feature mask, and ``<|audio_pad|>`` expanded to the encoder's output length.

Answers are cleaned as every adapter's are (:func:`~harness.models.base.finished_answer`), nothing more: a
reasoning (-Thinking) checkpoint's answer keeps whatever reasoning it writes, exactly as the vllm: and
openai: backends return the same tokens.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter, whisper_tokenizer_and_features
from harness.models.hf_arch.qwen2_5_omni import OmniAudioProcessor

AUDIO_PLACEHOLDER = "<|audio_start|><|audio_pad|><|audio_end|>"
END_OF_TURN = "<|im_end|>"
# the hub arguments that locate a config (a processor's may carry processor-only kwargs besides)
CONFIG_HUB_KEYS = ("revision", "local_files_only", "trust_remote_code", "cache_dir", "token")


def audio_token_count(feature_lengths: Any, n_window: int = 50) -> Any:
    """Encoder output length for a feature length, as the processor and the encoder count it: the frames
    are cut into chunks of ``2 * n_window``; each whole chunk gives 13 tokens, the remainder is halved
    (rounding up) by each of the three stride-2 convolutions."""
    chunk = 2 * n_window
    rest = feature_lengths % chunk
    for _ in range(3):
        rest = (rest - 1) // 2 + 1
    return rest + (feature_lengths // chunk) * 13


class Qwen3OmniAudioProcessor(OmniAudioProcessor):
    """The audio+text half of ``Qwen3OmniMoeProcessor``, for environments without torchvision: features padded to
    the batch's longest and never truncated (the processor's own defaults), tokens counted by ``n_window``."""

    audio_token = "<|audio_pad|>"

    def __init__(self, tokenizer: Any, feature_extractor: Any, n_window: int = 50) -> None:
        super().__init__(tokenizer, feature_extractor)
        self.n_window = n_window

    def features(self, audio: Sequence[np.ndarray], sampling_rate: int) -> Any:
        return self.feature_extractor(
            list(audio), sampling_rate=sampling_rate, padding=True, truncation=False, return_attention_mask=True,
            return_tensors="pt",
        )  # fmt: skip

    def token_counts(self, feature_lengths: Any) -> list[int]:
        return audio_token_count(feature_lengths, self.n_window).tolist()


class Qwen3OmniMoeAdapter(AudioLMAdapter):
    name = "qwen3_omni_moe"
    model_types = ("qwen3_omni_moe", "qwen3_omni_moe_thinker")
    model_class = "Qwen3OmniMoeThinkerForConditionalGeneration"
    audio_batching = "equal_length"

    def checkpoint_config(self, path: str, hub: Mapping[str, Any]) -> dict[str, Any]:
        """The checkpoint's ``config.json`` as a dict (read as JSON for a local folder)."""
        if os.path.isdir(path):
            with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
                return json.load(fh)
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(path, **{k: v for k, v in hub.items() if k in CONFIG_HUB_KEYS}).to_dict()

    def audio_only_processor(self, path: str, hub: Mapping[str, Any]) -> Any:
        tok, fe = whisper_tokenizer_and_features(path, hub)
        config = self.checkpoint_config(path, hub)
        thinker = config.get("thinker_config") or config
        n_window = int((thinker.get("audio_config") or {}).get("n_window", 50))
        return Qwen3OmniAudioProcessor(tok, fe, n_window=n_window)

    def load_model(self, path: str, hub: Mapping[str, Any], load_kwargs: Mapping[str, Any]) -> Any:
        if self.checkpoint_config(path, hub).get("model_type") == "qwen3_omni_moe":
            from transformers import Qwen3OmniMoeForConditionalGeneration

            full = Qwen3OmniMoeForConditionalGeneration.from_pretrained(
                path, enable_audio_output=False, **hub, **load_kwargs
            )
            return full.thinker
        return super().load_model(path, hub, load_kwargs)

    def special_token_ids(self, model: Any, processor: Any) -> dict[str, Any]:
        """The generic ids, with ``<|im_end|>`` among the eos ids (the thinker's end of turn)."""
        ids = super().special_token_ids(model, processor)
        tok = self.tokenizer(processor)
        end = tok.get_vocab().get(END_OF_TURN)
        if end is None:
            return ids
        eos = ids.get("eos_token_id")
        eos_ids = [] if eos is None else list(eos) if isinstance(eos, (list, tuple)) else [eos]
        if end not in eos_ids:
            ids["eos_token_id"] = [*eos_ids, end] if eos_ids else end
        ids.setdefault("pad_token_id", eos_ids[0] if eos_ids else end)
        return ids

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.chatml(AUDIO_PLACEHOLDER, default_system=False)
