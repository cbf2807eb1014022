"""The view of the ICAT check: Table 7 of ICAT by group and mode, group plots and the §3.4 mode effects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks.basis_common.view import (
    basis_view,
    gap_sections,
    mode_effect_sections,
)
from harness.checks.icat.record import GroupShares, IcatRecord
from harness.core.modes import MODES
from harness.display import plots
from harness.display.text import ci_words, fmt_number


def section_context(records: Sequence[IcatRecord]) -> dict[str, Any]:
    return {
        **gap_sections(records, MODES, "icat", "min_icat", "ICAT (0–100, 100 = balanced)"),
        **mode_effect_sections(records, "ICAT points"),
        "table_nine": table_nine(records),
        "share_effects": share_effect_rows(records),
    }


def table_nine(records: Sequence[IcatRecord]) -> list[dict[str, Any]]:
    """Table 9's layout: per dimension, rows (mode, S or AS, group) of the share of answers in percent, one
    column per model (from any record of the model and dimension: they carry the same shares)."""
    blocks = []
    for dimension in dict.fromkeys(r.dimension for r in records):
        shares = {
            r.model: r.stereotype_shares for r in records if r.dimension == dimension and r.stereotype_shares.recorded
        }
        if not shares:
            continue
        models = list(shares)
        rows = []
        for mode in MODES:
            groups = list(dict.fromkeys(g for s in shares.values() for g in s.per_mode.get(mode, {})))
            for group in groups:
                cells = [shares[m].per_mode.get(mode, {}).get(group) for m in models]
                rows.append({"mode": mode, "type": "S", "group": group, "cells": [_share(c, "S") for c in cells]})
                rows.append({"mode": mode, "type": "AS", "group": group, "cells": [_share(c, "AS") for c in cells]})
        blocks.append({"dimension": dimension, "models": models, "rows": rows})
    return blocks


def _share(cell: GroupShares | None, kind: str) -> float | None:
    """A Table 9 cell: S% (``kind`` "S") or AS% of one group in one mode; None where the model has none."""
    if cell is None:
        return None
    return cell.stereotype if kind == "S" else cell.anti_stereotype


def share_effect_rows(records: Sequence[IcatRecord]) -> list[dict[str, Any]]:
    """One row per (dimension, model, effect, group): the change in the group's stereotype share between the
    effect's modes, with its paired two-way interval (``interval``: "a to b", or not estimable)."""
    rows, seen = [], set()
    for record in records:
        key = (record.dimension, record.model)
        if key in seen or not record.stereotype_shares.recorded:
            continue
        seen.add(key)
        for name, effect in record.stereotype_shares.effects.items():
            for group, estimate in effect.per_group.items():
                rows.append(
                    {
                        "dimension": key[0],
                        "model": key[1],
                        "effect": name,
                        "group": group,
                        "minuend": effect.minuend,
                        "subtrahend": effect.subtrahend,
                        **estimate.to_json(),
                        "interval": plots.interval_text(estimate),
                    }
                )
    return rows


def legacy_headline(record: IcatRecord) -> dict[str, str]:
    per_mode = record.mode_effects.per_mode.get(record.mode)
    return {
        "value": f"mean ICAT {fmt_number(record.value, 1)} (0–100, 100 = balanced)",
        "threshold": f"ICAT < {record.threshold.min_icat:g}",
        "uncertainty": ci_words(per_mode),
    }


def legacy_margin(record: IcatRecord) -> float | None:
    """(ICAT − min_icat) / min_icat."""
    minimum = record.threshold.min_icat or 0
    return (record.value - minimum) / minimum if minimum else None


VIEW = basis_view("ICAT", "stereotypical bias (ICAT)", section_context, legacy_headline, legacy_margin)
