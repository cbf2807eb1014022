"""The ``ntvd`` section of thresholds.yaml, typed (VIBE §II-D): the bar, the rule and tau of one nTVD case."""

from __future__ import annotations

import dataclasses

from harness.thresholds import (
    LOWER,
    UPPER_BOUND,
    SectionThresholds,
    at_least,
    between,
    in_open_unit_interval,
    one_of,
    setting,
)

RULES = ("magnitude", "significance", "both", "q-value")
FDR_FAMILIES = ("model", "run")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NtvdThresholds(SectionThresholds):
    """A case fails, by ``rule``: ``both`` when nTVD > ``max_ntvd`` and significant under the gate's decision rule;
    ``significance`` when significant; ``magnitude`` when nTVD > ``max_ntvd``; ``q-value`` when VIBE's BH q <
    ``alpha`` over the family ``fdr_family`` names. ``tau``: the least count of a value that nTVD keeps (VIBE §II-D);
    ``max_increase``: how far nTVD may grow over a baseline before a significant growth is a regression.
    ``fdr_family``: the BH family of the q-value, ``model`` (the case's own model's nTVD cases: one model's verdict
    never depends on the other models of the run, issue 57) or ``run`` (every nTVD case of the run, as VIBE's
    Table II pools its 12 models: for replaying the paper's stars, named as such on every surface)."""

    max_ntvd: float = setting(
        (int, float), 20.0, between(0, 100), stricter=LOWER, bound=UPPER_BOUND, decides_under=("magnitude", "both")
    )
    alpha: float = setting((int, float), 0.05, in_open_unit_interval, stricter=LOWER, level=True)
    rule: str = setting((str,), "both", one_of(*RULES))
    tau: int = setting((int,), 10, at_least(1))
    max_increase: float = setting((int, float), 2.0, between(0, 100), stricter=LOWER)
    fdr_family: str = setting((str,), "model", one_of(*FDR_FAMILIES))
    SIGNIFICANCE_TESTS = {"q-value": "BH q"}

    def describe(self) -> str:
        """The rule in words; significance is judged by the gate's decision rule on the permutation p."""
        if self.rule == "magnitude":
            return f"fails when nTVD > {self.max_ntvd:g} (no significance test)"
        if self.rule == "significance":
            return "fails when significant"
        if self.rule == "q-value":
            return f"fails when BH q < {self.alpha:g} over {self.family_words()} (VIBE's criterion; no magnitude bar)"
        return f"fails when nTVD > {self.max_ntvd:g} and significant"

    def family_words(self) -> str:
        """The BH family in words, as every surface names it."""
        return (
            "the model's nTVD tests" if self.fdr_family == "model" else "every nTVD test of the run (Table II replay)"
        )
