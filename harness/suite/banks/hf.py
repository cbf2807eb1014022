"""``hf``: a transformers text-to-speech checkpoint: VITS (``VitsModel``, e.g. ``hf:facebook/mms-tts-eng``, the MMS-TTS
voices), a hub id or a local folder, on the GPU where there is one (float32 either way).

Settings: ``noise_scale`` and ``noise_scale_duration`` (the VITS sampling noise, the checkpoint's own by default),
``speaking_rate`` (above 1 faster) and ``seed`` (default 0): torch's generator is seeded with it before every clip,
so that one recipe makes one clip. A checkpoint is identified in the recipe by its files' SHA-256 (a local folder) or
its hub commit. Install: ``pip install 'lalm-fairness[hf]'``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np

from harness.suite.banks import Setting, VoiceBank, integer_between, number_at_least_zero, positive_number
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = "pip install 'lalm-fairness[hf]' (torch and transformers)"
MODEL_ATTRIBUTES = ("noise_scale", "noise_scale_duration", "speaking_rate")


@functools.cache
def load_checkpoint(target: str):
    """(model, tokenizer, device) of a VITS checkpoint, loaded once per process."""
    import torch
    from transformers import AutoTokenizer, VitsModel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        model = VitsModel.from_pretrained(target).to(device).eval()
        tokenizer = AutoTokenizer.from_pretrained(target)
    except (OSError, ValueError) as exc:
        raise SuiteError(f"hf:{target}: cannot load a VITS checkpoint ({exc})") from exc
    return model, tokenizer, device


@functools.cache
def checkpoint_identity(target: str) -> str:
    """The SHA-256 (16 hex digits) of a local checkpoint folder's files, or the hub commit of a hub id."""
    folder = Path(target)
    if folder.is_dir():
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]
    model, _, _ = load_checkpoint(target)
    return str(getattr(model.config, "_commit_hash", None) or "unknown commit")


class HFBank(VoiceBank):
    name = "hf"
    parallel = False  # CUDA does not survive a fork, and one model on the device serves every clip
    settings = {
        "noise_scale": Setting("VITS sampling noise (the checkpoint's own by default)", number_at_least_zero),
        "noise_scale_duration": Setting("VITS duration noise", number_at_least_zero),
        "speaking_rate": Setting("above 1 faster (default 1)", positive_number),
        "seed": Setting("torch seed before every clip (default 0)", integer_between(0, 2**31 - 1)),
    }

    def version(self) -> str:
        return f"transformers {importlib.metadata.version('transformers')}, torch {importlib.metadata.version('torch')}"

    def unavailable(self) -> str | None:
        missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
        return f"{' and '.join(missing)} not installed: {INSTALL}" if missing else None

    def recipe_parts(self, voice: VoiceSpec) -> dict:
        return {"voice": voice.sound, "synthesiser": f"{self.version()}, checkpoint {checkpoint_identity(voice.voice)}"}

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        import torch

        model, tokenizer, device = load_checkpoint(voice.voice)
        setting = voice.setting
        for attribute in MODEL_ATTRIBUTES:  # the spec's value, else the checkpoint's (another voice may have set it)
            setattr(model, attribute, float(setting.get(attribute, getattr(model.config, attribute))))
        inputs = tokenizer(text, return_tensors="pt").to(device)
        if inputs["input_ids"].shape[-1] == 0:
            raise SuiteError(f"voice spec {voice.text!r}: the tokenizer of {voice.voice} keeps nothing of {text!r}")
        torch.manual_seed(int(setting.get("seed", 0)))
        with torch.no_grad():
            waveform = model(**inputs).waveform[0]
        return waveform.float().cpu().numpy().astype(np.float64), int(model.config.sampling_rate)


BANK = HFBank()
