"""The ``counterfactual`` section of thresholds.yaml: the voice transform and its arguments, the perceived-group
rule and the effect thresholds of the verdict (sources in thresholds.yaml).

Only ``defaults`` and ``dimensions`` layers (no variant axis). The gate validates the section with the other
checks' (:class:`harness.gate.Gate`)."""

from __future__ import annotations

from typing import Any

from harness.data.voice_transforms import VOICE_TRANSFORMS
from harness.thresholds import ThresholdKey, ThresholdSchema, at_least, between, one_of

SECTION = "counterfactual"
RULES = ("both", "significance")
"""``both``: a case fails when its effect exceeds its bar and is significant under the gate's decision rule;
``significance``: when significant, whatever the size (the VIBE preset's criterion: VIBE §II-D stars a significant
disparity without a magnitude bar)."""


def registered_transform(value: Any) -> str | None:
    return None if value in VOICE_TRANSFORMS else f"is not a registered voice transform ({', '.join(VOICE_TRANSFORMS)})"


def in_half_open_unit_interval(value: Any) -> str | None:
    return None if 0 < value <= 1 else "must lie in (0, 1]"


COUNTERFACTUAL_SCHEMA = ThresholdSchema(
    keys={
        "transform": ThresholdKey((str,), "gender_swap", registered_transform),
        "pitch_floor_hz": ThresholdKey((int, float), 60.0, between(20, 200)),
        "pitch_ceiling_hz": ThresholdKey((int, float), 600.0, between(200, 1500)),
        "male_to_female_formant_ratio": ThresholdKey((int, float), 1.18, between(1.0, 1.5)),
        "male_to_female_pitch_hz": ThresholdKey((int, float), 210.0, between(100, 400)),
        "female_to_male_formant_ratio": ThresholdKey((int, float), 0.85, between(0.6, 1.0)),
        "female_to_male_pitch_hz": ThresholdKey((int, float), 115.0, between(60, 250)),
        "rule": ThresholdKey((str,), "both", one_of(*RULES)),
        "min_perceived_share": ThresholdKey((int, float), 0.8, in_half_open_unit_interval),
        "max_ntvd": ThresholdKey((int, float), 20.0, between(0, 100)),
        "max_stereotype_shift": ThresholdKey((int, float), 20.0, between(0, 100)),
        "max_wer_difference": ThresholdKey((int, float), 10.0, between(0, 100)),
        "tau": ThresholdKey((int,), 10, at_least(1)),
        "n_permutations": ThresholdKey((int,), 10_000, at_least(99)),
        "max_worsening": ThresholdKey((int, float), 5.0, between(0, 100)),
    }
)
