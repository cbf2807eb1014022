"""The hf: backend on tiny random checkpoints of each audio LLM architecture the installed transformers has.

Processors are the real ones where they build offline (Qwen2-Audio, Audio Flamingo 3, Voxtral with a
mistral-common Tekken file, Phi-4-multimodal with a PIL image processor standing in for the torchvision
one). Qwen2.5-Omni's processor needs torchvision: its thinker is driven through the adapter's hand-built
audio path (Whisper features + placeholder expansion, as the processor does). Gemma-3n (vision tower
needs timm) and Granite Speech (feature extractor needs torchaudio) are checked for a clear error only.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from harness.core.errors import ModelError  # noqa: E402
from harness.core.requests import Audio, DecodingParams, GenerationRequest  # noqa: E402
from harness.models.hf import HFBackend, generation_kwargs, plan_batches, resample  # noqa: E402
from harness.models.hf_arch import architecture_for, supported  # noqa: E402
from harness.models.placement import gpu_skip_reason  # noqa: E402

from support import tiny_models as tm  # noqa: E402

ARCHS = ["qwen2_audio", "audioflamingo3", "voxtral", "phi4_multimodal", "qwen2_5_omni_thinker"]
GREEDY = DecodingParams(max_new_tokens=6)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    made = {}

    def get(name: str, **kw):
        key = (name, tuple(sorted(kw)))
        if key not in made:
            made[key] = getattr(tm, f"build_{name}")(tmp_path_factory.mktemp(name), **kw)
        return made[key]

    return get


@pytest.fixture(scope="module")
def models(checkpoints):
    loaded = {}

    def get(name: str, **options):
        key = (name, tuple(sorted(options.items())))
        if key not in loaded:
            path = str(checkpoints(name))
            loaded[key] = HFBackend(spec=f"hf:{path}", target=path, options={"batch_size": 8, **options}).load()
        return loaded[key]

    return get


def audio(seconds: float, seed: int) -> Audio:
    return Audio(tm.tone(seconds, freq=200 + 50 * seed, seed=seed))


# ---------------------------------------------------------------------------------------- prompts
EXPECTED_PROMPT = {
    "qwen2_audio": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nAudio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\nHello<|im_end|>\n<|im_start|>assistant\n",
    "audioflamingo3": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n<sound>Hello<|im_end|>\n<|im_start|>assistant\n",
    "phi4_multimodal": "<|system|>Be brief.<|end|><|user|><|audio|>Hello<|end|><|assistant|>",
    "qwen2_5_omni_thinker": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n<|audio_bos|><|AUDIO|><|audio_eos|>Hello<|im_end|>\n<|im_start|>assistant\n",
    # mistral-common renders and expands at once: 1 s of audio is padded to 30 s = 375 audio tokens
    "voxtral": "<s>[INST][BEGIN_AUDIO]" + "[AUDIO]" * 375 + "Be brief.\n\nHello[/INST]",
}  # fmt: skip


@pytest.mark.parametrize("arch", ARCHS)
def test_rendered_prompt_places_the_audio_placeholder(models, arch):
    model = models(arch)
    assert model.render_prompt(GenerationRequest("Hello", audio(1.0, 0), system="Be brief.")) == EXPECTED_PROMPT[arch]


def test_text_only_prompt_has_no_placeholder(models):
    model = models("qwen2_audio")
    assert model.render_prompt(GenerationRequest("Hello")) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


# ---------------------------------------------------------------------------------------- batching
@pytest.mark.parametrize("arch", ARCHS)
def test_batched_outputs_equal_outputs_alone(models, arch):
    """Two audios of different lengths (and a text-only request) in one call == each run alone."""
    model = models(arch)
    reqs = [
        GenerationRequest("Describe the speaker.", audio(1.0, 1)),
        GenerationRequest("Describe the speaker.", audio(0.55, 2), system="Be brief."),
        GenerationRequest("Just text."),
        GenerationRequest("Again?", audio(0.55, 3)),
    ]
    batched = model.generate(reqs, GREEDY)
    alone = [model.generate([r], GREEDY)[0] for r in reqs]
    assert batched == alone
    assert all(isinstance(t, str) for t in batched)


def test_processor_pads_text_left_and_audio_per_item(models):
    model = models("qwen2_audio")
    reqs = [GenerationRequest("a", audio(1.0, 1)), GenerationRequest("a much longer prompt here", audio(0.3, 2))]
    enc = model.adapter.encode(model.processor, reqs, [model._audio(r) for r in reqs])
    assert (enc["attention_mask"][:, -1] == 1).all()  # left padding: every row ends with a real token
    # 30 s Whisper window per item; the mask covers each audio's own frames only
    assert enc["input_features"].shape[-1] == 3000
    assert enc["feature_attention_mask"].sum(-1).tolist() == [100, 30]


def test_plan_batches_never_mixes_audio_lengths_when_equal_length():
    a, b = Audio(np.zeros(100, np.float32)), Audio(np.zeros(200, np.float32))
    reqs = [GenerationRequest("x", a), GenerationRequest("t"), GenerationRequest("y", b), GenerationRequest("z", a)]
    assert plan_batches(reqs, 8, "free") == [[0, 2, 3], [1]]
    assert plan_batches(reqs, 8, "equal_length") == [[0, 3], [1], [2]]
    assert plan_batches(reqs, 8, "none") == [[0], [1], [2], [3]]
    assert plan_batches(reqs, 1, "free") == [[0], [2], [3], [1]]


def test_equal_length_architecture_batches_same_length_audio(models):
    model = models("phi4_multimodal")
    assert model.adapter.audio_batching == "equal_length"
    same = [GenerationRequest(f"q{i}", audio(0.5, i)) for i in range(3)]
    assert model.generate(same, GREEDY) == [model.generate([r], GREEDY)[0] for r in same]


# ---------------------------------------------------------------------------------------- decoding
def test_checkpoint_generation_defaults_do_not_leak(checkpoints, tmp_path):
    """A checkpoint shipping do_sample/temperature/top_k/max_new_tokens defaults decodes greedily anyway."""
    clean = str(checkpoints("qwen2_audio"))
    leaky = str(tm.build_qwen2_audio(tmp_path / "leaky", generation=tm.LEAKY_GENERATION))
    assert json.loads((tmp_path / "leaky" / "generation_config.json").read_text())["do_sample"] is True
    reqs = [GenerationRequest("Hi", audio(0.7, 4)), GenerationRequest("Text only")]
    params = DecodingParams(max_new_tokens=8)
    ref = HFBackend(spec="hf:clean", target=clean, options={}).load()
    model = HFBackend(spec="hf:leaky", target=leaky, options={}).load()
    assert model.model.generation_config.do_sample in (None, False)
    out = model.generate(reqs, params)
    assert out == ref.generate(reqs, params)
    assert [model.generate(reqs, params) for _ in range(2)] == [out, out]
    # max_new_tokens came from DecodingParams (8), not the checkpoint (2)
    enc = model.adapter.encode(model.processor, reqs[1:], [None])
    gen = model.generation_config(params)
    assert gen.max_new_tokens == 8 and gen.do_sample is False and gen.repetition_penalty == 1.0
    new = model.adapter.generate(model.model, model._to_device(enc), gen)
    assert new.shape[1] > 2


def test_every_decoding_parameter_is_explicit():
    kw = generation_kwargs(DecodingParams(do_sample=True, temperature=0.7, top_p=0.9, top_k=20, repetition_penalty=1.1))
    assert (kw["do_sample"], kw["temperature"], kw["top_p"], kw["top_k"], kw["repetition_penalty"]) == (
        True,
        0.7,
        0.9,
        20,
        1.1,
    )
    assert all(v is not None for v in kw.values())
    assert generation_kwargs(DecodingParams(), max_new_tokens=3)["max_new_tokens"] == 3
    with pytest.raises(ModelError, match="temperature"):
        generation_kwargs(DecodingParams(do_sample=True, temperature=0.0))


def test_sampling_is_seeded(models):
    model = models("qwen2_audio")
    reqs = [GenerationRequest("Hi", audio(0.5, 5))]
    p = DecodingParams(max_new_tokens=6, do_sample=True, temperature=1.5, seed=7)
    assert model.generate(reqs, p) == model.generate(reqs, p)


def test_max_new_tokens_option_overrides(checkpoints):
    path = str(checkpoints("qwen2_audio"))
    model = HFBackend(spec="hf:x", target=path, options={"max_new_tokens": 2}).load()
    assert model.generation_config(DecodingParams(max_new_tokens=50)).max_new_tokens == 2


# ---------------------------------------------------------------------------------------- representations
@pytest.mark.parametrize("arch", ["qwen2_audio", "phi4_multimodal", "voxtral"])
def test_hidden_states_and_next_token_logits(models, arch):
    model = models(arch)
    hs = model.hidden_states(["short", "a longer sentence here", "short"])
    assert hs.shape == (3, 32) and hs.dtype == np.float32
    np.testing.assert_allclose(hs[0], hs[2], atol=1e-5)
    alone = model.hidden_states(["short"])
    np.testing.assert_allclose(alone[0], hs[0], atol=1e-4)  # padding does not change a text's vector
    logp = model.next_token_logits([GenerationRequest("Hi", audio(0.5, 6)), "text only"])
    assert logp.shape[0] == 2
    np.testing.assert_allclose(np.exp(logp).sum(-1), 1.0, atol=1e-4)


# ---------------------------------------------------------------------------------------- options and errors
def test_supported_architectures_and_clear_errors(tmp_path):
    assert {
        "qwen2_audio",
        "qwen2_5_omni",
        "voxtral",
        "gemma3n",
        "phi4_multimodal",
        "audioflamingo3",
        "granite_speech",
    } <= set(supported())
    with pytest.raises(ModelError, match="supported architectures: .*qwen2_audio"):
        architecture_for("llama")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "whisper"}))
    with pytest.raises(ModelError, match="not a supported audio LLM"):
        HFBackend(spec="hf:w", target=str(tmp_path), options={}).load()


@pytest.mark.parametrize(("model_type", "module"), [("gemma3n", "timm"), ("granite_speech", "torchaudio")])
def test_missing_optional_module_is_named(tmp_path, model_type, module):
    import importlib.util

    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    with pytest.raises(ModelError, match=f"pip install {module}"):
        HFBackend(spec="hf:x", target=str(tmp_path), options={}).load()


def test_unknown_option_and_bad_dtype_fail_at_construction():
    with pytest.raises(ModelError, match="unknown hf option"):
        HFBackend(spec="hf:x", target="x", options={"temprature": 0})
    with pytest.raises(ModelError, match="dtype"):
        HFBackend(spec="hf:x", target="x", options={"dtype": "int3"})


def test_fingerprint_is_cheap_and_tracks_behaviour_options(checkpoints):
    path = str(checkpoints("qwen2_audio"))
    a = HFBackend(spec="hf:p", target=path, options={})
    assert (
        a.fingerprint() == HFBackend(spec="hf:p", target=path, options={"batch_size": 1, "device": "cpu"}).fingerprint()
    )
    assert a.fingerprint() != HFBackend(spec="hf:p", target=path, options={"dtype": "bfloat16"}).fingerprint()
    assert a.fingerprint() != HFBackend(spec="hf:p", target=path, options={"max_new_tokens": 3}).fingerprint()


def test_resample_to_model_rate():
    x = np.sin(np.linspace(0, 100, 8000)).astype(np.float32)
    y = resample(x, 8000, 16000)
    assert y.shape == (16000,) and y.dtype == np.float32
    assert resample(x, 16000, 16000) is x or np.array_equal(resample(x, 16000, 16000), x)


def test_other_sample_rates_are_resampled_before_the_processor(models):
    model = models("qwen2_audio")
    a16 = audio(0.5, 8)
    a8 = Audio(resample(a16.samples, 16000, 8000), sample_rate=8000)
    assert len(model._audio(GenerationRequest("x", a8))) == len(a16.samples)


# ---------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.skipif(gpu_skip_reason() is not None, reason=str(gpu_skip_reason()))
def test_gpu_batched_equals_alone(checkpoints):
    path = str(checkpoints("qwen2_audio"))
    model = HFBackend(spec="hf:g", target=path, options={"device": "cuda", "dtype": "float32"}).load()
    assert model.device.type == "cuda"
    reqs = [GenerationRequest("a", audio(1.0, 1)), GenerationRequest("b", audio(0.4, 2)), GenerationRequest("c")]
    assert model.generate(reqs, GREEDY) == [model.generate([r], GREEDY)[0] for r in reqs]
