"""``hf:<path-or-hub-id>``: audio LLMs run in-process with transformers.

Options (the model's YAML block; all optional):

=====================  ==========================================================================
``dtype``              ``auto`` (bfloat16 on a bf16-capable GPU, else float32), ``float32``,
                       ``bfloat16``, ``float16``
``device``             ``auto`` (``cuda`` when available, else ``cpu``), ``cpu``, ``cuda``, ``cuda:N``
``device_map``         passed to ``from_pretrained`` (e.g. ``auto`` to shard a large model over GPUs);
                       overrides ``device``
``batch_size``         requests per forward pass (default 8)
``max_new_tokens``     overrides the decoding parameters' ``max_new_tokens`` for this model
``architecture``       force an adapter (see :mod:`harness.models.hf_arch`) instead of ``model_type``
``revision``           hub revision (branch, tag or commit); pin it for reproducible gates
``trust_remote_code``  passed to ``from_pretrained`` (default false)
``attn_implementation``  e.g. ``sdpa``, ``eager``, ``flash_attention_2``
``audio_batching``     ``free`` / ``equal_length`` / ``none``: override the architecture's policy
``local_files_only``   never touch the network (default: true when the target is a local directory)
``model_kwargs``       extra ``from_pretrained`` kwargs for the model (architecture-specific)
``processor_kwargs``   extra ``from_pretrained`` kwargs for the processor (architecture-specific)
=====================  ==========================================================================

Decoding: every parameter of :class:`~harness.core.requests.DecodingParams` is passed explicitly to
``generate``, and the checkpoint's ``generation_config.json`` is reduced to its special-token ids at load
time, so no sampling default of the checkpoint can leak in. Greedy decoding is the default.

Batching never zero-pads raw audio to a batch's longest item: the architecture's processor pads text
(left, with an attention mask) and audio per item (fixed windows with feature masks), or, for
architectures whose encoders see batch padding, only audios of equal length share a batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.core.errors import ModelError, import_extra
from harness.core.progress import Progress
from harness.core.requests import DecodingParams, GenerationRequest
from harness.data.audio import resample
from harness.models.base import Backend, resolve_dtype, validated_options
from harness.models.fingerprint import model_fingerprint
from harness.models.hf_arch import architecture_for, load_adapter

KNOWN_OPTIONS = {
    "dtype", "device", "device_map", "batch_size", "max_new_tokens", "architecture", "revision",
    "trust_remote_code", "attn_implementation", "audio_batching", "local_files_only", "model_kwargs",
    "processor_kwargs",
}  # fmt: skip
# Options that can change outputs, hence enter the fingerprint (device / batch size do not, by design).
BEHAVIOUR_OPTIONS = (
    "architecture",
    "trust_remote_code",
    "attn_implementation",
    "max_new_tokens",
    "model_kwargs",
    "processor_kwargs",
)


def local_semantic_source(path: str, options: Mapping[str, Any]) -> HFBackend:
    """The ``hf:`` backend on a local checkpoint folder, for the semantic embeddings of a model served by another
    engine from that folder (``trust_remote_code`` and ``architecture`` carried over)."""
    carried = {key: options[key] for key in ("trust_remote_code", "architecture") if options.get(key) is not None}
    return HFBackend(f"hf:{path}", path, carried)


def _require_torch() -> Any:
    return import_extra(
        ("torch", "transformers"),
        lambda exc: ModelError(f"the hf backend needs torch and transformers: pip install 'lalm-fairness[hf]' ({exc})"),
    )


def plan_batches(
    requests: Sequence[GenerationRequest], batch_size: int, audio_batching: str = "free"
) -> list[list[int]]:
    """Indices of requests grouped into batches.

    Text-only and audio requests never share a batch. With ``equal_length``, audio requests share a
    batch only with audios of exactly the same length (so nothing is padded by batching); with
    ``none``, each audio request runs alone.
    """
    if batch_size < 1:
        raise ModelError(f"batch_size must be >= 1, got {batch_size}")
    groups: dict[Any, list[int]] = {}
    for i, req in enumerate(requests):
        if req.audio is None:
            key: Any = ("text",)
        elif audio_batching == "free":
            key = ("audio",)
        elif audio_batching == "equal_length":
            key = ("audio", req.audio.sample_rate, len(req.audio.samples))
        else:
            key = ("audio-alone", i)
        groups.setdefault(key, []).append(i)
    batches: list[list[int]] = []
    for members in groups.values():
        for start in range(0, len(members), batch_size):
            batches.append(members[start : start + batch_size])
    return batches


def generation_kwargs(params: DecodingParams, max_new_tokens: int | None = None) -> dict[str, Any]:
    """Every decoding/search parameter ``generate`` knows, with an explicit value.

    Greedy (``do_sample=False``) uses neutral sampling values so nothing depends on them.
    """
    sampling = bool(params.do_sample)
    if sampling and params.temperature <= 0:
        raise ModelError("do_sample=True needs temperature > 0 (temperature 0 means greedy: set do_sample=False)")
    return {
        "max_new_tokens": int(max_new_tokens if max_new_tokens is not None else params.max_new_tokens),
        "min_new_tokens": 0,
        "do_sample": sampling,
        "num_beams": 1,
        "num_beam_groups": 1,
        "num_return_sequences": 1,
        # Under greedy decoding the sampling knobs are set to transformers' own neutral defaults
        # (explicit, so the checkpoint's values cannot fill them; no effect on greedy outputs).
        "temperature": float(params.temperature) if sampling else 1.0,
        "top_p": float(params.top_p) if sampling else 1.0,
        "top_k": int(params.top_k) if sampling else 50,
        "typical_p": 1.0,
        "epsilon_cutoff": 0.0,
        "eta_cutoff": 0.0,
        "repetition_penalty": float(params.repetition_penalty),
        "encoder_repetition_penalty": 1.0,
        "length_penalty": 1.0,
        "no_repeat_ngram_size": 0,
        "encoder_no_repeat_ngram_size": 0,
        "diversity_penalty": 0.0,
        "renormalize_logits": False,
        "remove_invalid_values": False,
        "early_stopping": False,
        "use_cache": True,
    }


class HFBackend(Backend):
    """Cheap to build; :meth:`load` loads processor and weights."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        self.options = validated_options(spec, "hf", options, KNOWN_OPTIONS)
        resolve_dtype(spec, self.options.get("dtype", "auto"), on_gpu=False)
        self.batch_size = int(self.options.get("batch_size", 8))
        if self.batch_size < 1:
            raise ModelError(f"{spec}: batch_size must be >= 1")
        self.path = os.path.expanduser(target)
        self.is_local = os.path.isdir(self.path)
        self._fingerprint: str | None = None

    def semantic_source(self) -> HFBackend:
        return self

    def unavailable(self) -> str | None:
        import importlib.util

        missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
        if missing:
            return (
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: the hf: backend needs the "
                "[hf] extra (pip install 'lalm-fairness[hf]' torch==2.13.0)"
            )
        if self.target.startswith(("/", "./", "../", "~")) and not self.is_local:
            return f"checkpoint folder {self.path} does not exist"
        return None

    # ------------------------------------------------------------------ cheap identity
    def local_model_type(self) -> str | None:
        if not self.is_local:
            return None
        try:
            with open(os.path.join(self.path, "config.json"), encoding="utf-8") as fh:
                return json.load(fh).get("model_type")
        except (OSError, ValueError):
            return None

    def resolved_device(self) -> str:
        device = str(self.options.get("device", "auto"))
        if device != "auto":
            return device
        try:
            import torch
        except ImportError:
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"

    def on_gpu(self) -> bool:
        return self.options.get("device_map") is not None or self.resolved_device().startswith("cuda")

    def resolved_dtype(self) -> str:
        return resolve_dtype(self.spec, self.options.get("dtype", "auto"), self.on_gpu())

    def resolved_settings(self) -> dict[str, Any]:
        return {"dtype": self.resolved_dtype(), "device": "cuda" if self.on_gpu() else "cpu"}

    def memory_device(self) -> str:
        return "cuda" if self.on_gpu() else "cpu"

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            behaviour = {k: self.options[k] for k in BEHAVIOUR_OPTIONS if k in self.options}
            behaviour.update(self.resolved_settings())
            self._fingerprint = model_fingerprint(
                "hf",
                self.path if self.is_local else self.target,
                revision=self.options.get("revision"),
                options=behaviour,
                libraries=("transformers", "torch", "mistral_common"),
            )
        return self._fingerprint

    # ------------------------------------------------------------------ loading
    def hub_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.options.get("revision") is not None and not self.is_local:
            kw["revision"] = self.options["revision"]
        if self.options.get("trust_remote_code"):
            kw["trust_remote_code"] = True
        kw["local_files_only"] = bool(self.options.get("local_files_only", self.is_local))
        return kw

    def architecture(self) -> str:
        override = self.options.get("architecture")
        model_type = self.local_model_type()
        if model_type is None and override is None:
            _require_torch()
            from transformers import AutoConfig

            try:
                model_type = AutoConfig.from_pretrained(self.path, **self.hub_kwargs()).model_type
            except Exception as exc:
                raise ModelError(f"{self.spec}: cannot read the model config ({exc})") from exc
        try:
            return architecture_for(model_type, override)
        except ModelError as exc:
            raise ModelError(f"{self.spec}: {exc}") from None

    def load(self) -> HFModel:
        torch = _require_torch()
        adapter = load_adapter(self.architecture(), self.options)
        adapter.check_requirements()
        hub = self.hub_kwargs()
        device = self.resolved_device()
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ModelError(f"{self.spec}: device {device!r} requested but CUDA is not available")
        load_kwargs: dict[str, Any] = {"dtype": getattr(torch, self.resolved_dtype())}
        if self.options.get("attn_implementation"):
            load_kwargs["attn_implementation"] = self.options["attn_implementation"]
        if self.options.get("device_map") is not None:
            load_kwargs["device_map"] = self.options["device_map"]
        load_kwargs.update(self.options.get("model_kwargs") or {})
        try:
            processor = adapter.load_processor(self.path, {**hub, **(self.options.get("processor_kwargs") or {})})
            adapter.prepare(processor)
            model = adapter.load_model(self.path, hub, load_kwargs)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"{self.spec}: loading {adapter.name} failed: {type(exc).__name__}: {exc}") from exc
        if self.options.get("device_map") is None:
            model = model.to(device)
        model.eval()
        return HFModel(self, adapter, processor, model)


class HFModel:
    """A loaded transformers audio LLM: batched generation, hidden states and next-token log-probs."""

    def __init__(self, backend: HFBackend, adapter: Any, processor: Any, model: Any) -> None:
        from transformers import GenerationConfig

        self.backend = backend
        self.spec = backend.spec
        self.adapter = adapter
        self.processor = processor
        self.model = model
        self.batch_size = backend.batch_size
        self.max_new_tokens = backend.options.get("max_new_tokens")
        self.sampling_rate = adapter.sampling_rate(processor)
        # Keep only special-token ids from the checkpoint's generation config: nothing else may leak in.
        self.checkpoint_generation_config = getattr(model, "generation_config", None)
        self.special_ids = adapter.special_token_ids(model, processor)
        model.generation_config = GenerationConfig(**self.special_ids)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def release(self) -> None:
        """Drop the weights (the caller then empties the CUDA cache: :func:`harness.models.base.release_model`)."""
        self.model = None

    # ------------------------------------------------------------------ helpers
    def render_prompt(self, request: GenerationRequest) -> str:
        """The exact prompt text (chat template applied, audio placeholder unexpanded)."""
        return self.adapter.render(self.processor, request)

    def _audio(self, request: GenerationRequest) -> np.ndarray | None:
        if request.audio is None:
            return None
        return resample(request.audio.samples, request.audio.sample_rate, self.sampling_rate)

    def _to_device(self, inputs: Any) -> Any:
        import torch

        dtype = self.model.dtype
        out = {}
        for key, value in dict(inputs).items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(dtype)
            out[key] = value
        return out

    def generation_config(self, params: DecodingParams) -> Any:
        from transformers import GenerationConfig

        return GenerationConfig(**self.special_ids, **generation_kwargs(params, self.max_new_tokens))

    # ------------------------------------------------------------------ generation
    def _run_batch(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        import torch

        audios = [self._audio(r) for r in requests]
        inputs = self._to_device(self.adapter.encode(self.processor, requests, audios))
        gen = self.generation_config(params)
        if params.do_sample:
            torch.manual_seed(params.seed)
        with torch.inference_mode():
            new_tokens = self.adapter.generate(self.model, inputs, gen)
        return self.adapter.decode(self.processor, new_tokens)

    def _run_adaptive(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        """Run a batch; on CUDA out-of-memory, split it in halves (outputs are batch-invariant)."""
        import torch

        try:
            return self._run_batch(requests, params)
        except torch.cuda.OutOfMemoryError:
            if len(requests) == 1:
                raise
            torch.cuda.empty_cache()
            half = len(requests) // 2
            return self._run_adaptive(requests[:half], params) + self._run_adaptive(requests[half:], params)

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        requests = list(requests)
        results: list[str | None] = [None] * len(requests)
        batches = plan_batches(requests, self.batch_size, self.adapter.audio_batching)
        with Progress(len(requests), f"{self.spec} generate") as bar:
            for batch in batches:
                try:
                    outputs = self._run_adaptive([requests[i] for i in batch], params)
                except ModelError:
                    raise
                except Exception as exc:
                    raise ModelError(f"{self.spec}: generation failed: {type(exc).__name__}: {exc}") from exc
                for i, text in zip(batch, outputs):
                    results[i] = text
                bar.update(len(batch))
        return [r if r is not None else "" for r in results]

    # ------------------------------------------------------------------ representations
    def semantic_pass(self) -> Any:
        """Embed-AGG and Embed-EOWL of raw texts through this model's text path (semantic-aware paper §III-B)."""
        from harness.models.semantic_pass import SemanticPass, soft_capped

        return SemanticPass(
            self.spec,
            lambda texts: self._to_device(self.adapter.encode_text(self.processor, texts)),
            lambda inputs, **kwargs: self.adapter.forward(self.model, inputs, **kwargs),
            self.model.get_output_embeddings(),
            batch_size=self.batch_size,
            linear_logits=not soft_capped(self.model.config),
        )

    def hidden_states(self, texts: Sequence[str], *, layer: int = -1, pool: str = "mean") -> np.ndarray:
        """Hidden states of raw texts (no chat template), pooled per text: float32 ``[n, hidden]``.

        ``pool``: ``mean`` over non-padding tokens, or ``last`` (the final token).
        """
        import torch

        if pool not in ("mean", "last"):
            raise ModelError(f"pool must be 'mean' or 'last', got {pool!r}")
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            enc = self._to_device(self.adapter.encode_text(self.processor, chunk))
            with torch.inference_mode():
                res = self.adapter.forward(self.model, enc, output_hidden_states=True)
            hs = res.hidden_states[layer].float()
            mask = enc["attention_mask"].to(hs.device).unsqueeze(-1).float()
            if pool == "mean":
                pooled = (hs * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            else:
                pooled = hs[:, -1, :]  # left padding: the last position is every row's final token
            out.append(pooled.cpu().numpy().astype(np.float32))
        return np.concatenate(out, axis=0) if out else np.zeros((0, 0), dtype=np.float32)

    def next_token_logits(self, requests: Sequence[GenerationRequest | str]) -> np.ndarray:
        """Log-probabilities of the first answer token after each rendered prompt: ``[n, vocab]``.

        Accepts requests (with or without audio) or plain strings (text-only prompts).
        """
        import torch

        reqs = [GenerationRequest(prompt=r) if isinstance(r, str) else r for r in requests]
        result: list[np.ndarray | None] = [None] * len(reqs)
        for batch in plan_batches(reqs, self.batch_size, self.adapter.audio_batching):
            items = [reqs[i] for i in batch]
            enc = self._to_device(self.adapter.encode(self.processor, items, [self._audio(r) for r in items]))
            with torch.inference_mode():
                logits = self.adapter.forward(self.model, enc).logits[:, -1, :].float()
            logp = torch.log_softmax(logits, dim=-1).cpu().numpy()
            for i, row in zip(batch, logp):
                result[i] = row
        return np.stack(result) if result else np.zeros((0, 0), dtype=np.float32)
