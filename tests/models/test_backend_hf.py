"""The hf: backend on tiny random checkpoints of each audio LLM architecture the installed transformers has.

Processors are the real ones where they build offline (Qwen2-Audio, Audio Flamingo 3, Voxtral with a
mistral-common Tekken file, Phi-4-multimodal with a PIL image processor standing in for the torchvision
one). Qwen2.5-Omni's and Qwen3-Omni's processors need torchvision: their thinkers are driven through the
adapters' hand-built audio paths (Whisper features + placeholder expansion, as the processors do; Qwen3-Omni's
is checked against the real processor's audio step). Gemma-3n (vision tower needs timm) and Granite Speech
(feature extractor needs torchaudio) are checked for a clear error only.
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

ARCHS = ["qwen2_audio", "audioflamingo3", "voxtral", "phi4_multimodal", "qwen2_5_omni_thinker", "qwen3_omni_moe"]
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
    "qwen3_omni_moe": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n<|audio_start|><|audio_pad|><|audio_end|>Hello<|im_end|>\n<|im_start|>assistant\n",
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
@pytest.mark.parametrize("arch", ["qwen2_audio", "phi4_multimodal", "voxtral", "qwen3_omni_moe"])
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


# ---------------------------------------------------------------------------------------- Qwen3-Omni
def test_qwen3_omni_full_checkpoint_loads_its_thinker_only(checkpoints, models):
    from safetensors import safe_open

    path = checkpoints("qwen3_omni_moe")
    assert json.loads((path / "config.json").read_text())["model_type"] == "qwen3_omni_moe"
    assert architecture_for("qwen3_omni_moe") == architecture_for("qwen3_omni_moe_thinker") == "qwen3_omni_moe"
    with safe_open(str(path / "model.safetensors"), "pt") as fh:
        stored = {key.split(".")[0] for key in fh.keys()}
    assert {"thinker", "talker", "code2wav"} <= stored  # the speech output is in the checkpoint...
    model = models("qwen3_omni_moe")
    assert type(model.model).__name__ == "Qwen3OmniMoeThinkerForConditionalGeneration"  # ...but never built
    assert not any(name.startswith(("talker", "code2wav")) for name, _ in model.model.named_parameters())
    assert model.adapter.audio_batching == "equal_length"
    end_of_turn = model.processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn in np.atleast_1d(model.special_ids["eos_token_id"]).tolist()


def test_qwen3_omni_audio_step_matches_the_real_processor(models):
    """The hand-built audio path gives the features, feature mask and ``<|audio_pad|>`` count of
    ``Qwen3OmniMoeProcessor``'s own audio step (run here without its torchvision-only video processor)."""
    import types

    from transformers import Qwen3OmniMoeProcessor

    model = models("qwen3_omni_moe")
    waves = [audio(seconds, seed).samples for seconds, seed in ((0.55, 1), (1.0, 2), (2.37, 3))]
    real = types.SimpleNamespace(
        feature_extractor=model.processor.feature_extractor, n_window=50, audio_token="<|audio_pad|>"
    )
    real.replace_audio_token = types.MethodType(Qwen3OmniMoeProcessor.replace_audio_token, real)
    for wave in waves:  # one at a time: equal_length batching never pads audio
        reference, (replacement,) = Qwen3OmniMoeProcessor._process_audio(
            real, [wave], **Qwen3OmniMoeProcessor.audio_kwargs, return_tensors="pt"
        )
        enc = model.adapter.encode(model.processor, [GenerationRequest("Hi", Audio(wave))], [wave])
        torch.testing.assert_close(enc["input_features"], reference["input_features"])
        assert enc["feature_attention_mask"].tolist() == reference["feature_attention_mask"].tolist()
        audio_pad = model.processor.tokenizer.convert_tokens_to_ids("<|audio_pad|>")
        assert int((enc["input_ids"] == audio_pad).sum()) == replacement.count("<|audio_pad|>")


def test_qwen3_omni_batch_padding_would_change_a_shorter_audio(models):
    """Why Qwen3-Omni is ``equal_length``: its processor pads a batch's audio to the longest, which adds a
    frame to a shorter audio's feature mask, so the backend never batches audios of different lengths."""
    model = models("qwen3_omni_moe")
    short, long = Audio(tm.tone(8850 / tm.SR, seed=1)), Audio(tm.tone(1.0, seed=2))
    assert len(short.samples) == 8850

    def frames(*waves):
        return model.processor(["<|audio_pad|>"] * len(waves), audio=list(waves))["feature_attention_mask"].sum(-1)

    assert frames(short.samples).tolist() == [55] and frames(short.samples, long.samples).tolist() == [56, 100]
    reqs = [GenerationRequest("a", short), GenerationRequest("b", long), GenerationRequest("c", short)]
    assert plan_batches(reqs, 8, model.adapter.audio_batching) == [[0, 2], [1]]


def test_qwen3_omni_audio_tokens_are_the_encoders_output_length(models):
    model = models("qwen3_omni_moe")
    audio_pad = model.processor.tokenizer.convert_tokens_to_ids("<|audio_pad|>")
    counts = []
    for seconds in (0.55, 1.0, 2.37):  # 2.37 s: two whole 100-frame chunks and a remainder
        req = GenerationRequest("Hi", audio(seconds, 4))
        enc = model.adapter.encode(model.processor, [req], [model._audio(req)])
        with torch.no_grad():
            encoded = model.model.get_audio_features(enc["input_features"], enc["feature_attention_mask"])
        counts.append(int((enc["input_ids"] == audio_pad).sum()))
        assert counts[-1] == encoded.last_hidden_state.shape[0]
    assert counts == [7, 13, 31]  # 55 frames -> 28 -> 14 -> 7; 100 -> 13; 237 -> 2 x 13 + (37 -> 19 -> 10 -> 5)


def test_qwen3_omni_answers_depend_on_the_audio_and_repeat(models):
    model = models("qwen3_omni_moe")
    a, b = GenerationRequest("Who is speaking?", audio(0.5, 6)), GenerationRequest("Who is speaking?", audio(0.5, 7))
    logp = model.next_token_logits([a, b, a])
    assert np.abs(logp[0] - logp[1]).max() > 1e-2  # the audio reaches the decoder
    np.testing.assert_allclose(logp[0], logp[2], atol=1e-5)
    reqs = [GenerationRequest("Who is speaking?", audio(0.5, seed)) for seed in range(6)]
    out = model.generate(reqs, GREEDY)
    assert all(isinstance(t, str) for t in out) and len(set(out)) > 1
    assert model.generate(reqs, GREEDY) == out


def test_qwen3_omni_thinker_only_checkpoint_answers_as_the_full_one(checkpoints, models, tmp_path):
    from transformers import AutoTokenizer, WhisperFeatureExtractor

    full = models("qwen3_omni_moe")
    path = checkpoints("qwen3_omni_moe")
    full.model.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(path).save_pretrained(tmp_path)
    WhisperFeatureExtractor.from_pretrained(path).save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "qwen3_omni_moe_thinker"
    thinker = HFBackend(spec="hf:t", target=str(tmp_path), options={}).load()
    assert thinker.adapter.name == "qwen3_omni_moe"
    reqs = [GenerationRequest("Who is speaking?", audio(0.8, 8)), GenerationRequest("Just text.")]
    assert thinker.generate(reqs, GREEDY) == full.generate(reqs, GREEDY)


# ---------------------------------------------------------------------------------------- options and errors
def test_supported_architectures_and_clear_errors(tmp_path):
    assert {
        "qwen2_audio",
        "qwen2_5_omni",
        "qwen3_omni_moe",
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
