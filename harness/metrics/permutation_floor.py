"""The smallest p-value a permutation test's design can return (:class:`PermutationFloor`, issue 45): statistics on
the design of a test (speakers per block or per group, Monte Carlo draws), which the sign-flip and nTVD tests compute
and results.json's contrasts (:class:`harness.records.Contrast`) state."""

from __future__ import annotations

import dataclasses
import math

from harness.core.json_records import JsonRecord

SIGN_FLIP, GROUP_PERMUTATION = "sign flip", "group permutation"
PERMUTATION_TESTS = (SIGN_FLIP, GROUP_PERMUTATION)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PermutationFloor(JsonRecord):
    """The smallest p-value a permutation test can return, from its design (issue 45): what a case needs before a
    significant result is possible at all.

    - ``test = "sign flip"`` (the counterfactual paired test: each speaker's two arms swapped together, each
      speaker independently): ``units`` holds the speakers of each block whose swap leaves the statistic unchanged
      when the whole block is swapped, i.e. each swap direction tested together (one block for a test of one
      direction). With S = sum(units) speakers in D = len(units) blocks, the 2^S swap patterns fall into orbits of
      2^D patterns with the same statistic (swapping every speaker of a block gives the same two-sided effect), so
      the exact p is at least ``2^D / 2^S`` (``2 / 2^S`` for one direction);
    - ``test = "group permutation"`` (the nTVD test: speakers reassigned to groups with the group sizes
      ``units`` = n_1..n_G fixed): of the S! / prod(n_g!) assignments, the K = prod_k c_k! that only relabel
      groups of the same size (c_k groups of size k) give the same nTVD, which is symmetric in the groups, so the
      exact p is at least ``K prod(n_g!) / S!``.

    ``permutations``: B Monte Carlo draws, whose p = (1 + #)/(B + 1) is at least ``1 / (B + 1)``; None for a full
    enumeration. :attr:`min_p` is the larger of the two bounds."""

    test: str
    units: tuple[int, ...]
    permutations: int | None = None

    def __post_init__(self) -> None:
        if self.test not in PERMUTATION_TESTS:
            raise ValueError(f"PermutationFloor: test must be one of {PERMUTATION_TESTS}, got {self.test!r}")
        if any(int(n) < 0 for n in self.units) or (self.permutations is not None and self.permutations < 1):
            raise ValueError(f"PermutationFloor: units must be >= 0 and permutations >= 1, got {self}")
        object.__setattr__(self, "units", tuple(int(n) for n in self.units))

    @property
    def design_p(self) -> float:
        """The exact test's smallest p (the class docstring's formula for :attr:`test`)."""
        units = [n for n in self.units if n > 0]
        if self.test == SIGN_FLIP:
            return min(1.0, 2.0 ** (len(units) - sum(units)))
        relabellings = math.prod(math.factorial(units.count(size)) for size in set(units))
        assignments = math.factorial(sum(units)) // math.prod(math.factorial(n) for n in units)
        return min(1.0, relabellings / assignments)

    @property
    def resolution(self) -> float:
        """``1 / (B + 1)``, the smallest Monte Carlo p; 0 for a full enumeration."""
        return 0.0 if self.permutations is None else 1.0 / (self.permutations + 1)

    @property
    def min_p(self) -> float:
        return max(self.design_p, self.resolution)

    def units_needed(self, alpha: float) -> int:
        """The smallest number n of speakers per block (sign flip) or per group (group permutation), the same in
        each of the design's blocks or groups (every entry of ``units``, an empty one too), whose exact test can
        give p <= ``alpha``."""
        blocks = max(1, len(self.units))  # a direction with no speakers yet is still one of the design's blocks
        for n in range(1, 10_000):
            if dataclasses.replace(self, units=(n,) * blocks, permutations=None).design_p <= alpha:
                return n
        raise ValueError(f"PermutationFloor: no design of fewer than 10000 speakers per block reaches {alpha}")

    def describe(self) -> str:
        """The design in words, e.g. ``a sign flip over 6 + 6 speakers (2 directions tested together)``."""
        units = " + ".join(str(n) for n in self.units) or "0"
        speakers = "speaker" if self.units == (1,) else "speakers"
        if self.test == SIGN_FLIP:
            blocks = "one direction" if len(self.units) == 1 else f"{len(self.units)} directions tested together"
            words = f"a sign flip over {units} {speakers} ({blocks})"
        else:
            words = f"a group permutation of {units} {speakers} in {len(self.units)} groups"
        return words + (f" with {self.permutations} permutations" if self.resolution > self.design_p else "")

    def shortfall(self, alpha: float) -> str:
        """What would let the test reach ``alpha``: more speakers per block, more permutations, or both."""
        remedies = []
        if self.design_p > alpha:
            per = "per direction" if self.test == SIGN_FLIP else "per group"
            remedies.append(f"{self.units_needed(alpha)} speakers {per} would reach it")
        if self.resolution > alpha:
            remedies.append(f"raise the permutations to at least {math.ceil(1.0 / alpha - 1.0)}")
        return " and ".join(remedies)
