"""Voice transforms: the same recording in another voice, for the counterfactual check (issue 39).

A transform maps one recording of a speaker of ``source_group`` to an arm's audio and names the group the arm
should be perceived as (:meth:`VoiceTransform.target_group`). :data:`VOICE_TRANSFORMS` registers them by name
(lazily, :mod:`harness.registry`; the entry-point group ``lalm_fairness.voice_transforms`` adds more, e.g. a neural
voice conversion on a GPU runner, as one file ``name = "package.module:TRANSFORM"``):

* ``identity``: the recording resynthesised unchanged through Praat's "Change gender" (formant shift ratio 1,
  new pitch median 0 = keep, pitch range factor 1, duration factor 1), the control arm: whatever the
  resynthesis does to the audio, and nothing else (:mod:`.identity`);
* ``gender_swap``: the recording moved toward the other gender's typical voice by the same command, with a
  formant shift ratio and a new pitch median per direction (:mod:`.gender_swap`);
* ``age_shift``: the recording moved toward an older or a younger voice by WORLD (F0 level and range, a vocal tract
  length warp, and for the older arm jitter, tremor and breathiness), with its own control ``world_identity``, the
  WORLD resynthesis at every factor 1.0 (:mod:`.age_shift`);
* ``gender_sham`` and ``age_sham``: the swap's size of change inside the source group, the sham arms
  (:mod:`.sham`, issue 58): a transform's artefacts apart from the group cue.

The settings come from the ``counterfactual`` section of thresholds.yaml (:class:`ChangeGenderSettings`, or the
transform's own ``settings_type``: :func:`settings_of`), so that a run records
the transform it used. An arm's recipe (:meth:`VoiceTransform.fingerprint`) names the transform's code too
(:meth:`VoiceTransform.source_hash`), so that answers to arms made by other code are not found.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import inspect
from collections.abc import Mapping
from typing import Any

from harness.core.requests import Audio
from harness.core.values import module_source, stable_hash
from harness.registry import Registry

VOICE_TRANSFORMS = Registry(
    "voice transform",
    "voice_transforms",
    {
        "identity": "harness.data.voice_transforms.identity:TRANSFORM",
        "gender_swap": "harness.data.voice_transforms.gender_swap:TRANSFORM",
        "age_shift": "harness.data.voice_transforms.age_shift:TRANSFORM",
        "world_identity": "harness.data.voice_transforms.age_shift:IDENTITY",
        "gender_sham": "harness.data.voice_transforms.sham:GENDER_SHAM",
        "age_sham": "harness.data.voice_transforms.sham:AGE_SHAM",
    },
)
"""Transform name -> its module's ``TRANSFORM`` (a :class:`VoiceTransform`)."""

RECIPES_WITHOUT_SOURCE_HASH = {
    "identity": "d04543930f3da982",
    "gender_swap": "ae20f80e8165c97f",
}
"""Transform name -> the source hash (:meth:`VoiceTransform.source_hash`) of the code whose arms keep the recipe
they had before recipes named their code: the code of the commit that made recipes name it, whose arms equal those
of version 2 as of commit 7f28323 (same recipe, seed and samples on every recording of the demo corpus, checked when
it was made), by which the arms of both shipped demo exports (harness/data/demo_outputs/) were made and keyed. So
the shipped answers stay found, while an arm made by any other code has the code's hash in its recipe and the
answers to older arms are not found. A migration of keys already made, never to be updated: exports rebuilt with
other code are keyed by recipes that name it."""


class VoiceTransformError(ValueError):
    """A transform cannot be applied: a group it does not know, or audio Praat cannot resynthesise."""


@dataclasses.dataclass(frozen=True)
class ChangeGenderSettings:
    """The arguments of Praat's "Change gender" per swap direction, and the pitch tracker's range.

    ``*_formant_ratio`` multiplies every formant (the vocal tract's length, by resampling), ``*_pitch_hz`` is the
    new median F0 (PSOLA); the sources of the defaults are given in thresholds.yaml's ``counterfactual`` section."""

    pitch_floor_hz: float
    pitch_ceiling_hz: float
    male_to_female_formant_ratio: float
    male_to_female_pitch_hz: float
    female_to_male_formant_ratio: float
    female_to_male_pitch_hz: float

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ChangeGenderSettings:
        """The fields from a merged ``counterfactual`` thresholds case; a missing key is an error naming it."""
        return float_fields(cls, settings, "voice transform")


def float_fields(settings_class: type, settings: Mapping[str, Any], what: str) -> Any:
    """``settings_class`` (a dataclass of float fields) from the keys of a merged ``counterfactual`` thresholds case
    that name its fields; a missing key is a :class:`VoiceTransformError` naming it and every field needed."""
    names = [field.name for field in dataclasses.fields(settings_class)]
    missing = [name for name in names if name not in settings]
    if missing:
        raise VoiceTransformError(f"{what} settings lack {missing}; needs {names}")
    return settings_class(**{name: float(settings[name]) for name in names})


class VoiceTransform(abc.ABC):
    """One arm of the counterfactual check: ``apply`` returns the arm's audio, ``target_group`` its intended group."""

    name: str
    dimension: str
    """The corpus dimension whose groups the transform knows (``gender``)."""
    version: int = 2
    """2: Praat's random draws seeded from the recipe (version 1 clips differed from run to run)."""
    source_modules: tuple[str, ...] = ()
    """The modules, besides the one that defines the transform, whose code makes its audio (a shared
    resynthesiser such as :mod:`._praat`): their source enters the recipe (:meth:`source_hash`)."""

    @abc.abstractmethod
    def target_group(self, source_group: str) -> str:
        """The group the arm of a ``source_group`` speaker should be perceived as."""

    @abc.abstractmethod
    def resynthesise(self, audio: Audio, source_group: str, settings: ChangeGenderSettings, seed: int) -> Audio:
        """The arm's audio, at ``audio``'s sample rate (what :meth:`apply` returns); a transform that draws random
        numbers draws them from ``seed``, so that one recipe makes one clip."""

    def apply(self, audio: Audio, source_group: str, settings: ChangeGenderSettings) -> Audio:
        """The arm's audio, identified by its recipe (:attr:`Audio.recipe`) and resynthesised with a seed derived
        from it; its source recorded for :func:`source_recording`."""
        recipe = f"{audio.content_hash}|{source_group}|{self.fingerprint(settings)}"
        made = self.resynthesise(audio, source_group, settings, seed=int(stable_hash(recipe)[:12], 16))
        arm = Audio(made.samples, made.sample_rate, recipe=recipe)
        _remember_source(arm, audio)
        return arm

    def fingerprint(self, settings: ChangeGenderSettings) -> str:
        """Identifies the transform's output for the output cache (the arm's :attr:`Audio.recipe`):
        ``name + ":" + stable_hash({name, version, settings, resynthesiser, source})`` with the resynthesiser's
        version (praat-parselmouth) and the code's :meth:`source_hash` as ``source``; ``source`` is left out for the
        code of :data:`RECIPES_WITHOUT_SOURCE_HASH` (the shipped exports' arms), whose recipes were made so."""
        identity = {
            "name": self.name,
            "version": self.version,
            "settings": dataclasses.asdict(settings),
            "resynthesiser": _resynthesiser_version(),
        }
        source = self.source_hash()
        if RECIPES_WITHOUT_SOURCE_HASH.get(self.name) != source:
            identity["source"] = source
        return f"{self.name}:" + stable_hash(identity)

    def source_hash(self) -> str:
        """Identifies the code that makes the arm: ``stable_hash([source of VoiceTransform, source of the module
        that defines the transform, source of each of source_modules])[:16]`` (16 hex digits of the SHA-256). The
        base class's source is its own (its ``apply`` names the recipe and draws the seed from it), not its module's,
        so that registering another transform here changes no arm's recipe."""
        return _source_hash(type(self))


@functools.cache
def _source_hash(transform: type[VoiceTransform]) -> str:
    modules = dict.fromkeys((transform.__module__, *transform.source_modules))
    try:
        sources = [inspect.getsource(VoiceTransform), *(module_source(module) for module in modules)]
    except (OSError, ImportError, ValueError) as exc:
        raise VoiceTransformError(
            f"voice transform {transform.name!r}: its code cannot be read to name it in the recipe ({exc})"
        ) from exc
    return stable_hash(sources)[:16]


def resynthesiser_version() -> str | None:
    """The installed praat-parselmouth's version (the resynthesiser every built-in transform runs), None without it:
    it enters every arm's recipe and every counterfactual record."""
    return _resynthesiser_version()


def _resynthesiser_version() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("praat-parselmouth")
    except importlib.metadata.PackageNotFoundError:
        return None


_SOURCES: dict[str, str] = {}
_SOURCES_KEPT = 100_000


def _remember_source(arm: Audio, source: Audio) -> None:
    if len(_SOURCES) >= _SOURCES_KEPT:
        _SOURCES.clear()
    _SOURCES[arm.content_hash] = _SOURCES.get(source.content_hash, source.content_hash)


def source_recording(audio: Audio) -> str | None:
    """The content hash of the recording ``audio`` was transformed from in this process (None for a recording no
    transform made): a transform changes the voice, not the words, so whoever knows what a recording says (the
    simulators' ears for words, :class:`harness.models.sim_known_content.KnownContent`) knows its arms too."""
    return _SOURCES.get(audio.content_hash)


def settings_of(transform: VoiceTransform, settings: Mapping[str, Any]) -> Any:
    """The transform's settings from a merged ``counterfactual`` thresholds case: its ``settings_type``
    (:class:`ChangeGenderSettings` for Praat's transforms) read by ``from_settings``."""
    return getattr(transform, "settings_type", ChangeGenderSettings).from_settings(settings)


def control_of(transform: VoiceTransform) -> str:
    """The name of the transform whose arm is ``transform``'s control: its ``control``, else ``identity`` (Praat's
    resynthesis unchanged, the gender swap's control)."""
    return getattr(transform, "control", "identity")


SHAMS = {"gender_swap": "gender_sham", "age_shift": "age_sham"}
"""Swap transform -> the transform of its sham arm (:mod:`.sham`); a registered transform may name its own
(``sham``)."""


def sham_of(transform: VoiceTransform) -> str | None:
    """The name of the transform of ``transform``'s sham arm: its ``sham``, else :data:`SHAMS`'s; None for a
    transform that states none (its cases are then judged against the identity arm alone, as a deviation)."""
    return getattr(transform, "sham", None) or SHAMS.get(transform.name)


def resynthesiser_of(transform: VoiceTransform) -> str | None:
    """What resynthesises ``transform``'s arms, for its record: its own ``resynthesiser_version()`` (WORLD's
    ``pyworld-prebuilt <version>``), else praat-parselmouth's version (:func:`resynthesiser_version`)."""
    own = getattr(transform, "resynthesiser_version", None)
    return own() if own is not None else resynthesiser_version()


def get_transform(name: str) -> VoiceTransform:
    """The registered transform ``name``; an unknown name is an error listing the known ones."""
    if name not in VOICE_TRANSFORMS:
        raise VoiceTransformError(VOICE_TRANSFORMS.unknown(name))
    return VOICE_TRANSFORMS.load(name)


__all__ = [
    "VOICE_TRANSFORMS",
    "ChangeGenderSettings",
    "VoiceTransform",
    "VoiceTransformError",
    "control_of",
    "get_transform",
    "resynthesiser_of",
    "resynthesiser_version",
    "settings_of",
    "sham_of",
    "source_recording",
]
