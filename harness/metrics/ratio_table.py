"""The result table shared by the expected-WER and judge-score ratios: one row per method (paper Tables
III-IV), and the validation both apply to their input tables.

A row whose fit did not converge keeps its numbers for diagnosis but has ``converged = False`` and
``significant = None``: it must not be used to pass or fail a gate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

METHOD_VANILLA = "vanilla"
METHOD_NO_SPEAKER = "regression w/o speaker w/o semantics"
METHOD_SPEAKER = "regression w/ speaker w/o semantics"
METHOD_SEMANTIC = "regression w/ speaker w/ semantics"
METHOD_NO_SPEAKER_SEMANTIC = "regression w/o speaker w/ semantics"

RESULT_COLUMNS = (
    "ratio",
    "ci_low",
    "ci_high",
    "significant",
    "converged",
    "ci_method",
    "se_log_ratio",
    "df",
    "boot_ci_low",
    "boot_ci_high",
    "value_numerator",
    "value_denominator",
    "message",
)

_INTERCEPT = "(Intercept)"

SINGULAR_NOTE = "boundary (singular) fit: speaker SD estimated at 0 (lme4 isSingular, tolerance 1e-4)"
"""What every ratio row whose mixed model hit the boundary says, in lme4's words (``boundary (singular) fit``):
the expected-WER rows and the judge-score rows alike."""


def _failed_row(message: str) -> dict[str, object]:
    """A method row that could not be computed: NaN numbers, ``converged = False``, ``message`` says why."""
    row = _row(np.nan, np.nan, np.nan, False, "none", np.nan, np.nan, np.nan)
    row["message"] = message
    return row


@dataclasses.dataclass(frozen=True)
class RatioTable:
    """One row per method (index), columns ``RESULT_COLUMNS``.

    ``ratio`` is ``numerator / denominator`` of the metric (expected WER or mean judge score);
    ``ci_low``/``ci_high`` the interval of ``ci_method`` (``bootstrap`` for vanilla, ``delta`` for model
    rows); ``boot_ci_*`` the speaker-cluster bootstrap interval where one was computed; ``significant`` is
    true when the interval excludes 1 and ``None`` for a non-converged row. ``value_*`` are the per-group
    metric values behind the ratio. ``fits`` holds the fitted model objects by method.
    """

    methods: pd.DataFrame
    metric: str
    numerator: str
    denominator: str
    n_utterances: int
    n_speakers: int | None
    n_dropped_empty_reference: int
    fits: Mapping[str, object] = dataclasses.field(repr=False, compare=False)

    def row(self, method: str) -> pd.Series:
        return self.methods.loc[method]


def ratio_p_value(row: Mapping[str, object], level: float = 0.95) -> float:
    """Two-sided p-value of ``ratio = 1`` for one method row, consistent with its ``level`` interval.

    The interval is taken as symmetric on the log scale with the row's reference distribution (Student's
    t with ``df``, the normal where ``df`` is NaN): ``se = (log hi - log lo) / (2 q)`` with
    ``q = quantile(0.5 + level / 2)``, ``t = |log ratio| / se`` and ``p = 2 P(T > t)``. So the rows whose
    interval excludes 1 are those with ``p < 1 - level`` (up to the interval's asymmetry). NaN for a row
    that did not converge or has no interval (not estimable)."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    if not bool(row["converged"]):
        return float("nan")
    ratio, low, high, df = (float(row[key]) for key in ("ratio", "ci_low", "ci_high", "df"))
    if not all(np.isfinite(x) and x > 0 for x in (ratio, low, high)) or high <= low:
        return float("nan")
    reference = student_t(df) if np.isfinite(df) and df > 0 else norm()
    se = (np.log(high) - np.log(low)) / (2.0 * reference.ppf(0.5 + level / 2.0))
    return float(2.0 * reference.sf(abs(np.log(ratio)) / se))


def _row(ratio, low, high, converged, ci_method, se, value_num, value_den) -> dict[str, object]:
    significant = None
    if converged and np.isfinite(low) and np.isfinite(high):
        significant = bool(low > 1.0 or high < 1.0)
    return {
        "ratio": float(ratio),
        "ci_low": float(low),
        "ci_high": float(high),
        "significant": significant,
        "converged": bool(converged),
        "ci_method": ci_method,
        "se_log_ratio": float(se),
        "df": np.nan,
        "boot_ci_low": np.nan,
        "boot_ci_high": np.nan,
        "value_numerator": float(value_num),
        "value_denominator": float(value_den),
        "message": "converged" if converged else "not converged",
    }


def _methods_frame(rows: dict[str, dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(rows, orient="index")[list(RESULT_COLUMNS)]
    frame.index.name = "method"
    frame["significant"] = frame["significant"].astype(object)
    return frame


def _covariate_sets(covariates) -> dict[str | None, tuple[str, ...]]:
    if isinstance(covariates, str):
        raise ValueError("covariates must be a list of column names or a mapping name -> columns, not a string")
    if isinstance(covariates, Mapping):
        return {str(name): tuple(cols) for name, cols in covariates.items() if len(cols)}
    cols = tuple(covariates)
    return {None: cols} if cols else {}


def _covariate_columns(covariate_sets: Mapping[str | None, Sequence[str]]) -> list[str]:
    """Every column named by any of ``covariate_sets`` (:func:`_covariate_sets`), once, sorted."""
    return sorted({c for cols in covariate_sets.values() for c in cols})


def _model_methods(
    covariate_sets: Mapping[str | None, Sequence[str]], has_speaker: bool
) -> list[tuple[str, tuple[str, ...], bool]]:
    """The model rows of a ratio table in order, each ``(method, covariate columns, with speaker random
    intercept)``: the regression on the group indicator without speakers; with ``has_speaker``, the one with a
    speaker random intercept; then one semantic row per covariate set (``"<method>: <name>"`` for a named set),
    with the speaker random intercept where speakers are known."""
    methods = [(METHOD_NO_SPEAKER, (), False)]
    if has_speaker:
        methods.append((METHOD_SPEAKER, (), True))
    semantic_method = METHOD_SEMANTIC if has_speaker else METHOD_NO_SPEAKER_SEMANTIC
    methods += [
        (semantic_method if name is None else f"{semantic_method}: {name}", tuple(cols), has_speaker)
        for name, cols in covariate_sets.items()
    ]
    return methods


def _check_finite(data: pd.DataFrame, columns: Sequence[str]) -> None:
    for c in columns:
        values = pd.to_numeric(data[c], errors="coerce").to_numpy(float)
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(f"column {c!r} has {int(bad.sum())} NaN/inf or non-numeric values")


def _two_levels(groups: pd.Series, numerator, denominator, label: str) -> tuple[str, str]:
    if groups.isna().any():
        raise ValueError(f"column {label!r} has {int(groups.isna().sum())} missing values")
    levels = sorted(groups.unique().tolist(), key=str)
    if len(levels) != 2:
        raise ValueError(f"column {label!r} must have exactly two levels, found {levels}")
    if numerator is None and denominator is None:
        return levels[0], levels[1]
    if numerator is None:
        numerator = next(level for level in levels if level != denominator)
    if denominator is None:
        denominator = next(level for level in levels if level != numerator)
    if {numerator, denominator} != set(levels):
        raise ValueError(f"numerator/denominator {numerator!r}/{denominator!r} do not match levels {levels}")
    return numerator, denominator


def _speaker_level_columns(data: pd.DataFrame, design: pd.DataFrame) -> int:
    """Number of design columns constant within every speaker (intercept, a speaker-level group, ...)."""
    by_speaker = design.groupby(data["speaker"].to_numpy(), sort=False)
    return int(((by_speaker.max() - by_speaker.min()).max(axis=0) == 0).sum())
