"""Voice specs: which bank reads the items, with which voice and settings, and which groups the voice is meant to carry.

A spec is ``BANK:VOICE[SETTING=VALUE,...]@DIMENSION=LABEL@...``, e.g. ``espeak-ng:en-gb-x-rp+f2[pitch=60,rate=170]@gender=female@accent=gb``:

* ``BANK`` names a voice bank (:mod:`harness.suite.banks`), ``VOICE`` one of its voices;
* the bracketed settings are the bank's (espeak-ng's ``pitch`` and ``rate``, Piper's ``length_scale``...); a value may
  itself be a voice spec with brackets (``transform:gender_swap[source=espeak-ng:en-us+m1[pitch=40],source_group=male]``);
* each ``@DIMENSION=LABEL`` declares a group label the voice is meant to carry (``@speaker=ID`` names the speaker id
  instead; by default voices are ``spk01``, ``spk02``... in the order given).

``--voices`` takes specs separated by commas (commas inside brackets belong to the settings) or a YAML file, a list of
``{spec: ..., speaker: ..., <dimension>: <label>}`` whose labels join the spec's inline ones. A bad spec, a label
given twice with two values, or an unknown bank is a :class:`~harness.suite.errors.SuiteError` naming the spec.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from harness.suite.errors import SuiteError

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""A dimension or setting name: lower-case letters, digits and underscores."""
SPEAKER_KEY = "speaker"


@dataclasses.dataclass(frozen=True)
class VoiceSpec:
    """One voice: ``bank``, ``voice``, ``settings`` (name -> value, as written), ``labels`` (dimension -> group) and
    the ``speaker`` id of its clips."""

    bank: str
    voice: str
    settings: tuple[tuple[str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    speaker: str = ""

    @property
    def setting(self) -> dict[str, str]:
        return dict(self.settings)

    @property
    def label(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def sound(self) -> str:
        """What makes the sound, without labels or speaker: ``bank:voice[settings]`` with the settings sorted, the
        spec the clip's recipe names (two voices equal in sound make the same clips)."""
        settings = ",".join(f"{key}={value}" for key, value in sorted(self.settings))
        return f"{self.bank}:{self.voice}" + (f"[{settings}]" if settings else "")

    @property
    def text(self) -> str:
        """The whole spec: :attr:`sound` and the labels, as a manifest row and provenance.json name the voice."""
        return self.sound + "".join(f"@{dimension}={group}" for dimension, group in self.labels)


def split_top_level(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` outside brackets; unbalanced brackets are an error naming ``text``."""
    parts, depth, start = [], 0, 0
    for position, character in enumerate(text):
        if character == "[":
            depth += 1
        elif character == "]":
            depth -= 1
            if depth < 0:
                raise SuiteError(f"voice spec {text!r}: a ']' without its '['")
        elif character == separator and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    if depth:
        raise SuiteError(f"voice spec {text!r}: a '[' without its ']'")
    parts.append(text[start:])
    return parts


def parse_voice_spec(
    text: str, labels: Mapping[str, str] | None = None, speaker: str = "", need_labels: bool = True
) -> VoiceSpec:
    """One spec (module docstring); ``labels`` and ``speaker`` (from a voices file) join the inline ones. A voice
    of the suite must declare a label (``need_labels``); the source voice of a transform need not."""
    written = text.strip()
    head, *label_parts = split_top_level(written, "@")
    bank, colon, rest = head.partition(":")
    if not colon or not bank or not rest:
        raise SuiteError(
            f"voice spec {written!r}: not BANK:VOICE[SETTINGS]@DIMENSION=LABEL (e.g. espeak-ng:en-us+f2@gender=female)"
        )
    voice, bracket, settings_text = rest.partition("[")
    if not voice:
        raise SuiteError(f"voice spec {written!r}: no voice after {bank}:")
    settings: dict[str, str] = {}
    if bracket:
        if not settings_text.endswith("]"):
            raise SuiteError(f"voice spec {written!r}: the settings must close with ']' before any '@'")
        for part in split_top_level(settings_text[:-1], ","):
            key, equals, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not equals or not NAME.match(key) or not value:
                raise SuiteError(f"voice spec {written!r}: setting {part!r} is not NAME=VALUE")
            if key in settings:
                raise SuiteError(f"voice spec {written!r}: setting {key!r} is given twice")
            settings[key] = value
    declared: dict[str, str] = {}
    for part in label_parts:
        key, equals, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not NAME.match(key) or not value or any(c in value for c in ",[]@="):
            raise SuiteError(f"voice spec {written!r}: label {part!r} is not DIMENSION=LABEL (e.g. @gender=female)")
        if key in declared:
            raise SuiteError(f"voice spec {written!r}: label {key!r} is given twice")
        declared[key] = value
    for key, value in (labels or {}).items():
        if declared.get(key, value) != value:
            raise SuiteError(
                f"voice spec {written!r}: {key} is {declared[key]!r} in the spec and {value!r} in the voices file"
            )
        declared[key] = value
    speaker = declared.pop(SPEAKER_KEY, "") or speaker
    if need_labels and not declared:
        raise SuiteError(
            f"voice spec {written!r}: declares no group label; add @gender=female (or another DIMENSION=LABEL)"
        )
    return VoiceSpec(bank, voice.strip(), tuple(settings.items()), tuple(declared.items()), speaker)


def read_voices(argument: str) -> list[VoiceSpec]:
    """The voices of ``--voices``: a YAML file (``.yaml``/``.yml``) or specs separated by commas; speaker ids are
    filled in (``spk01``...) where none is named, and two voices with one speaker id are an error."""
    if argument.endswith((".yaml", ".yml")):
        voices = read_voices_file(Path(argument))
    else:
        voices = [parse_voice_spec(part) for part in split_top_level(argument, ",") if part.strip()]
    if not voices:
        raise SuiteError(f"--voices {argument!r}: no voice given")
    return with_speaker_ids(voices)


def read_voices_file(path: Path) -> list[VoiceSpec]:
    """A YAML list of ``{spec: ..., speaker: ..., <dimension>: <label>}``; an error names the file and entry."""
    if not path.is_file():
        raise SuiteError(f"{path}: voices file does not exist")
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(entries, list):
        raise SuiteError(f"{path}: expected a list of voices, each {{spec: ..., gender: ...}}")
    voices = []
    for number, entry in enumerate(entries, 1):
        where = f"{path}, voice {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("spec"), str):
            raise SuiteError(f"{where}: expected a mapping with a 'spec' string")
        labels = {str(key): str(value) for key, value in entry.items() if key not in ("spec", SPEAKER_KEY)}
        bad = [key for key in labels if not NAME.match(key)]
        if bad:
            raise SuiteError(f"{where}: {bad[0]!r} is not a dimension name (lower-case letters, digits, underscores)")
        try:
            voices.append(parse_voice_spec(entry["spec"], labels, str(entry.get(SPEAKER_KEY) or "")))
        except SuiteError as exc:
            raise SuiteError(f"{where}: {exc}") from exc
    return voices


def with_speaker_ids(voices: Iterable[VoiceSpec]) -> list[VoiceSpec]:
    """Each voice with its speaker id: the one it names, else ``spk<NN>`` by position (1-based, two digits). Two
    voices with one speaker id, or one sound (:attr:`VoiceSpec.sound`) under two speaker ids, are an error: a voice
    is the speaker every check permutes, resamples or models (issue 61, item 4), and the same sound twice would make
    the same clips count as two speakers."""
    named = [
        voice if voice.speaker else dataclasses.replace(voice, speaker=f"spk{number:02d}")
        for number, voice in enumerate(voices, 1)
    ]
    seen: dict[str, VoiceSpec] = {}
    sounds: dict[str, VoiceSpec] = {}
    for voice in named:
        if voice.speaker in seen:
            raise SuiteError(
                f"voice spec {voice.text!r}: speaker id {voice.speaker!r} is also {seen[voice.speaker].text!r}"
            )
        if voice.sound in sounds:
            raise SuiteError(
                f"voice spec {voice.text!r} (speaker {voice.speaker}) sounds as speaker {sounds[voice.sound].speaker} "
                "does: one voice is one speaker; give it other settings or leave it out"
            )
        seen[voice.speaker] = sounds[voice.sound] = voice
    return named


def voices_per_group(voices: Iterable[VoiceSpec]) -> dict[str, dict[str, list[str]]]:
    """Dimension -> group -> the speaker ids of the voices declaring it, in order."""
    groups: dict[str, dict[str, list[str]]] = {}
    for voice in voices:
        for dimension, group in voice.labels:
            groups.setdefault(dimension, {}).setdefault(group, []).append(voice.speaker)
    return groups
