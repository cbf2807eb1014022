"""Multiple-testing correction over the family of a gate session's tests (VIBE §II-D)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fdr_bh(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values (Benjamini & Hochberg 1995), in the input order.

    With the m finite p-values sorted ascending, p_(1) <= ... <= p_(m)::

        q_(i) = min_{j >= i} min(1, m * p_(j) / j)

    NaN p-values (tests that could not be computed) stay NaN and do not count towards m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    q = np.full_like(p, np.nan)
    m = int(finite.sum())
    if m == 0:
        return q
    order = np.argsort(p[finite], kind="mergesort")
    ranked = p[finite][order] * m / np.arange(1, m + 1)
    monotone = np.minimum.accumulate(ranked[::-1])[::-1]
    finite_q = np.empty(m)
    finite_q[order] = np.minimum(monotone, 1.0)
    q[finite] = finite_q
    return q
