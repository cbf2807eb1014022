"""``vllm:<path-or-hub-id>``: offline batched generation with vLLM's ``LLM`` engine.

Prompts are rendered with the checkpoint's own chat template by the same architecture adapter as the
``hf:`` backend (one unexpanded audio placeholder per audio; vLLM expands it), and audio is passed as
``multi_modal_data={"audio": [(samples, sample_rate)]}``. Every decoding parameter goes into an
explicit ``SamplingParams`` and the engine is built with ``generation_config="vllm"`` so a checkpoint's
``generation_config.json`` cannot supply defaults.

Parallelism is vLLM's own: ``tensor_parallel_size`` and ``pipeline_parallel_size`` are passed through.
For several nodes, start a Ray cluster (``ray start --head`` on one node, ``ray start --address=...`` on
the others), then set ``distributed_executor_backend: ray`` with TP x PP equal to the total GPU count;
the harness does not manage that Ray cluster. Data parallelism across a cluster is the plan's
(``pytest ... --plan``, then ``lalm-fairness-generate --ray``: :mod:`harness.generation.ray_fill`).

Options: ``tensor_parallel_size``, ``pipeline_parallel_size``, ``distributed_executor_backend``,
``dtype`` (default ``auto``: resolved by the harness, float32 on a CPU, bfloat16 or float16 on CUDA;
vLLM receives the result and the fingerprint records it), ``max_model_len``, ``gpu_memory_utilization``, ``revision``,
``trust_remote_code``, ``enforce_eager``, ``quantization``, ``seed``, ``max_num_seqs``,
``limit_mm_per_prompt`` (default ``{"audio": 1}``), ``architecture`` (adapter override),
``batch_size`` (requests per ``generate`` call, for progress; default 64), ``engine_kwargs`` (any other
``LLM(...)`` keyword arguments).

Voxtral is not served this way (vLLM runs it with ``tokenizer_mode: mistral``, whose prompts are not
chat-template text): use ``openai:`` against ``vllm serve`` for it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import multiprocessing
import os
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.answers import JsonForm
from harness.core.errors import ModelError, import_extra
from harness.core.progress import Progress
from harness.core.requests import DecodingParams, GenerationRequest
from harness.models.base import (
    Backend,
    cuda_available,
    finished_answer,
    resolve_dtype,
    validated_options,
)
from harness.models.fingerprint import model_fingerprint
from harness.models.hf_arch import architecture_for, load_adapter

INSTALL_HINT = "pip install 'lalm-fairness[vllm]'"
ENGINE_OPTIONS = (
    "tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend", "dtype", "max_model_len",
    "gpu_memory_utilization", "revision", "trust_remote_code", "enforce_eager", "quantization", "seed",
    "max_num_seqs", "limit_mm_per_prompt",
)  # fmt: skip
KNOWN_OPTIONS = set(ENGINE_OPTIONS) | {"architecture", "batch_size", "engine_kwargs"}
BEHAVIOUR_OPTIONS = ("dtype", "quantization", "architecture", "trust_remote_code", "max_model_len")
UNSUPPORTED = {"voxtral": "use openai: against `vllm serve --tokenizer_mode mistral` for Voxtral"}

ENGINE_SHUTDOWN_TIMEOUT_S = 60.0
"""How long a released engine's processes may take to exit before vLLM kills them."""


def import_vllm() -> Any:
    return import_extra(("vllm",), lambda exc: ModelError(f"the vllm backend needs vLLM: {INSTALL_HINT} ({exc})"))


def sampling_kwargs(params: DecodingParams) -> dict[str, Any]:
    """Every SamplingParams field that affects decoding, explicitly (greedy = temperature 0)."""
    sampling = bool(params.do_sample)
    if sampling and params.temperature <= 0:
        raise ModelError("do_sample=True needs temperature > 0 (temperature 0 means greedy)")
    return {
        "n": 1,
        "max_tokens": int(params.max_new_tokens),
        "min_tokens": 0,
        "temperature": float(params.temperature) if sampling else 0.0,
        "top_p": float(params.top_p) if sampling else 1.0,
        "top_k": int(params.top_k) if sampling and params.top_k > 0 else -1,
        "min_p": 0.0,
        "repetition_penalty": float(params.repetition_penalty),
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "seed": int(params.seed),
    }


class VLLMBackend(Backend):
    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        self.options = validated_options(spec, "vllm", options, KNOWN_OPTIONS)
        self.path = os.path.expanduser(target)
        self.is_local = os.path.isdir(self.path)
        self.batch_size = int(self.options.get("batch_size", 64))
        self.device = "cuda" if cuda_available() else "cpu"
        self.dtype = resolve_dtype(spec, self.options.get("dtype", "auto"), on_gpu=self.device == "cuda")

    def resolved_settings(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "device": self.device}

    def unavailable(self) -> str | None:
        """vLLM not installed (:func:`harness.models.missing_extra`): found at the start of a run, not at the first
        request."""
        from harness.models import missing_extra

        return missing_extra(self.spec)

    def memory_device(self) -> str:
        return self.device

    def fingerprint(self) -> str:
        behaviour = {k: self.options[k] for k in BEHAVIOUR_OPTIONS if k in self.options}
        behaviour.update(self.resolved_settings())
        return model_fingerprint(
            "vllm",
            self.path if self.is_local else self.target,
            revision=self.options.get("revision"),
            options=behaviour,
            libraries=("vllm", "transformers", "torch"),
        )

    def semantic_source(self) -> Backend | None:
        """A local checkpoint's own embeddings, through transformers (``hf:`` on the same folder)."""
        from harness.models.hf import local_semantic_source

        return local_semantic_source(self.path, self.options) if self.is_local else None

    def engine_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.path if self.is_local else self.target,
            "generation_config": "vllm",
            "limit_mm_per_prompt": {"audio": 1},
        }
        for key in ENGINE_OPTIONS:
            if key in self.options:
                kw[key] = self.options[key]
        kw["dtype"] = self.dtype
        kw.update(self.options.get("engine_kwargs") or {})
        return kw

    def _model_type(self) -> str | None:
        if self.is_local:
            try:
                with open(os.path.join(self.path, "config.json"), encoding="utf-8") as fh:
                    return json.load(fh).get("model_type")
            except (OSError, ValueError):
                return None
        from transformers import AutoConfig

        kw = {"revision": self.options["revision"]} if self.options.get("revision") else {}
        return AutoConfig.from_pretrained(
            self.target, trust_remote_code=bool(self.options.get("trust_remote_code")), **kw
        ).model_type

    def load(self, memory_share: float | None = None) -> VLLMModel:
        """The engine; ``memory_share`` is its ``gpu_memory_utilization`` where the option block states none (the
        run's residency derives it, :mod:`harness.models.residency`)."""
        vllm = import_vllm()
        name = architecture_for(self._model_type(), self.options.get("architecture"))
        if name in UNSUPPORTED:
            raise ModelError(f"{self.spec}: {name} is not supported by the vllm backend: {UNSUPPORTED[name]}")
        adapter = load_adapter(name, {})
        hub: dict[str, Any] = {"local_files_only": self.is_local}
        if self.options.get("revision") and not self.is_local:
            hub["revision"] = self.options["revision"]
        if self.options.get("trust_remote_code"):
            hub["trust_remote_code"] = True
        try:
            processor = adapter.load_processor(self.path if self.is_local else self.target, hub)
            kwargs = self.engine_kwargs()
            if memory_share is not None and self.device == "cuda":
                kwargs.setdefault("gpu_memory_utilization", memory_share)
            llm = vllm.LLM(**kwargs)
        except Exception as exc:
            raise ModelError(f"{self.spec}: vLLM engine failed to start: {type(exc).__name__}: {exc}") from exc
        return VLLMModel(self.spec, vllm, llm, adapter, processor, self.batch_size)


@dataclasses.dataclass(eq=False)
class VLLMModel:
    """A started engine (``llm``, of the ``vllm`` module) with its architecture adapter and processor."""

    spec: str
    vllm: Any
    llm: Any
    adapter: Any
    processor: Any
    batch_size: int

    def release(self) -> None:
        """Shut the engine down (its worker processes and their memory), waiting up to
        :data:`ENGINE_SHUTDOWN_TIMEOUT_S` for its engine-core process to finish its teardown and be reaped (vLLM's
        default wait, 5 s, is shorter than the CPU engine's teardown: it then kills the process mid-teardown and
        leaves it a zombie of this one), then tear down vLLM's process groups so that the next engine of the run can
        start in this process."""
        engine = getattr(self.llm, "llm_engine", None)
        for part in (getattr(engine, "engine_core", None), engine):
            shutdown = getattr(part, "shutdown", None)
            if callable(shutdown):
                if "timeout" in inspect.signature(shutdown).parameters:
                    shutdown(timeout=ENGINE_SHUTDOWN_TIMEOUT_S)
                else:
                    shutdown()
                break
        self.llm = None
        multiprocessing.active_children()
        try:
            state = importlib.import_module("vllm.distributed.parallel_state")
        except ImportError:
            return
        for teardown in ("destroy_model_parallel", "destroy_distributed_environment"):
            if callable(getattr(state, teardown, None)):
                getattr(state, teardown)()

    def prompt(self, request: GenerationRequest) -> dict[str, Any]:
        item: dict[str, Any] = {"prompt": self.adapter.render(self.processor, request)}
        if request.audio is not None:
            item["multi_modal_data"] = {"audio": [(request.audio.samples, request.audio.sample_rate)]}
        return item

    def sampling_params(self, params: DecodingParams, request: GenerationRequest | None = None) -> Any:
        """vLLM's sampling parameters; a request that declares a JSON form with a schema (the VIBE extractor's) is
        decoded inside it, by vLLM's structured outputs (``StructuredOutputsParams(json=schema)``)."""
        kwargs = sampling_kwargs(params)
        form = None if request is None else request.answer_form
        if isinstance(form, JsonForm) and form.schema:
            structured = importlib.import_module("vllm.sampling_params").StructuredOutputsParams
            kwargs["structured_outputs"] = structured(json=json.loads(form.schema))
        return self.vllm.SamplingParams(**kwargs)

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        shared = self.sampling_params(params)
        per_request = [
            self.sampling_params(params, request) if isinstance(request.answer_form, JsonForm) else shared
            for request in requests
        ]
        prompts = [self.prompt(r) for r in requests]
        out: list[str] = []
        with Progress(len(prompts), f"{self.spec} generate") as bar:
            for start in range(0, len(prompts), self.batch_size):
                chunk = prompts[start : start + self.batch_size]
                chunk_params = per_request[start : start + self.batch_size]
                sp = shared if all(item is shared for item in chunk_params) else chunk_params
                try:
                    results = self.llm.generate(chunk, sp, use_tqdm=False)
                except Exception as exc:
                    raise ModelError(f"{self.spec}: vLLM generation failed: {type(exc).__name__}: {exc}") from exc
                out.extend(finished_answer(r.outputs[0].text) for r in results)
                bar.update(len(chunk))
        return out
