"""``transform``: a voice derived from another by a registered voice transform (:mod:`harness.data.voice_transforms`).

``transform:NAME[source=SPEC,source_group=GROUP]``: every clip of the ``source`` voice (a spec of any bank, labels
not needed) is made, processed (:func:`harness.suite.audio.processed`) and passed through the transform, e.g.
``transform:gender_swap[source=espeak-ng:en-us+m1[pitch=40],source_group=male]@gender=female``: Praat's "Change
gender" toward the other gender, with the settings of the ``counterfactual`` section of the built-in thresholds.yaml
(as the counterfactual check uses them); ``transform:age_shift[...,source_group=young]@age=elderly`` moves a voice
older by WORLD (:mod:`harness.data.voice_transforms.age_shift`). The voice must declare the group the transform makes (``female`` above).
Praat's random draws are seeded from the clip's text and source, so one recipe makes one clip; the recipe names the
transform's fingerprint (its version, settings, code and Praat's version) and the source voice's synthesiser.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core.requests import Audio
from harness.core.values import stable_hash
from harness.data.voice_transforms import VoiceTransformError, get_transform, settings_of
from harness.suite.audio import SAMPLE_RATE, processed
from harness.suite.banks import Setting, VoiceBank, checked_bank
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec, parse_voice_spec
from harness.thresholds import packaged_thresholds


def any_text(value: str) -> str | None:
    return None


@functools.cache
def transform_settings(name: str = "gender_swap") -> Any:
    """The settings of transform ``name`` (:func:`~harness.data.voice_transforms.settings_of`:
    :class:`~harness.data.voice_transforms.ChangeGenderSettings` for Praat's, ``AgeShiftSettings`` for the WORLD
    age arms) in the ``counterfactual`` section of the built-in thresholds for the transform's dimension, read by
    the typed loader (:func:`harness.thresholds.packaged_thresholds`), as the counterfactual check reads them."""
    transform = get_transform(name)
    settings = packaged_thresholds().settings(SECTION, COUNTERFACTUAL_SCHEMA, None, transform.dimension)
    return settings_of(transform, dataclasses.asdict(settings))


class TransformBank(VoiceBank):
    name = "transform"
    settings = {
        "source": Setting("the voice spec to transform (required)", any_text),
        "source_group": Setting("the source voice's group on the transform's dimension (required)", any_text),
    }

    def version(self) -> str:
        return "voice transforms of harness.data.voice_transforms"

    def unavailable(self) -> str | None:
        return None

    def parts(self, voice: VoiceSpec):
        """(transform, source voice, source group) of a spec; an error names the spec."""
        setting = voice.setting
        missing = [key for key in ("source", "source_group") if key not in setting]
        if missing:
            raise SuiteError(f"voice spec {voice.text!r}: transform needs the setting {missing[0]!r}")
        try:
            transform = get_transform(voice.voice)
            source = parse_voice_spec(setting["source"], need_labels=False)
        except (VoiceTransformError, SuiteError) as exc:
            raise SuiteError(f"voice spec {voice.text!r}: {exc}") from exc
        return transform, source, setting["source_group"]

    def check(self, voice: VoiceSpec) -> None:
        super().check(voice)
        transform, source, source_group = self.parts(voice)
        checked_bank(source)
        try:
            target = transform.target_group(source_group)
        except VoiceTransformError as exc:
            raise SuiteError(f"voice spec {voice.text!r}: {exc}") from exc
        declared = voice.label.get(transform.dimension)
        if declared != target:
            raise SuiteError(
                f"voice spec {voice.text!r}: {transform.name} makes a {source_group} voice {target}, but the voice "
                f"declares {transform.dimension}={declared}"
            )

    def recipe_parts(self, voice: VoiceSpec) -> dict:
        transform, source, source_group = self.parts(voice)
        return {
            "voice": voice.sound,
            "synthesiser": transform.fingerprint(transform_settings(transform.name)),
            "source": checked_bank(source).recipe_parts(source),
        }

    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        transform, source, source_group = self.parts(voice)
        samples, rate = checked_bank(source).synthesise(source, text)
        audio = Audio(processed(samples, rate).astype(np.float32), SAMPLE_RATE)
        seed = int(stable_hash({"text": text, "voice": voice.sound})[:12], 16)
        made = transform.resynthesise(audio, source_group, transform_settings(transform.name), seed)
        return np.asarray(made.samples, dtype=np.float64), made.sample_rate


BANK = TransformBank()
