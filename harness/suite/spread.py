"""How a suite's groups are spread over voice banks and voices (issue 61, item 3): the engine confound and the
voices a group needs.

A published accent audit found a significant accent penalty with one TTS voice per accent, which vanished with
several voices per accent: a group read by one engine (or one voice) measures the engine, not the group. So the
builder states, per dimension and group, which banks read it and with how many voices (``build-report.txt`` and
``provenance.json``'s ``spread``), and:

* **refuses** a dimension whose bank determines its group (:attr:`DimensionSpread.engine_confounded`): at least two
  groups, and no bank reads two of them. Every group read by one bank only, each a different one (``accent=us``
  all rhvoice, ``accent=de`` all mbrola) is that case; so is ``us`` on rhvoice and festival against ``de`` on mbrola
  and espeak-ng, where the engine still tells the groups apart. A dimension all read by one bank is not confounded
  (the engine is constant). The declared voices are checked before any clip is made (exit 1, one ``ERROR:`` line);
  the admitted ones again after the filters, which may drop every voice of a shared bank from a group (a problem
  of the build: exit 1, nothing loadable written; ``spread_admitted`` in ``provenance.json``).
  ``--allow-engine-confound`` builds it anyway; the suite records the confound
  (``provenance.json``'s ``engine_confound``) and every gate run on the suite names it (its terminal lines,
  results.json's corpus provenance, the report's deviations).
* **warns** where a group has fewer voices than the speaker-level permutation test over the dimension's groups
  needs to reach the gate's alpha at all: with G groups of n voices each, relabelling voices gives the smallest p
  ``G! (n!)^G / (Gn)!`` (:class:`harness.metrics.permutation_floor.PermutationFloor`, ``group permutation``:
  2 groups need 4 voices each at alpha 0.05, 3 groups 3). That is the least a group needs: the run's correction over
  its cases (``gate.correction``) asks for more, and a contrast whose floor cannot reach its corrected alpha is
  unmeasured (``docs/statistics.md``, "The smallest p a design can reach").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from harness.metrics.permutation_floor import GROUP_PERMUTATION, PermutationFloor
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

ALLOW_OPTION = "--allow-engine-confound"


class EngineConfoundError(SuiteError):
    """A dimension's groups are told apart by their voice bank (exit 1, naming the cells)."""


@dataclasses.dataclass(frozen=True)
class GroupSpread:
    """One group of a dimension: ``banks`` maps each bank reading it to the speaker ids of its voices there."""

    group: str
    banks: dict[str, tuple[str, ...]]

    @property
    def voices(self) -> int:
        return sum(len(speakers) for speakers in self.banks.values())

    def cell(self, dimension: str) -> str:
        """``accent=us: rhvoice (spk01, spk02), festival (spk03)``."""
        parts = ", ".join(f"{bank} ({', '.join(speakers)})" for bank, speakers in self.banks.items())
        return f"{dimension}={self.group}: {parts}"


@dataclasses.dataclass(frozen=True)
class DimensionSpread:
    """A dimension's groups, each with its banks and voices."""

    dimension: str
    groups: tuple[GroupSpread, ...]

    @property
    def engine_confounded(self) -> bool:
        """At least two groups, and no bank reads two of them: the bank determines the group."""
        if len(self.groups) < 2:
            return False
        readers: dict[str, int] = {}
        for group in self.groups:
            for bank in group.banks:
                readers[bank] = readers.get(bank, 0) + 1
        return max(readers.values()) == 1

    def cells(self) -> str:
        return "; ".join(group.cell(self.dimension) for group in self.groups)

    def voices_needed(self, alpha: float) -> int:
        """The voices per group whose group permutation over this dimension's groups can give p <= ``alpha``."""
        return PermutationFloor(test=GROUP_PERMUTATION, units=(1,) * len(self.groups)).units_needed(alpha)

    def to_json(self) -> dict:
        return {
            group.group: {"voices": group.voices, "banks": {bank: list(s) for bank, s in group.banks.items()}}
            for group in self.groups
        }


def dimension_spreads(voices: Iterable[VoiceSpec]) -> list[DimensionSpread]:
    """Each labelled dimension's groups, in the order the voices first name them, with their banks and speakers."""
    table: dict[str, dict[str, dict[str, list[str]]]] = {}
    for voice in voices:
        for dimension, group in voice.labels:
            table.setdefault(dimension, {}).setdefault(group, {}).setdefault(voice.bank, []).append(voice.speaker)
    return [
        DimensionSpread(
            dimension,
            tuple(
                GroupSpread(group, {bank: tuple(speakers) for bank, speakers in banks.items()})
                for group, banks in groups.items()
            ),
        )
        for dimension, groups in table.items()
    ]


def check_engine_confound(spreads: list[DimensionSpread], allowed: bool) -> list[str]:
    """The confounded dimensions' lines (``accent: the bank determines the group (accent=us: rhvoice (spk01);
    ...)``); raises :class:`EngineConfoundError` naming them unless ``allowed``."""
    confounds = [f"{spread.dimension}: the bank determines the group ({spread.cells()})" for spread in spreads
                 if spread.engine_confounded]  # fmt: skip
    if confounds and not allowed:
        raise EngineConfoundError(
            f"--voices: engine confound, each group is read by banks no other group uses, so a group difference "
            f"would be the engine's: {' | '.join(confounds)}; give each group voices of a bank another group also "
            f"uses, or pass {ALLOW_OPTION} (named on every gate run on the suite)"
        )
    return confounds


def voice_warnings(spreads: list[DimensionSpread], alpha: float) -> list[str]:
    """A line per group with fewer voices than its dimension's group permutation needs at ``alpha`` (module
    docstring)."""
    warnings = []
    for spread in spreads:
        if len(spread.groups) < 2:  # no contrast at all: the loader refuses such a dimension, naming it
            continue
        needed = spread.voices_needed(alpha)
        for group in spread.groups:
            if group.voices < needed:
                warnings.append(
                    f"{spread.dimension}={group.group}: {group.voices} voice(s), fewer than the {needed} per group a "
                    f"permutation over voices across {len(spread.groups)} groups needs to reach p <= {alpha:g} "
                    f"before any correction: no {spread.dimension} contrast tested by permuting voices can be significant"
                )
    return warnings


def gate_alpha() -> float:
    """The gate's family-wise alpha from the packaged thresholds (``gate.alpha``)."""
    from harness.thresholds import GATE_SCHEMA, GATE_SECTION, packaged_thresholds

    return float(packaged_thresholds().values(GATE_SECTION, GATE_SCHEMA, None, "")["alpha"])
