"""Tiny, randomly initialised audio-LLM checkpoints built offline for the backend tests.

Every builder writes a complete checkpoint directory (config, weights, generation_config, and where the
installed transformers can build it offline, the processor) that ``hf:<dir>`` loads through the real
backend code path. Weights are random, so outputs are gibberish but deterministic: the tests compare
outputs between code paths (batched versus alone, configured versus explicit decoding), never with
expected text.

Tokenizers are byte-level BPE with no merges (256 byte tokens) plus each architecture's special tokens
placed at the ids its config expects, so no hub download is needed.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

SR = 16_000

# Small, fast text-decoder settings shared by the builders (2 layers, width 32).
TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)


def tone(seconds: float, freq: float = 220.0, seed: int = 0) -> np.ndarray:
    """A deterministic test signal: a sine plus a little noise, mono float32 at 16 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(t.size)).astype(np.float32)


def byte_tokenizer(
    specials: list[str],
    *,
    eos: str,
    pad: str,
    bos: str | None = None,
    fixed_ids: dict[str, int] | None = None,
    extra_special_tokens: dict[str, str] | None = None,
    vocab_size: int | None = None,
    tokenizer_cls: Any = None,
):
    """A byte-level BPE fast tokenizer: 256 byte tokens, then ``specials`` (or at ``fixed_ids``).

    ``fixed_ids`` pins tokens to ids (fillers ``<unused_N>`` fill the gaps) for models whose configs
    hard-code token ids; ``extra_special_tokens`` maps attribute names (``audio_token``...) to tokens.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    fixed = dict(fixed_ids or {})
    order = [s for s in specials if s not in fixed]
    size = max([len(vocab) + len(order), *[i + 1 for i in fixed.values()], vocab_size or 0])
    by_id: dict[int, str] = {i: t for t, i in fixed.items()}
    free = iter(i for i in range(len(vocab), size + len(order)) if i not in by_id)
    for tok in order:
        by_id[next(free)] = tok
    all_specials = set(specials) | set(fixed)
    for i in range(len(vocab), max(by_id) + 1):
        vocab[by_id.get(i, f"<unused_{i}>")] = i
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in sorted(all_specials, key=vocab.get)])
    cls = tokenizer_cls or PreTrainedTokenizerFast
    kwargs: dict[str, Any] = dict(tokenizer_object=tok, eos_token=eos, pad_token=pad)
    if bos is not None:
        kwargs["bos_token"] = bos
    if extra_special_tokens:
        kwargs["extra_special_tokens"] = dict(extra_special_tokens)
    return cls(**kwargs)


def word_tokenizer(texts: list[str], specials: list[str], *, eos: str, pad: str, merges: int = 600):
    """A byte-level BPE fast tokenizer trained here on ``texts`` (``tokenizers``' BPE trainer), so that
    their words are single tokens (``Ġword``) beside the 256 byte tokens and ``specials``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256 + len(specials) + merges, initial_alphabet=ByteLevel.alphabet(),
                                  special_tokens=[AddedToken(t, special=True, normalized=False) for t in specials],
                                  show_progress=False)  # fmt: skip
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token=pad)


def word_token_ids(tokenizer, texts: list[str]) -> list[int]:
    """The ids of the tokens that are a whole word of ``texts`` after a space (``Ġword``)."""
    words = {word.strip(".,?!").lower() for text in texts for word in text.split()}
    return sorted(i for token, i in tokenizer.get_vocab().items()
                  if token.startswith("\u0120") and token[1:].lower() in words)  # fmt: skip


def _save(model, directory: Path, generation: dict | None) -> None:
    from transformers import GenerationConfig

    model.save_pretrained(directory)
    gen = GenerationConfig(**(generation or {}))
    gen.save_pretrained(directory)


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


# Sampling defaults a checkpoint may ship: the backend must ignore them (greedy unless asked otherwise).
LEAKY_GENERATION = dict(do_sample=True, temperature=1.7, top_k=5, top_p=0.5, repetition_penalty=1.8, max_new_tokens=2)


QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


# A text decoder that vLLM's CPU attention accepts (head_dim = 128 / 2 = 64; it rejects 16).
ENGINE_TEXT = dict(
    hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1
)


def build_qwen2_audio(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None,
                      text: dict | None = None, initializer_range: float = 0.02, words: list[str] | None = None,
                      word_gain: float = 4.0) -> Path:  # fmt: skip
    """Qwen2-Audio with its real processor (Whisper features + ChatML template).

    ``text`` replaces the text decoder's sizes (default :data:`TEXT`); a larger ``initializer_range``
    gives weights large enough that the answers depend on the audio and the prompt (at the default the
    logits are nearly flat and every input gets much the same answer). With ``words`` (sentences), the
    tokenizer is trained on them and the output rows of their whole-word tokens are scaled by
    ``word_gain``: greedy answers are then mostly those words, so a transcription has a word error rate
    below 100% now and then, as the WER checks need, and detokenisation joins merged tokens and spaces."""
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    directory = Path(directory)
    specials = QWEN_SPECIALS + ["<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
    if words:
        tok = word_tokenizer(list(words), specials, eos="<|im_end|>", pad="<|endoftext|>")
    else:
        tok = byte_tokenizer(specials, eos="<|im_end|>", pad="<|endoftext|>")
    proc = Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128), tokenizer=tok)
    proc.save_pretrained(directory)
    cfg = Qwen2AudioConfig(
        audio_config=dict(
            d_model=32, encoder_attention_heads=2, encoder_ffn_dim=64, encoder_layers=2, num_mel_bins=128
        ),
        text_config=dict(
            model_type="qwen2",
            vocab_size=len(tok),
            max_position_embeddings=4096,
            initializer_range=initializer_range,
            **(text or TEXT),
        ),
        audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"),
        initializer_range=initializer_range,
    )
    _seed(seed)
    model = Qwen2AudioForConditionalGeneration(cfg).eval()
    if words:
        import torch

        with torch.no_grad():
            model.get_output_embeddings().weight[word_token_ids(tok, list(words))] *= word_gain
    _save(model, directory, {"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, **(generation or {})})
    return directory


def build_audioflamingo3(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None) -> Path:
    """Audio Flamingo 3 with its real processor (30 s Whisper windows, ``<sound>`` placeholder)."""
    from transformers import (
        AudioFlamingo3Config,
        AudioFlamingo3ForConditionalGeneration,
        AudioFlamingo3Processor,
        WhisperFeatureExtractor,
    )

    directory = Path(directory)
    tok = byte_tokenizer(QWEN_SPECIALS + ["<sound>"], eos="<|im_end|>", pad="<|endoftext|>")
    proc = AudioFlamingo3Processor(feature_extractor=WhisperFeatureExtractor(feature_size=128), tokenizer=tok)
    proc.save_pretrained(directory)
    cfg = AudioFlamingo3Config(
        audio_config=dict(
            hidden_size=32, num_attention_heads=2, intermediate_size=64, num_hidden_layers=2, num_mel_bins=128
        ),
        text_config=dict(model_type="qwen2", vocab_size=len(tok), max_position_embeddings=4096, **TEXT),
        audio_token_id=tok.convert_tokens_to_ids("<sound>"),
    )
    _seed(seed)
    _save(
        AudioFlamingo3ForConditionalGeneration(cfg).eval(),
        directory,
        {"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, **(generation or {})},
    )
    return directory


VOXTRAL_AUDIO_TOKEN_ID = 24  # hard-coded by VoxtralProcessor


def tiny_tekken(directory: Path) -> Path:
    """A mistral-common Tekken tokenizer file with 256 byte tokens, Voxtral's special tokens and audio config."""
    names = [
        "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
        "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
    ]  # fmt: skip
    names += [f"<SPECIAL_{i}>" for i in range(20, 24)] + ["[AUDIO]", "[BEGIN_AUDIO]"]
    names += [f"<SPECIAL_{i}>" for i in range(26, 34)] + ["[TRANSCRIBE]"]
    n_special = 64
    tekken = {
        "config": {
            "pattern": r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
            "num_vocab_tokens": 256,
            "default_vocab_size": 256 + n_special,
            "default_num_special_tokens": n_special,
            "version": "v7",
        },
        "vocab": [
            {"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(), "token_str": None} for i in range(256)
        ],
        "special_tokens": [{"rank": i, "token_str": n, "is_control": True} for i, n in enumerate(names)],
        "audio": {
            "sampling_rate": SR,
            "frame_rate": 12.5,
            "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400},
            "chunk_length_s": 30.0,
        },
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tekken.json"
    path.write_text(json.dumps(tekken))
    return path


def build_voxtral(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None) -> Path:
    """Voxtral with its real processor: mistral-common Tekken tokenizer + Whisper features."""
    from transformers import (
        MistralCommonBackend,
        VoxtralConfig,
        VoxtralForConditionalGeneration,
        VoxtralProcessor,
        WhisperFeatureExtractor,
    )

    directory = Path(directory)
    tok = MistralCommonBackend(tokenizer_path=str(tiny_tekken(directory)))
    proc = VoxtralProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128), tokenizer=tok)
    proc.save_pretrained(directory)
    cfg = VoxtralConfig(
        # Voxtral's projector reshapes encoder states by audio intermediate_size: it must be 4 x hidden.
        audio_config=dict(
            hidden_size=32, num_attention_heads=2, intermediate_size=128, num_hidden_layers=2, num_mel_bins=128
        ),
        text_config=dict(model_type="llama", vocab_size=len(tok), head_dim=16, max_position_embeddings=4096, **TEXT),
        projector_hidden_act="gelu",
        audio_token_id=VOXTRAL_AUDIO_TOKEN_ID,
    )
    _seed(seed)
    _save(
        VoxtralForConditionalGeneration(cfg).eval(),
        directory,
        {"eos_token_id": 2, "pad_token_id": 11, "bos_token_id": 1, **(generation or {})},
    )
    return directory


def build_phi4_multimodal(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None) -> Path:
    """Phi-4-multimodal with its real processor (its own log-mel features, ``<|audio|>`` placeholder)."""
    from transformers import (
        Phi4MultimodalConfig,
        Phi4MultimodalFeatureExtractor,
        Phi4MultimodalForCausalLM,
        Phi4MultimodalProcessor,
    )
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    directory = Path(directory)
    specials = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|image|>", "<|audio|>"]
    tok = byte_tokenizer(
        specials, eos="<|end|>", pad="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image|>", "audio_token": "<|audio|>"},
    )  # fmt: skip
    proc = Phi4MultimodalProcessor(
        # Phi-4's image processor needs torchvision (absent beside torch 2.13 CPU); audio-only use never
        # calls it, so a PIL image processor stands in, exactly as the hf backend does without torchvision.
        image_processor=SiglipImageProcessorPil(),
        audio_processor=Phi4MultimodalFeatureExtractor(),
        tokenizer=tok,
    )
    proc.save_pretrained(directory)
    cfg = Phi4MultimodalConfig(
        vocab_size=len(tok), max_position_embeddings=4096, original_max_position_embeddings=4096,
        bos_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id, eos_token_id=[tok.eos_token_id],
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           image_size=28, patch_size=14, crop_size=28, image_token_id=tok.convert_tokens_to_ids("<|image|>")),
        audio_config=dict(hidden_size=32, intermediate_size=64, num_blocks=2, num_attention_heads=2,
                          ext_pw_out_channel=32, depthwise_separable_out_channel=32, nemo_conv_channels=32,
                          input_size=80, audio_token_id=tok.convert_tokens_to_ids("<|audio|>")),
        **TEXT,
    )  # fmt: skip
    _seed(seed)
    _save(
        Phi4MultimodalForCausalLM(cfg).eval(),
        directory,
        {"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, **(generation or {})},
    )
    return directory


def build_qwen2_5_omni_thinker(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None) -> Path:
    """Qwen2.5-Omni's thinker (text output) WITHOUT a processor: its processor needs torchvision.

    Also writes ``tokenizer.json`` so tests can tokenize; audio inputs are built by hand in the test.
    """
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    directory = Path(directory)
    specials = QWEN_SPECIALS + [
        "<|AUDIO|>",
        "<|audio_bos|>",
        "<|audio_eos|>",
        "<|IMAGE|>",
        "<|VIDEO|>",
        "<|vision_bos|>",
        "<|vision_eos|>",
    ]
    tok = byte_tokenizer(specials, eos="<|im_end|>", pad="<|endoftext|>")
    tok.save_pretrained(directory)
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    cfg = Qwen2_5OmniThinkerConfig(
        audio_config=dict(d_model=32, encoder_attention_heads=2, encoder_ffn_dim=64, encoder_layers=2, num_mel_bins=128, output_dim=32, n_window=50),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32, fullatt_block_indexes=[0]),
        text_config=dict(vocab_size=len(tok), max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 4]}, **TEXT),
        audio_token_id=ids["<|AUDIO|>"], image_token_id=ids["<|IMAGE|>"], video_token_id=ids["<|VIDEO|>"],
        audio_start_token_id=ids["<|audio_bos|>"], audio_end_token_id=ids["<|audio_eos|>"],
        vision_start_token_id=ids["<|vision_bos|>"], vision_end_token_id=ids["<|vision_eos|>"],
    )  # fmt: skip
    _seed(seed)
    _save(
        Qwen2_5OmniThinkerForConditionalGeneration(cfg).eval(),
        directory,
        {"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, **(generation or {})},
    )
    return directory


QWEN3_OMNI_SPECIALS = QWEN_SPECIALS + [
    "<|audio_start|>",
    "<|audio_end|>",
    "<|audio_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|vision_start|>",
    "<|vision_end|>",
]


def build_qwen3_omni_moe(directory: str | os.PathLike, *, seed: int = 0, generation: dict | None = None,
                         initializer_range: float = 0.2) -> Path:  # fmt: skip
    """A full Qwen3-Omni checkpoint (``model_type: qwen3_omni_moe``: thinker, talker and code2wav weights) with
    a tokenizer and Whisper feature extractor but no processor config: its processor needs torchvision.

    The thinker is a 2-layer mixture-of-experts decoder (4 experts, 2 per token) over a 2-layer audio encoder
    with the real 100-frame chunking; the talker and code2wav are there only to be skipped at load time. The
    ``initializer_range`` is 0.2 so that answers depend on the audio (at 0.02 the logits hardly move with it).
    """
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration, WhisperFeatureExtractor

    directory = Path(directory)
    tok = byte_tokenizer(QWEN3_OMNI_SPECIALS, eos="<|im_end|>", pad="<|endoftext|>")
    tok.save_pretrained(directory)
    WhisperFeatureExtractor(feature_size=128).save_pretrained(directory)
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN3_OMNI_SPECIALS}
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
    mrope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2], "interleaved": True}
    media = dict(audio_token_id=ids["<|audio_pad|>"], image_token_id=ids["<|image_pad|>"],
                 video_token_id=ids["<|video_pad|>"], audio_start_token_id=ids["<|audio_start|>"])  # fmt: skip
    thinker = dict(
        audio_config=dict(d_model=32, encoder_attention_heads=2, encoder_ffn_dim=64, encoder_layers=2, num_mel_bins=128,
                          output_dim=32, downsample_hidden_size=8, n_window=50, n_window_infer=100,
                          initializer_range=initializer_range),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32,
                           deepstack_visual_indexes=[0], num_position_embeddings=64),
        text_config=dict(vocab_size=len(tok), max_position_embeddings=4096, rope_parameters=mrope,
                         initializer_range=initializer_range, **TEXT, **moe),
        initializer_range=initializer_range,
        # not a declared field, but the real checkpoints' thinker_config has it and get_rope_index reads it
        vision_start_token_id=ids["<|vision_start|>"], **media,
    )  # fmt: skip
    talker = dict(
        text_config=dict(vocab_size=64, shared_expert_intermediate_size=32, **TEXT, **moe),
        code_predictor_config=dict(vocab_size=64, num_code_groups=2, **TEXT),
        num_code_groups=2, thinker_hidden_size=32, accept_hidden_layer=1, spatial_merge_size=2,
        codec_pad_id=58, codec_bos_id=59, codec_eos_token_id=60, codec_nothink_id=61, codec_think_bos_id=62,
        codec_think_eos_id=63, speaker_id={"ethan": 57}, vision_start_token_id=ids["<|vision_start|>"], **media,
    )  # fmt: skip
    code2wav = dict(codebook_size=64, hidden_size=32, num_attention_heads=2, num_key_value_heads=2,
                    intermediate_size=64, num_hidden_layers=1, num_quantizers=2, decoder_dim=32,
                    upsample_rates=(2, 2), upsampling_ratios=(2,))  # fmt: skip
    cfg = Qwen3OmniMoeConfig(
        thinker_config=thinker, talker_config=talker, code2wav_config=code2wav,
        im_start_token_id=ids["<|im_start|>"], im_end_token_id=ids["<|im_end|>"],
    )  # fmt: skip
    _seed(seed)
    _save(
        Qwen3OmniMoeForConditionalGeneration(cfg).eval(),
        directory,
        {"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, **(generation or {})},
    )
    return directory


def build_tiny_vits(path: Path) -> Path:
    """A tiny, randomly initialised VITS text-to-speech checkpoint (``VitsModel`` + ``VitsTokenizer`` of lower-case
    letters, space and apostrophe, no phonemizer) for the suite builder's ``hf:`` voice bank: width 16, one layer,
    an upsampling of 4 x 4 (so 16 samples per spectrogram frame)."""
    import torch
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    path.mkdir(parents=True, exist_ok=True)
    symbols = ["<pad>", "<unk>", " ", "'", *"abcdefghijklmnopqrstuvwxyz"]
    (path / "vocab.json").write_text(json.dumps({symbol: index for index, symbol in enumerate(symbols)}))
    tokenizer = VitsTokenizer(str(path / "vocab.json"), language="eng", add_blank=True, normalize=True, phonemize=False)
    config = VitsConfig(
        vocab_size=len(symbols), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32, flow_size=16,
        spectrogram_bins=17, upsample_initial_channel=16, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8],
        resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]], prior_encoder_num_flows=1,
        prior_encoder_num_wavenet_layers=1, posterior_encoder_num_wavenet_layers=1, duration_predictor_filter_channels=16,
        duration_predictor_num_flows=1, depth_separable_num_layers=1, sampling_rate=16_000,
    )  # fmt: skip
    torch.manual_seed(0)
    VitsModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
