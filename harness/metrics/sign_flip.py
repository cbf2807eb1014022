"""The counterfactual paired permutation test (:mod:`harness.metrics.counterfactual`'s module docstring): a
speaker's two arms swapped together, each speaker independently, with its design floor and sensitivity.

Where the ``2^S`` swap patterns of the S speakers whose arms differ number at most B (``n_permutations``), every
pattern is enumerated once and ``p = #{patterns : T >= T_observed} / 2^S`` is exact (issue 57: with 12 speakers,
4,096 patterns, Monte Carlo draws of B = 10,000 would decide at the floor by chance). A speaker whose arms have the
same sums does not move the statistic, so leaving it out of the enumeration changes no pattern's value.

The test's sensitivity is the design's, not the draw's (issue 57: a case is powered in every seed or unmeasured
by design in every seed). Under an effect at the bar every speaker of a direction moves, so the detectable effect
counts the design's speakers per block (``design_units``), whatever share of them happened to move under the
null: with the demo's 13 and 14 speakers per ASR swap direction, 8 to 14 moved in ten ``sim:fair`` seeds, and
counting only those made the case flicker between powered and unreachable. The p-value stays the exact one over the
speakers that moved.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import numpy as np

from harness.metrics.detectable import NullSensitivity
from harness.metrics.permutation_floor import SIGN_FLIP, PermutationFloor

Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(B, k) first-arm sums, (B, k) second-arm sums -> (B,) non-negative effect sizes."""

MAX_ENUMERATED = 2**16
"""The most swap patterns enumerated at once (memory: B x k sums)."""


@dataclasses.dataclass(frozen=True)
class PairedPermutationResult:
    observed: float
    p_value: float
    n_permutations: int
    seed: int
    null: np.ndarray = dataclasses.field(repr=False)
    floor: PermutationFloor | None = None
    """The smallest p the design can give (module docstring)."""
    exact: bool = False
    """Whether every swap pattern was enumerated once (``n_permutations`` then counts them)."""
    design_units: tuple[int, ...] = ()
    """Speakers per block in the design, moving or not (module docstring); the sensitivity counts these."""


def sign_flip_floor(
    first: np.ndarray, second: np.ndarray, n_permutations: int | None, blocks: np.ndarray | None = None
) -> PermutationFloor:
    """The design floor of :func:`paired_permutation_test` on (S, k) arm sums: per block (``blocks``, one label per
    speaker; None: one block), the speakers whose two arms' sums differ (module docstring)."""
    moving = np.any(np.asarray(first, dtype=float) != np.asarray(second, dtype=float), axis=1)
    labels = np.zeros(len(moving), dtype=int) if blocks is None else np.asarray(blocks)
    if labels.shape != moving.shape:
        raise ValueError(f"sign_flip_floor: {len(labels)} block labels for {len(moving)} speakers")
    units = tuple(int(np.count_nonzero(moving[labels == label])) for label in dict.fromkeys(labels.tolist()))
    return PermutationFloor(test=SIGN_FLIP, units=units or (0,), permutations=n_permutations)


def paired_permutation_test(
    first: np.ndarray,
    second: np.ndarray,
    statistic: Statistic,
    n_permutations: int = 1000,
    seed: int = 0,
    *,
    blocks: np.ndarray | None = None,
) -> PairedPermutationResult:
    """Speaker-level arm-label swap test of ``statistic`` (module docstring); ``first``, ``second`` are (S, k)
    per-speaker sums of the two arms, rows in the same speaker order. A NaN statistic in a permutation counts as
    not exceeding the observed one; a NaN observed statistic gives a NaN p-value. ``blocks`` (one label per
    speaker) names the blocks whose whole-block swap leaves ``statistic`` unchanged, for the result's ``floor``
    (:func:`sign_flip_floor`)."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if first.shape != second.shape or first.ndim != 2:
        raise ValueError(f"paired_permutation_test: arms must be (speakers, k) arrays of one shape, got "
                         f"{first.shape} and {second.shape}")  # fmt: skip
    if n_permutations < 1:
        raise ValueError(f"paired_permutation_test: n_permutations must be >= 1, got {n_permutations}")
    floor = sign_flip_floor(first, second, n_permutations, blocks)
    labels = np.zeros(len(first), dtype=int) if blocks is None else np.asarray(blocks)
    design_units = tuple(int(np.count_nonzero(labels == label)) for label in dict.fromkeys(labels.tolist()))
    observed = float(statistic(first.sum(axis=0, keepdims=True), second.sum(axis=0, keepdims=True))[0])
    moving = np.flatnonzero(np.any(first != second, axis=1))
    exact = 2 ** len(moving) <= min(n_permutations, MAX_ENUMERATED)
    if exact:
        swaps = np.zeros((2 ** len(moving), len(first)))
        swaps[:, moving] = np.array(list(itertools.product((0.0, 1.0), repeat=len(moving))))
        floor = dataclasses.replace(floor, permutations=None)
    else:
        swaps = np.random.default_rng(seed).integers(0, 2, size=(n_permutations, len(first))).astype(float)
    moved = swaps @ (second - first)  # what each pattern moves from the second arm to the first, once for both
    first_b = first.sum(axis=0) + moved
    second_b = second.sum(axis=0) - moved
    null = np.asarray(statistic(first_b, second_b), dtype=float)
    draws = len(swaps)
    if np.isnan(observed):
        return PairedPermutationResult(observed, float("nan"), draws, seed, null, floor, exact, design_units)
    tolerance = 1e-9 * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(null >= observed - tolerance))
    # Enumerated: the observed pattern is one of the 2^S (p = exceed / 2^S); drawn: Phipson & Smyth's (1 + #)/(B + 1).
    p_value = exceed / draws if exact else (1 + exceed) / (draws + 1)
    return PairedPermutationResult(observed, p_value, draws, seed, null, floor, exact, design_units)


def sign_flip_sensitivity(test: PairedPermutationResult, unit_name: str) -> NullSensitivity:
    """The test's detectable effect from its own null (:class:`~harness.metrics.detectable.NullSensitivity`) at
    the design's speakers (module docstring): exact where the enumerated patterns are the design's own (every
    speaker moved), else the scaled chi-square fit of the null with the design's sign-count bound; its units are
    the fewest speakers of a block. A design without speakers has no units (never powered)."""
    moving = [n for n in (test.floor.units if test.floor else ()) if n > 0]
    design = [n for n in test.design_units if n > 0] or moving
    widening = 1.0 / sum(design) if design else 0.0
    every_speaker_moved = sum(moving) == sum(design)
    return NullSensitivity(
        test.null,
        exact=test.exact and every_speaker_moved,
        units=min(design) if design else 0,
        unit_name=unit_name,
        widening=widening,
        sign_count=test.exact or not every_speaker_moved,
    )
