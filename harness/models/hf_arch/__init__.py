"""Audio-LLM architectures the ``hf:`` backend supports: one module per architecture, one registry line.

The registry maps an architecture name to ``module:Class`` (imported lazily, so a broken or heavy
architecture module never affects the others). A checkpoint's architecture is chosen from its
``config.json`` ``model_type`` (cheap: read as JSON, no transformers import), or forced with the
``architecture:`` option. To add an architecture: write ``harness/models/hf_arch/<name>.py`` with an
:class:`~harness.models.hf_arch.base.AudioLMAdapter` subclass and add one line to :data:`ARCHITECTURES` (or, from another package, an entry point of group
``lalm_fairness.architectures``, :mod:`harness.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.core.errors import ModelError
from harness.registry import Registry

ARCHITECTURES = Registry(
    "architecture",
    "architectures",
    {
        "qwen2_audio": "harness.models.hf_arch.qwen2_audio:Qwen2AudioAdapter",
        "qwen2_5_omni": "harness.models.hf_arch.qwen2_5_omni:Qwen25OmniAdapter",
        "qwen3_omni_moe": "harness.models.hf_arch.qwen3_omni_moe:Qwen3OmniMoeAdapter",
        "voxtral": "harness.models.hf_arch.voxtral:VoxtralAdapter",
        "gemma3n": "harness.models.hf_arch.gemma3n:Gemma3nAdapter",
        "phi4_multimodal": "harness.models.hf_arch.phi4_multimodal:Phi4MultimodalAdapter",
        "audioflamingo3": "harness.models.hf_arch.audioflamingo3:AudioFlamingo3Adapter",
        "granite_speech": "harness.models.hf_arch.granite_speech:GraniteSpeechAdapter",
    },
)

# config.json model_type -> architecture name (when they differ from the name itself)
MODEL_TYPES: dict[str, str] = {
    "qwen2_5_omni_thinker": "qwen2_5_omni",
    "qwen3_omni_moe_thinker": "qwen3_omni_moe",
    "phi4mm": "phi4_multimodal",
}


def supported() -> list[str]:
    return sorted(ARCHITECTURES)


def architecture_for(model_type: str | None, override: str | None = None) -> str:
    """The architecture name for a checkpoint's ``model_type`` (or the explicit override)."""
    name = override or MODEL_TYPES.get(model_type or "", model_type or "")
    if name not in ARCHITECTURES:
        what = f"architecture {override!r}" if override else f"model_type {model_type!r}"
        raise ModelError(
            f"hf backend: {what} is not a supported audio LLM; supported architectures: {supported()} "
            "(set `architecture:` in the model's options to force one)"
        )
    return name


def load_adapter(name: str, options: Mapping[str, Any] | None = None) -> Any:
    """Instantiate the adapter registered under ``name``."""
    if name not in ARCHITECTURES:
        raise ModelError(f"unknown architecture {name!r}; supported architectures: {supported()}")
    try:
        adapter_class = ARCHITECTURES.load(name)
    except ImportError as exc:
        raise ModelError(f"architecture {name!r} cannot be imported ({exc})") from exc
    return adapter_class(options)
