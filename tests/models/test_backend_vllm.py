"""vllm: backend without vLLM installed: the import guard, and request building against a fake ``vllm``
module injected into ``sys.modules`` (the real engine needs a GPU; prompts are rendered by the same
architecture adapters as hf:, so a tiny Qwen2-Audio processor checkpoint is used)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.models.vllm_backend import VLLMBackend, sampling_kwargs


class FakeLLM:
    instances: list = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        FakeLLM.instances.append(self)

    def generate(self, prompts, sampling_params, use_tqdm=True):
        self.calls.append((prompts, sampling_params))
        out = []
        for p in prompts:
            text = f" answer to {len(p['prompt'])} chars{' with audio' if 'multi_modal_data' in p else ''} "
            out.append(types.SimpleNamespace(outputs=[types.SimpleNamespace(text=text)]))
        return out


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = FakeSamplingParams
    FakeLLM.instances = []
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


@pytest.fixture(scope="module")
def qwen2_audio_dir(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from support import tiny_models as tm

    return str(tm.build_qwen2_audio(tmp_path_factory.mktemp("qa")))


def test_without_vllm_a_clear_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    b = VLLMBackend(spec="vllm:x", target=str(tmp_path), options={})
    with pytest.raises(ModelError, match=r"pip install 'lalm-fairness\[vllm\]'"):
        b.load()


def test_construction_and_fingerprint_need_no_vllm(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "vllm", None)
    b = VLLMBackend(spec="vllm:x", target=str(tmp_path), options={"tensor_parallel_size": 2})
    assert b.fingerprint().startswith("vllm:")
    assert (
        b.fingerprint()
        == VLLMBackend(spec="vllm:x", target=str(tmp_path), options={"tensor_parallel_size": 4}).fingerprint()
    )
    assert (
        b.fingerprint() != VLLMBackend(spec="vllm:x", target=str(tmp_path), options={"dtype": "float16"}).fingerprint()
    )
    with pytest.raises(ModelError, match="unknown vllm option"):
        VLLMBackend(spec="vllm:x", target="x", options={"tensor_parallel": 2})


def test_engine_options_pass_through(fake_vllm, qwen2_audio_dir):
    options = {
        "tensor_parallel_size": 4, "pipeline_parallel_size": 2, "distributed_executor_backend": "ray",
        "max_model_len": 8192, "gpu_memory_utilization": 0.8, "engine_kwargs": {"enable_prefix_caching": True},
    }  # fmt: skip
    VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options=options).load()
    kw = FakeLLM.instances[-1].kwargs
    assert kw["model"] == qwen2_audio_dir
    assert (kw["tensor_parallel_size"], kw["pipeline_parallel_size"], kw["distributed_executor_backend"]) == (
        4,
        2,
        "ray",
    )
    assert kw["generation_config"] == "vllm"  # the checkpoint's generation defaults are not used
    assert kw["limit_mm_per_prompt"] == {"audio": 1} and kw["enable_prefix_caching"] is True


def test_auto_dtype_is_resolved_by_the_harness_recorded_and_handed_to_the_engine(
    fake_vllm, qwen2_audio_dir, monkeypatch
):
    """vLLM's own ``auto`` picks bfloat16 on an AVX512_BF16 CPU: the engine never sees ``auto``."""
    import harness.models.vllm_backend as vllm_backend

    monkeypatch.setattr(vllm_backend, "cuda_available", lambda: False)
    auto = VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={})
    auto.load()
    assert FakeLLM.instances[-1].kwargs["dtype"] == "float32"
    assert (
        auto.fingerprint()
        == VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={"dtype": "float32"}).fingerprint()
    )
    assert (
        auto.fingerprint()
        != VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={"dtype": "bfloat16"}).fingerprint()
    )
    with pytest.raises(ModelError, match=r"vllm:q: dtype must be one of"):
        VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={"dtype": "bf16"})


def test_requests_carry_rendered_prompt_audio_and_explicit_sampling(fake_vllm, qwen2_audio_dir):
    model = VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={"batch_size": 2}).load()
    samples = np.linspace(-0.5, 0.5, 8000, dtype=np.float32)
    reqs = [
        GenerationRequest("Who speaks?", Audio(samples)),
        GenerationRequest("Text only"),
        GenerationRequest("x", Audio(samples[:100])),
    ]
    out = model.generate(reqs, DecodingParams(max_new_tokens=7, seed=4))
    assert len(out) == 3 and out[0].endswith("with audio") and not out[1].endswith("with audio")
    llm = FakeLLM.instances[-1]
    assert [len(c[0]) for c in llm.calls] == [2, 1]  # batch_size chunks
    first = llm.calls[0][0][0]
    assert "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\nWho speaks?" in first["prompt"]
    ((array, rate),) = first["multi_modal_data"]["audio"]
    assert rate == 16000 and array is samples
    assert "multi_modal_data" not in llm.calls[0][0][1]
    sp = llm.calls[0][1].kwargs
    assert sp == sampling_kwargs(DecodingParams(max_new_tokens=7, seed=4))
    assert (sp["temperature"], sp["top_k"], sp["top_p"], sp["max_tokens"], sp["seed"]) == (0.0, -1, 1.0, 7, 4)


def test_the_extractors_json_form_is_decoded_by_vllms_structured_outputs(fake_vllm, qwen2_audio_dir, monkeypatch):
    from harness.extraction.llm import attribute_schema, extraction_form
    from harness.tasks import TASKS

    submodule = types.ModuleType("vllm.sampling_params")
    submodule.StructuredOutputsParams = lambda **kwargs: ("structured", kwargs)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", submodule)
    model = VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={"batch_size": 2}).load()
    task = TASKS["hollywood_casting"]
    reqs = [GenerationRequest("Plain."), GenerationRequest("Extract.", answer_form=extraction_form(task))]
    model.generate(reqs, DecodingParams(max_new_tokens=5))
    model.generate(reqs[:1], DecodingParams(max_new_tokens=5))
    first, second = FakeLLM.instances[-1].calls
    plain, extract = first[1]
    assert "structured_outputs" not in plain.kwargs
    assert extract.kwargs["structured_outputs"] == ("structured", {"json": attribute_schema(task)})
    assert isinstance(second[1], FakeSamplingParams)  # no form in the batch: one shared parameter set


def test_sampling_params_are_explicit():
    kw = sampling_kwargs(DecodingParams(do_sample=True, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05))
    assert (kw["temperature"], kw["top_p"], kw["top_k"], kw["repetition_penalty"]) == (0.7, 0.8, 20, 1.05)
    assert all(v is not None for v in kw.values())
    with pytest.raises(ModelError, match="temperature"):
        sampling_kwargs(DecodingParams(do_sample=True, temperature=0))


def test_voxtral_is_refused_with_a_pointer(fake_vllm, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "voxtral"}')
    with pytest.raises(ModelError, match="openai:"):
        VLLMBackend(spec="vllm:v", target=str(tmp_path), options={}).load()


def test_release_waits_for_the_engine_processes_instead_of_vllms_five_seconds(fake_vllm, qwen2_audio_dir):
    """vLLM kills an engine core still tearing down after its default 5 s and leaves it a zombie; release hands
    the engine a longer wait, so its process exits and is reaped (the real engine: tests/nightly)."""
    from harness.models.vllm_backend import ENGINE_SHUTDOWN_TIMEOUT_S

    timeouts = []
    core = types.SimpleNamespace(shutdown=lambda timeout=None: timeouts.append(timeout))
    model = VLLMBackend(spec="vllm:q", target=qwen2_audio_dir, options={}).load()
    model.llm.llm_engine = types.SimpleNamespace(engine_core=core)
    model.release()
    assert timeouts == [ENGINE_SHUTDOWN_TIMEOUT_S] and ENGINE_SHUTDOWN_TIMEOUT_S > 5 and model.llm is None
