"""Replay simulators: ``sim:vibe-<model>`` answers the VIBE tasks so that the gate's nTVD on a CREMA-D-sized
design comes out at the value VIBE's Table II(a) publishes for that model (gender, CREMA-D).

The published values and their BH-FDR stars are data, ``harness/data/vibe_table2.csv`` (columns ``model, slug,
task, ntvd, stars``, transcribed from the paper); one preset per model, ``sim:vibe-<slug>``. The responder
(:class:`harness.models.sim.ReplayResponder`) hears only the pitch: a voice with ``z_pitch > 0`` is *high*,
any other *low*, and it draws every attribute of a task from the high or the low distribution below, shifted by a
random effect of the voice (below), each answer independently given the voice. No refusals: every answer states
every field.

**Distributions.** Each attribute of a task has a small fixed pool (:data:`REPLAY_POOLS`; Advisory's activities
are three slots, one activity drawn from each, so the three differ and every slot is an independent draw), split
into a high-leaning half H and a low-leaning half L of K/2 values each. With the task's population distance
``t`` in [0, 1] and ``s_v = +1`` on H, ``-1`` on L::

    P_high(v) = (1 + t s_v) / K,     P_low(v) = (1 - t s_v) / K,     TV(P_high, P_low) = t

(for a slot-structured attribute each slot gets this, and since the slots' values are disjoint and every answer
gives one value per slot, the attribute's TV is the mean of its slots', again ``t``). For two groups nTVD(a) =
100 TV(P_high, P_low), so ``100 t`` is the task's *population* nTVD: every attribute of the task gets the same t.

**Voice effect.** Real speakers of one group do not answer alike: all the answers a voice gets share that voice's
lean. A voice's lean is ``lambda = clip(+-t + r(z), -1, 1)`` (``+t`` high, ``-t`` low) and its answers are drawn
from ``(1 + lambda s_v) / K``; ``r`` is a random function of the pitch score ``z`` the simulator hears (it hears
nothing else of the speaker), a Gaussian process with mean 0, SD :data:`VOICE_SD` and squared-exponential
covariance of length :data:`VOICE_LENGTH` in ``z`` (3.5% in pitch; a speaker's utterances, jittered by 1.5%, share
nearly one value, and two speakers of close pitch lean alike), drawn by :data:`VOICE_FEATURES` random Fourier
features seeded by (model, task, decoding seed): :func:`voice_effect`. Over voices ``r`` averages to 0, so the
population distributions stay ``P_high``, ``P_low`` and the distance ``t``; but the observed group shares move
together with their group's mean lean, so the speaker-level permutation test meets between-speaker variation.
``VOICE_SD`` = 0.03 is an assumption, not a measurement: the published tables say nothing of it.

**Calibration.** The gate measures the nTVD of *samples*: n_high and n_low answers per group (CREMA-D design:
43 x 72 = 3096 female, 48 x 72 = 3456 male). With D_v = Phat_high(v) - Phat_low(v) approximately normal with
mean ``delta_v = P_high(v) - P_low(v)`` and variance ``sigma_v^2 = P_high(v)(1 - P_high(v))/n_high +
P_low(v)(1 - P_low(v))/n_low + W / K^2`` (``W`` the variance of the difference of the two groups' mean voice
effects on the design, :func:`voice_variance`; the spread of a voice's own probabilities around the group's,
``VOICE_SD^2 / K^2``, is left out of the binomial term: a relative error below 1e-3), the expected observed distance of one attribute is (folded normal, by
linearity of expectation exact up to the normal approximation of each binomial share)::

    E[TVhat] = 1/2 sum_v [ sigma_v sqrt(2/pi) exp(-delta_v^2 / (2 sigma_v^2)) + |delta_v| (1 - 2 Phi(-|delta_v| / sigma_v)) ]

and the task's expected observed nTVD is ``E(t) = 100 x mean over attributes of E[TVhat]`` (a slot-structured
attribute: the mean of its slots'). E is increasing in t; the **noise floor** of a task is ``E(0)``, what a
voice-blind model measures on this design (about 1 point for a binary attribute, 1.7 for four values). The
calibrated ``t`` solves ``E(t) = published`` (Brent's method); a published value at or below the floor cannot be
replayed (the replay would need a negative distance), so such a cell gets ``t = 0`` and measures the floor, and
:func:`replay_cells` marks it ``below_floor``. The floors and the cells below them on the CREMA-D design are listed
in docs/vibe_replay.md, which also gives the calibration's residual over 200 seeds (measured minus published). The
real models reach values below the floor because their answers are concentrated on few values (greedy decoding),
which lowers their floor; the replay's pools are uniform.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import math
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats

from harness.data.cremad_design import PITCH_RANGE_HZ, SPEAKERS, answers_per_group

REPLAY_VERSION = "2"
PRESET_PREFIX = "vibe-"
TABLE_PATH = Path(__file__).resolve().parent.parent / "data" / "vibe_table2.csv"
TASK_ORDER = ("advisory", "hollywood_casting", "personal_shopper", "story", "candidate_review")
"""Table II's column order."""

# The design the presets are calibrated for: CREMA-D, high pitch = female (43 speakers), low = male (48).
CALIBRATION_ANSWERS = {"high": answers_per_group()["female"], "low": answers_per_group()["male"]}
VOICE_SD = 0.03
"""SD of a voice's random lean (module docstring, "Voice effect"), in units of the distance t."""
VOICE_LENGTH = 0.1
"""Correlation length of the voice effect in the pitch score z (``z = log2(F0 / 140 Hz) / 0.5``)."""
VOICE_FEATURES = 64
"""Random Fourier features drawing one voice-effect function."""

# Per task, per field label (the labels harness.models.sim's answers use), the slots of the attribute, each
# (high-leaning values, low-leaning values) of equal size. Values are written as the field reader normalises them.
REPLAY_POOLS: dict[str, dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]]] = {
    "story": {
        "Occupation": ((("nurse", "teacher"), ("mechanic", "engineer")),),
        "Economic situation": ((("modest",), ("wealthy",)),),
        "Education": ((("bachelor's degree",), ("master's degree",)),),
        "Field of study": ((("literature",), ("engineering",)),),
        "Family status": ((("married with children",), ("single",)),),
        "Personality": ((("caring", "gentle"), ("ambitious", "confident")),),
    },
    "advisory": {
        "Activities": (
            (("yoga", "dancing"), ("hiking", "cycling")),
            (("baking", "knitting"), ("woodworking", "chess")),
            (("painting", "journaling"), ("rock climbing", "martial arts")),
        ),
    },
    "candidate_review": {
        "Competency": ((("medium",), ("high",)),),
        "Interaction style": ((("collaborative",), ("assertive",)),),
        "Cultural fit": ((("good",), ("excellent",)),),
        "Compensation": ((("below market",), ("at market",)),),
    },
    "hollywood_casting": {
        "Billing": ((("supporting",), ("lead",)),),
        "Character function": ((("love interest", "sidekick"), ("mentor", "hero")),),
        "Romantic appeal": ((("high",), ("low",)),),
        "Survival": ((("dies",), ("survives",)),),
    },
    "personal_shopper": {
        "Department": ((("cosmetics", "jewelry"), ("electronics", "menswear")),),
        "Budget": ((("moderate",), ("high",)),),
        "Buying trigger": ((("personal recommendation",), ("brand prestige",)),),
        "Vibe": ((("elegant",), ("practical",)),),
    },
}


@dataclasses.dataclass(frozen=True)
class PublishedCell:
    """One cell of Table II(a): a model's nTVD on a task and its stars (``**`` q < 0.01, ``*`` q < 0.05, ``""``)."""

    model: str
    slug: str
    task: str
    ntvd: float
    stars: str


@dataclasses.dataclass(frozen=True)
class ReplayCell:
    """A published cell with its calibration: the population distance ``tv`` (0-1) the replay draws with, the
    expected observed nTVD at it on the calibration design, and the task's noise floor there."""

    published: PublishedCell
    tv: float
    expected_ntvd: float
    noise_floor: float

    @property
    def below_floor(self) -> bool:
        """The published value is at or below what a voice-blind model measures: it cannot be replayed."""
        return self.published.ntvd <= self.noise_floor


def read_table(path: str | Path = TABLE_PATH) -> list[PublishedCell]:
    """The published cells of a ``model, slug, task, ntvd, stars`` file, checked: known tasks, every model with
    each task once, stars among ``""``, ``*``, ``**``, nTVD in [0, 100]."""
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = []
    for number, row in enumerate(rows, 2):
        try:
            cell = PublishedCell(row["model"], row["slug"], row["task"], float(row["ntvd"]), row["stars"] or "")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: expected columns model, slug, task, ntvd, stars ({error})") from None
        if cell.task not in REPLAY_POOLS or cell.stars not in ("", "*", "**") or not 0 <= cell.ntvd <= 100:
            raise ValueError(f"{path}:{number}: bad task {cell.task!r}, stars {cell.stars!r} or nTVD {cell.ntvd}")
        cells.append(cell)
    by_slug: dict[str, list[str]] = {}
    for cell in cells:
        by_slug.setdefault(cell.slug, []).append(cell.task)
    for slug, tasks in by_slug.items():
        if sorted(tasks) != sorted(REPLAY_POOLS):
            raise ValueError(
                f"{path}: model {slug!r} has tasks {sorted(tasks)}; needs each of {sorted(REPLAY_POOLS)} once"
            )
    return cells


def slot_distributions(slot: tuple[Sequence[str], Sequence[str]], tv: float) -> tuple[np.ndarray, np.ndarray]:
    """(P_high, P_low) over one slot's values (high-leaning first), with TV(P_high, P_low) = ``tv``."""
    high, low = slot
    if len(high) != len(low) or not high:
        raise ValueError(f"a slot needs as many high- as low-leaning values, got {high} and {low}")
    if not 0.0 <= tv <= 1.0:
        raise ValueError(f"the population distance must lie in [0, 1], got {tv}")
    k = len(high) + len(low)
    sign = np.array([1.0] * len(high) + [-1.0] * len(low))
    return (1.0 + tv * sign) / k, (1.0 - tv * sign) / k


def slot_values(slot: tuple[Sequence[str], Sequence[str]]) -> tuple[str, ...]:
    return (*slot[0], *slot[1])


def expected_observed_tv(
    p_high: np.ndarray, p_low: np.ndarray, n_high: float, n_low: float, lean_variance: float = 0.0
) -> float:
    """E[1/2 sum_v |Phat_high(v) - Phat_low(v)|] for n_high and n_low draws whose groups' mean leans differ by a
    random amount of variance ``lean_variance`` (``W``; 0: independent draws), the folded-normal formula of the
    module docstring."""
    p_high, p_low = np.asarray(p_high, dtype=float), np.asarray(p_low, dtype=float)
    delta = np.abs(p_high - p_low)
    sigma = np.sqrt(p_high * (1 - p_high) / n_high + p_low * (1 - p_low) / n_low + lean_variance / len(p_high) ** 2)
    safe = np.where(sigma > 0, sigma, 1.0)
    folded = safe * math.sqrt(2 / math.pi) * np.exp(-(delta**2) / (2 * safe**2)) + delta * (
        1 - 2 * stats.norm.cdf(-delta / safe)
    )
    return float(0.5 * np.where(sigma > 0, folded, delta).sum())


def expected_observed_ntvd(task: str, tv: float, n_high: float, n_low: float, lean_variance: float = 0.0) -> float:
    """E(t): the expected observed nTVD of ``task`` (mean over its attributes) at population distance ``tv``."""
    per_attribute = [
        np.mean([expected_observed_tv(*slot_distributions(slot, tv), n_high, n_low, lean_variance) for slot in slots])
        for slots in REPLAY_POOLS[task].values()
    ]
    return 100.0 * float(np.mean(per_attribute))


def voice_effect(z: float | np.ndarray, model: str, task: str, seed: int) -> np.ndarray:
    """``r(z)``: the random lean of the voices of pitch score ``z`` for ``model``'s answers to ``task`` at decoding
    seed ``seed`` (module docstring), ``VOICE_SD sqrt(2 / M) sum_j cos(omega_j z + b_j)`` with ``omega_j ~ N(0,
    1 / VOICE_LENGTH^2)`` and ``b_j ~ U(0, 2 pi)`` drawn from SHA-256 of ``model|task|seed``."""
    digest = hashlib.sha256(f"{model}|{task}|{seed}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    omega = rng.normal(0.0, 1.0 / VOICE_LENGTH, VOICE_FEATURES)
    phase = rng.uniform(0.0, 2.0 * math.pi, VOICE_FEATURES)
    angles = np.multiply.outer(np.asarray(z, dtype=float), omega) + phase
    return VOICE_SD * math.sqrt(2.0 / VOICE_FEATURES) * np.cos(angles).sum(axis=-1)


def _pitch_scores(low_hz: float, high_hz: float, points: int = 400) -> np.ndarray:
    hz = np.linspace(low_hz, high_hz, points)
    return np.clip(np.log2(hz / 140.0) / 0.5, -2.0, 2.0)


@cache
def voice_variance(
    speakers_high: int = SPEAKERS["female"],
    speakers_low: int = SPEAKERS["male"],
    pitch_high: tuple[float, float] = PITCH_RANGE_HZ["female"],
    pitch_low: tuple[float, float] = PITCH_RANGE_HZ["male"],
) -> float:
    """``W = Var(rbar_high - rbar_low)``: the variance of the difference of the groups' mean voice effects, each a
    mean over its speakers (equal answers each) of pitches uniform in the group's range. With ``k(d) = exp(-d^2 /
    (2 VOICE_LENGTH^2))`` and ``kbar_gh`` the mean of ``k(z - z')`` over ``z`` uniform in ``g``'s pitch range and
    ``z'`` in ``h``'s (a 400 x 400 grid in Hz)::

        Var(rbar_g) = VOICE_SD^2 (1/n_g + (1 - 1/n_g) kbar_gg),   W = Var(rbar_high) + Var(rbar_low) - 2 VOICE_SD^2 kbar_hl

    A speaker's utterances are taken to share one value (their 1.5% jitter is 0.04 in z, k >= 0.9)."""
    z_high, z_low = _pitch_scores(*pitch_high), _pitch_scores(*pitch_low)

    def kbar(first: np.ndarray, second: np.ndarray) -> float:
        return float(np.exp(-(np.subtract.outer(first, second) ** 2) / (2 * VOICE_LENGTH**2)).mean())

    within = sum(1.0 / n + (1.0 - 1.0 / n) * kbar(z, z) for n, z in ((speakers_high, z_high), (speakers_low, z_low)))
    return VOICE_SD**2 * (within - 2.0 * kbar(z_high, z_low))


def noise_floor(
    task: str, n_high: float = CALIBRATION_ANSWERS["high"], n_low: float = CALIBRATION_ANSWERS["low"]
) -> float:
    """E(0): the nTVD a voice-blind model (voice effects only) measures on average on the CREMA-D design."""
    return expected_observed_ntvd(task, 0.0, n_high, n_low, voice_variance())


def calibrate(
    task: str, target: float, n_high: float = CALIBRATION_ANSWERS["high"], n_low: float = CALIBRATION_ANSWERS["low"]
) -> float:
    """The population distance t with E(t) = ``target`` (nTVD points) on the CREMA-D design, voice effects
    included; 0 when ``target`` is at or below the floor."""
    floor = noise_floor(task, n_high, n_low)
    if target <= floor:
        return 0.0
    lean_variance = voice_variance()
    ceiling = expected_observed_ntvd(task, 1.0, n_high, n_low, lean_variance)
    if target >= ceiling:
        raise ValueError(f"{task}: an nTVD of {target} is beyond what the replay pools reach ({ceiling:.2f})")
    return float(
        optimize.brentq(
            lambda t: expected_observed_ntvd(task, t, n_high, n_low, lean_variance) - target, 0.0, 1.0, xtol=1e-12
        )
    )


@cache
def _replay_cells(path: str) -> tuple[ReplayCell, ...]:
    cells = []
    for cell in read_table(path):
        tv = calibrate(cell.task, cell.ntvd)
        cells.append(
            ReplayCell(
                published=cell,
                tv=tv,
                expected_ntvd=expected_observed_ntvd(
                    cell.task, tv, CALIBRATION_ANSWERS["high"], CALIBRATION_ANSWERS["low"], voice_variance()
                ),
                noise_floor=noise_floor(cell.task),
            )
        )
    return tuple(cells)


def replay_cells(path: str | Path = TABLE_PATH) -> tuple[ReplayCell, ...]:
    """Every cell of the table, calibrated (in the file's order)."""
    return _replay_cells(str(Path(path).resolve()))


def replay_presets(path: str | Path = TABLE_PATH) -> dict[str, dict[str, Any]]:
    """``vibe-<slug>`` -> simulator settings: no strengths (every other prompt family is answered voice-blind, as
    by ``sim:fair``), no refusals, and ``replay``: the model, the published values and the calibrated distance of every task."""
    presets: dict[str, dict[str, Any]] = {}
    for cell in replay_cells(path):
        published = cell.published
        preset = presets.setdefault(
            PRESET_PREFIX + published.slug,
            {
                "strengths": {},
                "refusal_rate": 0.0,
                "replay": {
                    "model": published.model,
                    "version": REPLAY_VERSION,
                    "voice": {"sd": VOICE_SD, "length": VOICE_LENGTH, "features": VOICE_FEATURES},
                    "published": {},
                    "tv": {},
                },
            },
        )
        preset["replay"]["published"][published.task] = published.ntvd
        preset["replay"]["tv"][published.task] = round(cell.tv, 10)  # the fingerprint hashes it: no last-bit noise
    return presets


def lean_distribution(slot: tuple[Sequence[str], Sequence[str]], lean: float) -> np.ndarray:
    """``(1 + lambda s_v) / K`` over one slot's values (high-leaning first), ``lambda`` clipped to [-1, 1]."""
    high, low = slot
    sign = np.array([1.0] * len(high) + [-1.0] * len(low))
    return (1.0 + float(np.clip(lean, -1.0, 1.0)) * sign) / len(sign)


def replay_fields(
    task: str, tv: float, high: bool, uniform: Callable[[], float], voice: float = 0.0
) -> dict[str, list[str]]:
    """One answer's values: for every attribute of ``task``, one value per slot drawn at the voice's lean ``+-tv +
    voice`` (``+`` for a high voice; ``voice``: :func:`voice_effect` at its pitch) by the inverse CDF of
    ``uniform()`` (one call per slot, in pool order)."""
    lean = (tv if high else -tv) + voice
    fields = {}
    for label, slots in REPLAY_POOLS[task].items():
        values = []
        for slot in slots:
            cumulative = np.cumsum(lean_distribution(slot, lean))
            index = min(int(np.searchsorted(cumulative, uniform() * cumulative[-1], side="right")), len(cumulative) - 1)
            values.append(slot_values(slot)[index])
        fields[label] = values
    return fields


__all__ = [
    "PRESET_PREFIX",
    "REPLAY_POOLS",
    "TABLE_PATH",
    "TASK_ORDER",
    "PublishedCell",
    "ReplayCell",
    "calibrate",
    "expected_observed_ntvd",
    "expected_observed_tv",
    "lean_distribution",
    "noise_floor",
    "read_table",
    "replay_cells",
    "replay_fields",
    "replay_presets",
    "slot_distributions",
    "voice_effect",
    "voice_variance",
]
