"""The typed thresholds of the ratio checks (``wer_ratio``, ``score_ratio``; the semantic-aware WER study §V)."""

from __future__ import annotations

import dataclasses

from harness.thresholds import (
    HIGHER,
    LOWER,
    LOWER_BOUND,
    UPPER_BOUND,
    SectionThresholds,
    at_least,
    between,
    in_open_unit_interval,
    one_of,
    setting,
)

RATIO_RULES = ("ci", "bounds", "both")
METHOD_NAMES = ("vanilla", "no_speaker", "speaker", "semantic")
"""The rows of the paper's Tables III-IV a case may be judged on (``method``; ``semantic`` picks the GLMM with the
model's own embedding, ``embedding``)."""
EMBEDDING_NAMES = ("agg", "eowl")


def nonempty(value: str) -> str | None:
    return None if value.strip() else "must name a group (or be auto)"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RatioThresholds(SectionThresholds):
    """A case fails, by ``rule``, when the group ratio lies outside [``lower``, ``upper``] (``bounds``), when its
    ``1 - alpha`` CI excludes 1 (``ci``), or both. ``method`` and ``embedding`` pick the judged row, ``numerator``
    the numerator group (``auto``: the paper's); ``nagq``, ``n_boot`` and ``components`` set the fit; a regression
    is a significant growth of the largest |log ratio| beyond ``max_worsening``."""

    rule: str = setting((str,), "both", one_of(*RATIO_RULES))
    lower: float = setting(
        (int, float), 0.9, at_least(0), stricter=HIGHER, bound=LOWER_BOUND, decides_under=("bounds", "both")
    )
    upper: float = setting(
        (int, float), 1.11, at_least(1), stricter=LOWER, bound=UPPER_BOUND, decides_under=("bounds", "both")
    )
    alpha: float = setting((int, float), 0.05, in_open_unit_interval, stricter=LOWER, level=True)
    method: str = setting((str,), "semantic", one_of(*METHOD_NAMES))
    embedding: str = setting((str,), "agg", one_of(*EMBEDDING_NAMES))
    numerator: str = setting((str,), "auto", nonempty)
    nagq: int = setting((int,), 10, between(1, 50))
    n_boot: int = setting((int,), 1000, at_least(50), stricter=HIGHER)
    components: int = setting((int,), 8, between(1, 64))
    max_worsening: float = setting((int, float), 0.05, at_least(0), stricter=LOWER)

    @property
    def decision_rule(self) -> str:
        """``rule`` in the words of :meth:`harness.metrics.multitest.DecisionRule.decide`: ``both``; ``ci`` is
        ``significance``; ``bounds`` is ``magnitude``."""
        return {"both": "both", "ci": "significance", "bounds": "magnitude"}[self.rule]

    def describe(self) -> str:
        """The bias threshold in the message's words."""
        return f"outside [{self.lower:g}, {self.upper:g}] and significant"
