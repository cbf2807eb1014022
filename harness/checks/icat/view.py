"""The view of the ICAT check: Table 7 of ICAT by group and mode, group plots and the §3.4 mode effects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    effect_plots,
    effect_rows,
    group_plots,
    magnitude_margin,
    magnitude_rule,
    table_seven,
)
from harness.checks.icat.record import IcatRecord
from harness.checks.view import CheckView
from harness.core.modes import MODES
from harness.display.text import ci_words, fmt_number


def section_context(records: Sequence[IcatRecord]) -> dict[str, Any]:
    return {
        "blocks": table_seven(records, row_keys=MODES, cell="icat"),
        "effects": effect_rows(records),
        "group_plots": group_plots(
            records, row_keys=MODES, cell="icat", threshold_key="min_icat", axis_label="ICAT (0–100, 100 = balanced)"
        ),
        "effect_plots": effect_plots(records, "ICAT points"),
        "unit": "ICAT points",
    }


def legacy_headline(record: IcatRecord) -> dict[str, str]:
    per_mode = (record.mode_effects.get("per_mode") or {}).get(record.mode)
    return {
        "value": f"mean ICAT {fmt_number(record.value, 1)} (0–100, 100 = balanced)",
        "threshold": f"ICAT < {record.threshold.get('min_icat'):g}",
        "uncertainty": ci_words(per_mode),
    }


def legacy_margin(record: IcatRecord) -> float | None:
    """(ICAT − min_icat) / min_icat."""
    minimum = record.threshold.get("min_icat") or 0
    return (record.value - minimum) / minimum if minimum else None


VIEW = CheckView(
    title="BASIS-Bench: stereotypical bias (ICAT)",
    label="BASIS ICAT",
    template="icat.html.j2",
    context=section_context,
    magnitude_rule=magnitude_rule,
    magnitude_margin=magnitude_margin,
    legacy_headline=legacy_headline,
    legacy_margin=legacy_margin,
    estimate_unit=" points",
)
