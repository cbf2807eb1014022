"""Input validation of the GLMM fits (the documented contract of :mod:`harness.metrics.glmm`), and the
small linear-algebra helpers they share."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

_RANK_TOLERANCE = 1e-13


def _as_design(X, column_names, label: str) -> tuple[np.ndarray, list[str]]:
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns] if column_names is None else list(column_names)
        values = X.to_numpy(dtype=float)
    else:
        values = np.asarray(X, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        names = list(column_names) if column_names is not None else [f"x{k}" for k in range(values.shape[1])]
    if values.ndim != 2:
        raise ValueError(f"{label} must be two-dimensional, got shape {values.shape}")
    if len(names) != values.shape[1]:
        raise ValueError(f"{label} has {values.shape[1]} columns but {len(names)} column names")
    if len(set(names)) != len(names):
        raise ValueError(f"{label} column names are not unique: {names}")
    bad = ~np.isfinite(values)
    if bad.any():
        columns = [names[k] for k in np.flatnonzero(bad.any(axis=0))]
        raise ValueError(f"{label} has {int(bad.sum())} NaN/inf values (columns {columns})")
    return values, names


def _as_vector(values, n: int, label: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{label} must be one-dimensional, got shape {arr.shape}")
    if arr.size != n:
        raise ValueError(f"{label} has length {arr.size} but the design has {n} rows")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label} has {int(np.sum(~np.isfinite(arr)))} NaN/inf values")
    return arr


def _as_cluster(cluster, n: int) -> np.ndarray:
    labels = pd.Series(cluster) if not isinstance(cluster, pd.Series) else cluster.reset_index(drop=True)
    if labels.size != n:
        raise ValueError(f"cluster has length {labels.size} but the design has {n} rows")
    if labels.isna().any():
        raise ValueError(f"cluster has {int(labels.isna().sum())} missing labels")
    if labels.nunique() < 2:
        raise ValueError("need at least two clusters to estimate a random-intercept SD")
    return labels.to_numpy()


def _check_counts(values: np.ndarray, label: str) -> None:
    if np.any(values < 0):
        raise ValueError(f"{label} has {int(np.sum(values < 0))} negative values")
    if np.any(values != np.round(values)):
        raise ValueError(f"{label} must hold integer counts; {int(np.sum(values != np.round(values)))} are not")


def _check_nagq(nagq: int) -> int:
    if int(nagq) != nagq or not 1 <= nagq <= 50:
        raise ValueError(f"nagq must be an integer in [1, 50], got {nagq!r}")
    return int(nagq)


def _warn_dropped(keep: np.ndarray) -> int:
    dropped = int(np.sum(~keep))
    if dropped:
        warnings.warn(f"dropped {dropped} rows with N = 0 (no reference words)", UserWarning, stacklevel=3)
    if not keep.any():
        raise ValueError("every row has N = 0")
    return dropped


def _check_design(design: np.ndarray, names: list[str], label: str) -> None:
    """Raise when the design is numerically rank-deficient, naming the columns of the linear dependency.

    Rank is read off the eigenvalues of the Gram matrix of the RMS-scaled columns: an eigenvalue below
    1e-13 of the largest (condition number of the scaled design above ~3e6) counts as a null direction;
    the columns loading on its eigenvector are reported.
    """
    scale = np.sqrt(np.mean(design**2, axis=0))
    zero = scale == 0
    if zero.any():
        raise ValueError(f"{label} has all-zero columns: {[names[k] for k in np.flatnonzero(zero)]}")
    if design.shape[0] < design.shape[1]:
        raise ValueError(f"{label} has more columns ({design.shape[1]}) than rows ({design.shape[0]})")
    scaled = design / scale
    eigenvalues, eigenvectors = np.linalg.eigh(_gram(scaled, scaled) / design.shape[0])
    null = eigenvalues < eigenvalues[-1] * _RANK_TOLERANCE
    if null.any():
        involved = np.any(np.abs(eigenvectors[:, null]) > 1e-4, axis=1)
        columns = [names[k] for k in np.flatnonzero(involved)]
        rank = int(np.sum(~null))
        raise ValueError(f"{label} is rank-deficient (rank {rank} of {design.shape[1]}); collinear columns: {columns}")


def _check_separation(
    design: np.ndarray, names: list[str], y: np.ndarray, trials: np.ndarray, is_binomial: np.ndarray, label: str
) -> None:
    """Raise when an indicator column's level has no events (or only events): its MLE is infinite."""
    if np.all(y == 0):
        raise ValueError(f"{label}: the outcome is zero in every row; no effect is estimable")
    binomial = bool(is_binomial.all())
    if binomial and np.all(y == trials):
        raise ValueError(f"{label}: every trial is an event; no effect is estimable")
    for k, name in enumerate(names):
        column = design[:, k]
        if np.all(column == column[0]) or not np.all((column == 0) | (column == 1)):
            continue
        for level in (1.0, 0.0):
            rows = column == level
            events = y[rows].sum()
            if events == 0:
                raise ValueError(
                    f"{label}: no events in the {int(rows.sum())} rows where {name!r} = {level:g}; "
                    f"its coefficient diverges (perfect separation). Merge or drop that level."
                )
            if binomial and events == trials[rows].sum():
                raise ValueError(
                    f"{label}: every trial is an event in the {int(rows.sum())} rows where {name!r} = "
                    f"{level:g}; its coefficient diverges (perfect separation)."
                )


def _gram(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left' right`` for tall matrices without BLAS: multithreaded OpenBLAS gemm on a tall-skinny product
    was measured 400x slower than this on an oversubscribed 2-core runner."""
    return np.einsum("ij,ik->jk", left, right)


def _standard_errors(cov: np.ndarray, p: int) -> np.ndarray:
    variance = np.diag(cov)[:p]
    return np.sqrt(np.where(variance >= 0, variance, np.nan))
