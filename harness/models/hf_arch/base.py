"""What every audio-LLM architecture adapter provides, with the generic (processor-driven) implementation.

An adapter knows, for one family of checkpoints: which transformers class to load, how to build the
processor, how a request becomes chat messages (where the audio placeholder goes), and how a batch of
requests becomes model inputs. The generic path is the one the modern transformers processors share:
render each conversation with the chat template (``tokenize=False``, one audio placeholder per audio),
then ``processor(text=prompts, audio=arrays, padding=True)`` which expands the placeholders and pads
the *text* (left) with an attention mask. Architectures whose processors deviate override a method.

``audio_batching`` says whether audios of different lengths may share a batch:

* ``"free"``: the processor pads every audio to a fixed window independently of its batch mates
  (Whisper-style 30 s windows with a feature mask): batching does not change what the model hears.
* ``"equal_length"``: the processor pads a batch's audio to its longest item and the encoder is not
  provably invariant to it (convolutions see the padding): only audios of exactly equal length share a
  batch. The backend buckets requests by audio length, so nothing is ever zero-padded by batching.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core.errors import ModelError
from harness.core.requests import GenerationRequest
from harness.models.base import finished_answer

AUDIO_BATCHING_MODES = ("free", "equal_length", "none")


class AudioLMAdapter:
    """Generic adapter; subclasses set the class attributes and override what their processor needs."""

    #: registry name, used in ``architecture:`` options and error messages
    name: str = "base"
    #: ``config.json`` ``model_type`` values this adapter serves
    model_types: tuple[str, ...] = ()
    #: transformers class name of the generating model
    model_class: str = ""
    #: see the module docstring
    audio_batching: str = "free"
    #: chat template used only when the checkpoint ships none (rendered with the processor's tokens)
    default_chat_template: str | None = None
    #: the audio content part comes before the text in the user turn
    audio_first: bool = True
    #: extra importable modules the processor or model needs beyond torch + transformers
    requires: tuple[str, ...] = ()
    #: system prompt added when a request has none (None: the chat template's own default, if any)
    default_system: str | None = None

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or {})
        mode = self.options.get("audio_batching", self.audio_batching)
        if mode not in AUDIO_BATCHING_MODES:
            raise ModelError(f"audio_batching must be one of {AUDIO_BATCHING_MODES}, got {mode!r}")
        self.audio_batching = mode

    # ----------------------------------------------------------------------------------- loading
    def check_requirements(self) -> None:
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            raise ModelError(
                f"architecture {self.name!r} needs the module(s) {missing}: pip install {' '.join(missing)}"
            )

    def load_processor(self, path: str, hub: Mapping[str, Any]) -> Any:
        """The checkpoint's own processor; without torchvision, :meth:`audio_only_processor` where the adapter
        has one (a multimodal processor whose image or video half needs torchvision)."""
        if not has_torchvision():
            fallback = self.audio_only_processor(path, hub)
            if fallback is not None:
                return fallback
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(path, **hub)

    def audio_only_processor(self, path: str, hub: Mapping[str, Any]) -> Any | None:
        """The audio+text processor assembled by hand when torchvision is missing; ``None`` (the default): the
        checkpoint's own processor needs no torchvision."""
        return None

    def model_cls(self) -> Any:
        import transformers

        cls = getattr(transformers, self.model_class, None)
        if cls is None:
            raise ModelError(
                f"architecture {self.name!r}: transformers {transformers.__version__} has no {self.model_class}; "
                "upgrade transformers"
            )
        return cls

    def load_model(self, path: str, hub: Mapping[str, Any], load_kwargs: Mapping[str, Any]) -> Any:
        return self.model_cls().from_pretrained(path, **hub, **load_kwargs)

    def prepare(self, processor: Any) -> None:
        """Post-load processor fix-ups: left padding for decoder-only generation."""
        tok = self.tokenizer(processor)
        if hasattr(tok, "padding_side"):
            tok.padding_side = "left"
        if getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
            tok.pad_token = tok.eos_token

    # ----------------------------------------------------------------------------------- prompts
    def tokenizer(self, processor: Any) -> Any:
        return getattr(processor, "tokenizer", processor)

    def sampling_rate(self, processor: Any) -> int:
        fe = getattr(processor, "feature_extractor", None) or getattr(processor, "audio_processor", None)
        return int(getattr(fe, "sampling_rate", 16_000) or 16_000)

    def audio_part(self, request: GenerationRequest) -> dict[str, Any]:
        return {"type": "audio"}

    def messages(self, request: GenerationRequest) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = []
        system = request.system if request.system is not None else self.default_system
        if system is not None:
            msgs.append({"role": "system", "content": [{"type": "text", "text": system}]})
        parts: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        if request.audio is not None:
            audio = self.audio_part(request)
            parts = [audio, *parts] if self.audio_first else [*parts, audio]
        msgs.append({"role": "user", "content": parts})
        return msgs

    def has_own_chat_template(self, processor: Any) -> bool:
        return any(getattr(owner, "chat_template", None) for owner in (processor, self.tokenizer(processor)))

    def fallback_chat_template(self, processor: Any) -> str | None:
        """The family's prompt format, for checkpoints that ship no chat template."""
        return self.default_chat_template

    def chat_template(self, processor: Any) -> str | None:
        """None to use the checkpoint's own template (it may be a dict of named ones), else the fallback."""
        if self.has_own_chat_template(processor):
            return None
        return self.fallback_chat_template(processor)

    def render(self, processor: Any, request: GenerationRequest) -> str:
        """The prompt text the model sees, with one unexpanded audio placeholder per audio."""
        template = self.chat_template(processor)
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if template is not None:
            kwargs["chat_template"] = template
        owner = processor if hasattr(processor, "apply_chat_template") else self.tokenizer(processor)
        text = owner.apply_chat_template(self.messages(request), **kwargs)
        if isinstance(text, list):
            text = text[0]
        return text

    # ----------------------------------------------------------------------------------- inputs
    def encode(self, processor: Any, requests: Sequence[GenerationRequest], audios: Sequence[np.ndarray | None]) -> Any:
        """Model inputs for a batch in which either every request has audio or none has."""
        prompts = [self.render(processor, r) for r in requests]
        arrays = [a for a in audios if a is not None]
        # Padding is requested for the text only: a top-level ``padding=True`` would also reach the audio
        # feature extractor and pad each audio to the batch's longest (what the model hears would then
        # depend on its batch mates). Each processor applies its own per-item audio padding.
        kwargs: dict[str, Any] = {"text": prompts, "return_tensors": "pt", "text_kwargs": {"padding": True}}
        if arrays:
            kwargs["audio"] = arrays
            kwargs["audio_kwargs"] = {"sampling_rate": self.sampling_rate(processor)}
        return processor(**kwargs)

    def encode_text(self, processor: Any, texts: Sequence[str]) -> Any:
        """Raw texts (no chat template) tokenized with left padding: for hidden states."""
        tok = self.tokenizer(processor)
        return tok(list(texts), return_tensors="pt", padding=True)

    def decode(self, processor: Any, token_ids: Any) -> list[str]:
        tok = self.tokenizer(processor)
        return [finished_answer(t) for t in tok.batch_decode(token_ids, skip_special_tokens=True)]

    # ----------------------------------------------------------------------------------- model access
    def special_token_ids(self, model: Any, processor: Any) -> dict[str, Any]:
        """bos/eos/pad ids kept from the checkpoint's generation config (everything else is dropped)."""
        gen = getattr(model, "generation_config", None)
        tok = self.tokenizer(processor)
        ids: dict[str, Any] = {}
        for key in ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"):
            value = getattr(gen, key, None) if gen is not None else None
            if value is None and key != "decoder_start_token_id":
                value = getattr(tok, key, None)
            if value is not None:
                ids[key] = value
        if "pad_token_id" not in ids and "eos_token_id" in ids:
            eos = ids["eos_token_id"]
            ids["pad_token_id"] = eos[0] if isinstance(eos, (list, tuple)) else eos
        return ids

    def generate(self, model: Any, inputs: Any, generation_config: Any) -> Any:
        """New token ids only (the prompt is cut off)."""
        out = model.generate(**inputs, generation_config=generation_config)
        return out[:, inputs["input_ids"].shape[1] :]

    def forward(self, model: Any, inputs: Any, **kwargs: Any) -> Any:
        return model(**inputs, **kwargs)


def has_torchvision() -> bool:
    """Whether torchvision is importable: the full multimodal processors need it (their image or video half)."""
    return importlib.util.find_spec("torchvision") is not None


def whisper_tokenizer_and_features(path: str, hub: Mapping[str, Any]) -> tuple[Any, Any]:
    """A checkpoint's tokenizer and Whisper feature extractor, for assembling an audio-only processor by hand; a
    local folder without ``preprocessor_config.json`` gets a default 128-bin extractor."""
    import os

    from transformers import AutoTokenizer, WhisperFeatureExtractor

    tokenizer = AutoTokenizer.from_pretrained(path, **hub)
    local = os.path.isdir(path)
    has_fe = (not local) or os.path.exists(os.path.join(path, "preprocessor_config.json"))
    features = (
        WhisperFeatureExtractor.from_pretrained(path, **hub) if has_fe else WhisperFeatureExtractor(feature_size=128)
    )
    return tokenizer, features
