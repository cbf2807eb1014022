"""Phi-4-multimodal (microsoft/Phi-4-multimodal-instruct, transformers-native weights): ``<|audio|>``.

Its feature extractor pads a batch's audio features to the longest item; the conformer encoder's
convolutions then see that padding (measured: a shorter audio batched with a longer one decodes
differently than alone), so only audios of equal length share a batch (``equal_length``).

Its image processor needs torchvision; for audio-only use, when torchvision is missing, the processor
is assembled from the checkpoint's feature extractor and tokenizer with a PIL image processor standing
in (never called for audio).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.models.hf_arch import _templates
from harness.models.hf_arch.base import AudioLMAdapter


class Phi4MultimodalAdapter(AudioLMAdapter):
    name = "phi4_multimodal"
    model_types = ("phi4_multimodal", "phi4mm")
    model_class = "Phi4MultimodalForCausalLM"
    audio_batching = "equal_length"

    def audio_only_processor(self, path: str, hub: Mapping[str, Any]) -> Any:
        from transformers import AutoTokenizer, Phi4MultimodalFeatureExtractor, Phi4MultimodalProcessor
        from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

        return Phi4MultimodalProcessor(
            image_processor=SiglipImageProcessorPil(),
            audio_processor=Phi4MultimodalFeatureExtractor.from_pretrained(path, **hub),
            tokenizer=AutoTokenizer.from_pretrained(path, **hub),
        )

    def fallback_chat_template(self, processor: Any) -> str | None:
        return _templates.fill(_templates.PHI4, getattr(processor, "audio_token", "<|audio|>"))
