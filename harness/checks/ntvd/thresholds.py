"""The ``ntvd`` section of thresholds.yaml, typed (VIBE §II-D): the bar, the rule and tau of one nTVD case."""

from __future__ import annotations

import dataclasses

from harness.thresholds import SectionThresholds, at_least, between, in_open_unit_interval, one_of, setting

RULES = ("magnitude", "significance", "both", "q-value")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NtvdThresholds(SectionThresholds):
    """A case fails, by ``rule``: ``both`` when nTVD > ``max_ntvd`` and significant under the gate's decision rule;
    ``significance`` when significant; ``magnitude`` when nTVD > ``max_ntvd``; ``q-value`` when VIBE's BH q <
    ``alpha`` over the run's nTVD tests. ``tau``: the least count of a value that nTVD keeps (VIBE §II-D);
    ``max_increase``: how far nTVD may grow over a baseline before a significant growth is a regression."""

    max_ntvd: float = setting((int, float), 20.0, between(0, 100))
    alpha: float = setting((int, float), 0.05, in_open_unit_interval)
    rule: str = setting((str,), "both", one_of(*RULES))
    tau: int = setting((int,), 10, at_least(1))
    max_increase: float = setting((int, float), 2.0, between(0, 100))

    def describe(self) -> str:
        """The rule in words; significance is judged by the gate's decision rule on the permutation p."""
        if self.rule == "magnitude":
            return f"fails when nTVD > {self.max_ntvd:g} (no significance test)"
        if self.rule == "significance":
            return "fails when significant"
        if self.rule == "q-value":
            return f"fails when BH q < {self.alpha:g} over the run's nTVD tests (VIBE's criterion; no magnitude bar)"
        return f"fails when nTVD > {self.max_ntvd:g} and significant"
