"""Registry of check families, imported lazily by name (``module:Class``)."""

from __future__ import annotations

import functools
import importlib

from harness.checks.base import Case, Check, Comparison, Verdict

CHECKS: dict[str, str] = {
    "ntvd": "harness.checks.ntvd:NtvdCheck",
    "wer_ratio": "harness.checks.wer_ratio:WerRatioCheck",
    "score_ratio": "harness.checks.score_ratio:ScoreRatioCheck",
    "icat": "harness.checks.icat:IcatCheck",
    "personalization": "harness.checks.personalization:PersonalizationCheck",
    "classification": "harness.checks.classification:ClassificationCheck",
    "robustness": "harness.checks.robustness:RobustnessCheck",
}


@functools.cache
def get_check(name: str) -> Check:
    if name not in CHECKS:
        raise KeyError(f"unknown check {name!r}; known checks: {sorted(CHECKS)}")
    module_name, _, class_name = CHECKS[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)()


def all_checks() -> list[Check]:
    return [get_check(name) for name in CHECKS]


__all__ = ["CHECKS", "Case", "Check", "Comparison", "Verdict", "all_checks", "get_check"]
