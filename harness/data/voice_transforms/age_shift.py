"""``age_shift``: the recording moved toward an older or a younger voice by WORLD analysis, modification and
resynthesis (Morise, Yokomori & Ozawa 2016, "WORLD: a vocoder-based high-quality speech synthesis system for
real-time applications", IEICE Trans. Inf. & Syst. E99-D(7); the ``pyworld-prebuilt`` wheel), and its control
``world_identity``, the same WORLD resynthesis with every factor 1.0.

WORLD splits a recording into an F0 contour (DIO refined by StoneMask), a spectral envelope (CheapTrick) and a
band aperiodicity (D4C) on 5 ms frames; the arm changes them and resynthesises:

* **F0 level and range**, in the log domain around the recording's median voiced log F0 ``m``:
  ``log f0' = m + log(level) + range * (log f0 - m)``. The level's direction with age depends on the voice's
  register: women's speaking F0 falls in old age while men's falls to middle age and rises in old age (Linville
  2001, *Vocal Aging*; Hollien & Shipp 1972, "Speaking fundamental frequency and chronologic age in males", JSHR
  15), so a recording whose median F0 lies below ``age_register_boundary_hz`` (voice:praat's man/woman boundary,
  160 Hz) gets ``older_f0_factor_low_register`` and one above it ``older_f0_factor_high_register``; the younger
  arm gets the reciprocal factor of its register.
* **Vocal tract length**, a frequency warp of the spectral envelope: ``sp'(f) = sp(f / alpha)``, which multiplies
  every formant by ``alpha`` (``older_formant_factor`` < 1: a longer vocal tract, formants lowered with age; Xue &
  Hao 2003, "Changes in the human vocal tract due to aging and the acoustic correlates of speech production",
  JSLHR 46; the younger arm gets its reciprocal).
* **Older arm only**: jitter, an independent Gaussian perturbation of log F0 per frame with standard deviation
  ``older_jitter`` (higher jitter in older voices: Ramig & Ringel 1983, "Effects of physiological aging on
  selected acoustic characteristics of voice", JSHR 26); tremor, a sinusoidal F0 modulation
  ``f0 * (1 + depth * sin(2 pi rate t + phase))`` at ``older_tremor_hz`` with ``older_tremor_depth`` (vocal
  tremor as a feature of aged voices: Linville 2001); breathiness, the aperiodicity of voiced frames raised
  toward 1, ``ap' = ap + breathiness * (1 - ap)`` (greater breathiness with age: Linville 2001).

The sizes are the team's choices within those directions (thresholds.yaml ``counterfactual``); the sources give
directions, not these figures. The arm's length equals the recording's (cut or zero-padded by at most a frame).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from harness.core.requests import Audio
from harness.core.values import stable_hash
from harness.data.voice_transforms import VoiceTransform, VoiceTransformError, float_fields

RESYNTHESISER = "pyworld-prebuilt"
"""The distribution whose version enters every WORLD arm's recipe and record."""
FRAME_PERIOD_MS = 5.0
OTHER_AGE = {"young": "elderly", "elderly": "young"}
"""Source age group -> the group its arm moves toward; a young speaker gets the older arm, an elderly one the
younger arm."""
OLDER, YOUNGER = "older", "younger"
ARM_OF_TARGET = {"elderly": OLDER, "young": YOUNGER}


@dataclasses.dataclass(frozen=True)
class AgeShiftSettings:
    """The WORLD arms' settings (thresholds.yaml ``counterfactual``, where their sources are stated): the pitch
    tracker's range, the register boundary, each arm's F0 level, F0 range and formant factors, and the older arm's
    jitter, tremor and breathiness."""

    pitch_floor_hz: float
    pitch_ceiling_hz: float
    age_register_boundary_hz: float
    older_f0_factor_low_register: float
    older_f0_factor_high_register: float
    older_f0_range_factor: float
    younger_f0_range_factor: float
    older_formant_factor: float
    older_jitter: float
    older_tremor_hz: float
    older_tremor_depth: float
    older_breathiness: float

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> AgeShiftSettings:
        """The fields from a merged ``counterfactual`` thresholds case; a missing key is an error naming it."""
        return float_fields(cls, settings, "age_shift")


@dataclasses.dataclass(frozen=True)
class WorldChange:
    """One arm's change of the WORLD parameters (every field at its neutral value: the identity control)."""

    f0_factor: float = 1.0
    f0_range_factor: float = 1.0
    formant_factor: float = 1.0
    jitter: float = 0.0
    tremor_hz: float = 0.0
    tremor_depth: float = 0.0
    breathiness: float = 0.0


def arm_change(arm: str, median_f0_hz: float, settings: AgeShiftSettings) -> WorldChange:
    """The change of the ``older`` or ``younger`` arm for a recording of ``median_f0_hz`` (its register picks the F0
    factor; the younger arm takes the reciprocal F0 and formant factors and no jitter, tremor or breathiness)."""
    low = median_f0_hz < settings.age_register_boundary_hz
    older_f0 = settings.older_f0_factor_low_register if low else settings.older_f0_factor_high_register
    if arm == OLDER:
        return WorldChange(
            f0_factor=older_f0,
            f0_range_factor=settings.older_f0_range_factor,
            formant_factor=settings.older_formant_factor,
            jitter=settings.older_jitter,
            tremor_hz=settings.older_tremor_hz,
            tremor_depth=settings.older_tremor_depth,
            breathiness=settings.older_breathiness,
        )
    if arm == YOUNGER:
        return WorldChange(
            f0_factor=1.0 / older_f0,
            f0_range_factor=settings.younger_f0_range_factor,
            formant_factor=1.0 / settings.older_formant_factor,
        )
    raise VoiceTransformError(f"age_shift: unknown arm {arm!r}; known: {OLDER}, {YOUNGER}")


def _pyworld():
    try:
        import pyworld
    except ImportError as exc:
        raise VoiceTransformError(
            f"the WORLD age arms need {RESYNTHESISER} ({exc}); install it: pip install 'lalm-fairness[demo]'"
        ) from exc
    return pyworld


def world_analysis(samples: np.ndarray, rate: int, floor_hz: float, ceiling_hz: float):
    """WORLD's F0 contour (DIO + StoneMask), frame times, spectral envelope (CheapTrick) and aperiodicity (D4C)."""
    pyworld = _pyworld()
    x = np.ascontiguousarray(samples, dtype=np.float64)
    f0, times = pyworld.dio(x, rate, f0_floor=floor_hz, f0_ceil=ceiling_hz, frame_period=FRAME_PERIOD_MS)
    f0 = pyworld.stonemask(x, f0, times, rate)
    envelope = pyworld.cheaptrick(x, f0, times, rate, f0_floor=floor_hz)
    aperiodicity = pyworld.d4c(x, f0, times, rate)
    return f0, times, envelope, aperiodicity


def world_resynthesise(
    audio: Audio, change_for: Callable[[float], WorldChange], settings: AgeShiftSettings, seed: int
) -> Audio:
    """``audio`` analysed by WORLD, changed by ``change_for(its median voiced F0)`` (the module's formulas) and
    resynthesised, as float32 at its sample rate and of its length; jitter and tremor phase are drawn from
    ``seed``."""
    pyworld = _pyworld()
    samples = np.asarray(audio.samples, dtype=np.float64)
    if samples.size < audio.sample_rate * FRAME_PERIOD_MS / 1000 * 4:
        raise VoiceTransformError(f"age_shift: a {audio.duration_s:.3f} s clip is too short for WORLD")
    f0, times, envelope, aperiodicity = world_analysis(
        samples, audio.sample_rate, settings.pitch_floor_hz, settings.pitch_ceiling_hz
    )
    voiced = f0 > 0
    change = change_for(float(np.median(f0[voiced])) if voiced.any() else 0.0)
    changed_f0 = f0.copy()
    if voiced.any():
        generator = np.random.default_rng(seed)
        log_f0 = np.log(f0[voiced])
        centre = float(np.median(log_f0))
        log_f0 = centre + np.log(change.f0_factor) + change.f0_range_factor * (log_f0 - centre)
        log_f0 += change.jitter * generator.standard_normal(log_f0.size)
        phase = generator.uniform(0.0, 2 * np.pi)
        log_f0 += np.log1p(change.tremor_depth * np.sin(2 * np.pi * change.tremor_hz * times[voiced] + phase))
        changed_f0[voiced] = np.exp(log_f0)
    if change.formant_factor != 1.0:
        bins = np.arange(envelope.shape[1], dtype=np.float64)
        source_bins = bins / change.formant_factor
        envelope = np.stack([np.interp(source_bins, bins, frame) for frame in envelope])
    if change.breathiness:
        aperiodicity = aperiodicity.copy()
        aperiodicity[voiced] += change.breathiness * (1.0 - aperiodicity[voiced])
    made = pyworld.synthesize(
        changed_f0,
        np.ascontiguousarray(envelope),
        np.ascontiguousarray(aperiodicity),
        audio.sample_rate,
        FRAME_PERIOD_MS,
    )
    made = made[: samples.size] if made.size >= samples.size else np.pad(made, (0, samples.size - made.size))
    return Audio(made.astype(np.float32), audio.sample_rate)


def world_version() -> str | None:
    """The installed pyworld-prebuilt's version, None without it."""
    try:
        return importlib.metadata.version(RESYNTHESISER)
    except importlib.metadata.PackageNotFoundError:
        return None


class WorldTransform(VoiceTransform):
    """A transform resynthesised by WORLD: its settings are :class:`AgeShiftSettings`, its recipe and record name
    pyworld-prebuilt's version instead of praat-parselmouth's."""

    dimension = "age"
    version = 1
    settings_type = AgeShiftSettings
    control = "world_identity"
    """The transform whose arm is this one's control."""

    def fingerprint(self, settings: AgeShiftSettings) -> str:
        """``name + ":" + stable_hash({name, version, settings, resynthesiser, source})``, the resynthesiser being
        ``pyworld-prebuilt <version>`` and ``source`` the code's :meth:`source_hash`."""
        identity = {
            "name": self.name,
            "version": self.version,
            "settings": dataclasses.asdict(settings),
            "resynthesiser": self.resynthesiser_version(),
            "source": self.source_hash(),
        }
        return f"{self.name}:" + stable_hash(identity)

    @staticmethod
    def resynthesiser_version() -> str:
        return f"{RESYNTHESISER} {world_version()}"


class WorldIdentityTransform(WorldTransform):
    """``world_identity``: WORLD analysis and resynthesis with every factor 1.0, the age arms' control."""

    name = "world_identity"

    def target_group(self, source_group: str) -> str:
        return source_group

    def resynthesise(self, audio: Audio, source_group: str, settings: AgeShiftSettings, seed: int) -> Audio:
        return world_resynthesise(audio, lambda _median_f0: WorldChange(), settings, seed)

    def planned_change(self, audio: Audio, source_group: str, settings: AgeShiftSettings) -> WorldChange:
        """What the arm is meant to change (nothing): the manipulation checks' reference."""
        return WorldChange()


class AgeShiftTransform(WorldTransform):
    """``age_shift``: a ``young`` speaker's recording gets the older arm, an ``elderly`` one's the younger arm."""

    name = "age_shift"

    def target_group(self, source_group: str) -> str:
        if source_group not in OTHER_AGE:
            raise VoiceTransformError(
                f"age_shift: cannot shift age group {source_group!r}; it knows {sorted(OTHER_AGE)}"
            )
        return OTHER_AGE[source_group]

    def resynthesise(self, audio: Audio, source_group: str, settings: AgeShiftSettings, seed: int) -> Audio:
        arm = ARM_OF_TARGET[self.target_group(source_group)]
        return world_resynthesise(audio, lambda median_f0: arm_change(arm, median_f0, settings), settings, seed)

    def planned_change(self, audio: Audio, source_group: str, settings: AgeShiftSettings) -> WorldChange:
        """What the arm of a ``source_group`` recording is meant to change (its F0 factor by the register WORLD
        finds, as :meth:`resynthesise` chooses it): the manipulation checks' intended directions."""
        arm = ARM_OF_TARGET[self.target_group(source_group)]
        f0 = world_analysis(audio.samples, audio.sample_rate, settings.pitch_floor_hz, settings.pitch_ceiling_hz)[0]
        return arm_change(arm, float(np.median(f0[f0 > 0])) if (f0 > 0).any() else 0.0, settings)


TRANSFORM = AgeShiftTransform()
IDENTITY = WorldIdentityTransform()
