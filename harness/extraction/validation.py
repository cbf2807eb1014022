"""Human validation of extracted attributes (VIBE §II-D, "Human validation", and Table I).

1. :func:`annotation_sample` draws ``n`` responses per stratum (model x task x dimension), seeded, among
   responses with at least one extracted value, and lists one row per extracted value with the response
   text and an empty ``annotator_agrees`` column; :func:`export_annotation_sample` writes it to CSV.
2. An annotator fills ``annotator_agrees`` with yes/no (or 1/0): does the value match the response?
3. :func:`read_annotations` reads the filled CSV back, checked against the exported sample, and
   :func:`agreement` gives the percentage of values judged correct per task and overall, with a 95% CI
   from a response-level bootstrap: judgments of one response are correlated, so whole responses are
   resampled (VIBE: 2,280 judgments in 600 responses, 97.2% [96.2, 98.1])::

       agreement = 100 * sum_r a_r / sum_r n_r      (a_r agreeing judgments among the n_r of response r)
       bootstrap: responses drawn with replacement, B times; CI = percentiles 2.5 and 97.5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.values import require_columns

RESPONSE_KEY = ("model", "task", "utterance_id")
DEFAULT_STRATA = ("model", "task", "dimension")
AGREES_COLUMN = "annotator_agrees"
ANSWERS = {"yes": True, "1": True, "no": False, "0": False}
CHECKED_COLUMNS = ("response_id", "task", "attribute", "value")


class AnnotationError(ValueError):
    """A filled annotation file cannot be used; the message names the file and the row."""


@dataclasses.dataclass(frozen=True)
class AgreementResult:
    """Agreement (percent) with 95% bootstrap CI; ``per_task`` has columns task, judgments, responses,
    agreement, ci_low, ci_high (Table I's columns); the overall figures are its last, ``overall`` row."""

    per_task: pd.DataFrame
    overall: float
    ci_low: float
    ci_high: float
    n_judgments: int
    n_responses: int
    n_bootstrap: int
    seed: int


def annotation_sample(
    responses: pd.DataFrame,
    values: pd.DataFrame,
    n_per_stratum: int = 5,
    seed: int = 0,
    strata: Sequence[str] = DEFAULT_STRATA,
) -> pd.DataFrame:
    """The rows to annotate: ``n_per_stratum`` responses per stratum (all when fewer), one row per value.

    ``responses``: one row per response with ``model, task, utterance_id, answer`` and the ``strata``
    columns. ``values``: the extracted values, ``model, task, utterance_id, attribute, value``. A response
    in two strata (one utterance judged on gender and on accent) may be drawn in both; it is listed once
    per draw, under one ``response_id`` per draw. The draw does not depend on the row order of
    ``responses``; a response's values keep their order in ``values``.
    """
    require_columns(responses, [*RESPONSE_KEY, "answer", *strata], "responses table")
    require_columns(values, [*RESPONSE_KEY, "attribute", "value"], "values table")
    if n_per_stratum < 1:
        raise ValueError(f"n_per_stratum must be >= 1, got {n_per_stratum}")
    key = list(RESPONSE_KEY)
    with_values = values[key].drop_duplicates()
    eligible = responses.merge(with_values, on=key, how="inner").sort_values([*strata, *key], kind="mergesort")
    rng = np.random.default_rng(seed)
    drawn = []
    for _, stratum in eligible.groupby(list(strata), sort=True):
        chosen = np.sort(rng.choice(len(stratum), size=min(n_per_stratum, len(stratum)), replace=False))
        drawn.append(stratum.iloc[chosen])
    if not drawn:
        raise ValueError("no response has an extracted value; there is nothing to annotate")
    sample = pd.concat(drawn, ignore_index=True)
    sample.insert(0, "response_id", [f"r{index:05d}" for index in range(len(sample))])
    response_columns = ["response_id", *dict.fromkeys([*strata, *key]), "answer"]
    rows = sample[response_columns].merge(values[[*key, "attribute", "value"]], on=key, how="inner", sort=False)
    rows = rows.sort_values(["response_id"], kind="mergesort", ignore_index=True)
    rows.insert(0, "row_id", [f"v{index:06d}" for index in range(len(rows))])
    rows[AGREES_COLUMN] = ""
    return rows


def export_annotation_sample(sample: pd.DataFrame, path: str | Path) -> Path:
    """Write the sample to CSV (UTF-8) for annotation; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sample.to_csv(path, index=False)
    return path


def read_annotations(path: str | Path, expected: pd.DataFrame | str | Path | None = None) -> pd.DataFrame:
    """Read a filled annotation CSV; ``annotator_agrees`` becomes a boolean column.

    Errors name the file and the CSV line: a missing column, a duplicated or unknown ``row_id`` (one that
    is not in ``expected``, the exported sample or its path), a row whose response, task, attribute or
    value differ from the exported one, a row of ``expected`` that is absent, and an ``annotator_agrees``
    other than yes/no/1/0 (case and surrounding spaces ignored), empty included.
    """
    path = Path(path)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise AnnotationError(f"{path}: cannot be read as CSV ({exc})") from exc
    missing = [column for column in ("row_id", *CHECKED_COLUMNS, AGREES_COLUMN) if column not in table.columns]
    if missing:
        raise AnnotationError(f"{path}: missing column(s) {missing}")
    line = pd.Series(np.arange(len(table)) + 2, index=table.index)
    duplicated = table.index[table["row_id"].duplicated()]
    if len(duplicated):
        raise AnnotationError(
            f"{path}, line {line[duplicated[0]]}: row_id {table.at[duplicated[0], 'row_id']!r} appears twice"
        )
    if expected is not None:
        _check_against_sample(table, _as_frame(expected), path, line)
    answers = table[AGREES_COLUMN].str.strip().str.lower().map(ANSWERS)
    bad = table.index[answers.isna()]
    if len(bad):
        raise AnnotationError(
            f"{path}, line {line[bad[0]]} (row_id {table.at[bad[0], 'row_id']!r}): {AGREES_COLUMN} is "
            f"{table.at[bad[0], AGREES_COLUMN]!r}; expected yes, no, 1 or 0"
        )
    return table.assign(**{AGREES_COLUMN: answers.astype(bool)})


def _as_frame(expected: pd.DataFrame | str | Path) -> pd.DataFrame:
    if isinstance(expected, pd.DataFrame):
        return expected.astype({column: str for column in ("row_id", *CHECKED_COLUMNS) if column in expected.columns})
    return pd.read_csv(expected, dtype=str, keep_default_na=False)


def _check_against_sample(table: pd.DataFrame, expected: pd.DataFrame, path: Path, line: pd.Series) -> None:
    reference = expected.set_index("row_id")
    known = table["row_id"].isin(reference.index)
    if not known.all():
        index = table.index[~known][0]
        raise AnnotationError(
            f"{path}, line {line[index]}: unknown row_id {table.at[index, 'row_id']!r} (not in the exported sample)"
        )
    for column in CHECKED_COLUMNS:
        differs = table[column].to_numpy() != reference.loc[table["row_id"], column].to_numpy()
        if differs.any():
            index = table.index[np.flatnonzero(differs)[0]]
            raise AnnotationError(
                f"{path}, line {line[index]} (row_id {table.at[index, 'row_id']!r}): {column} is {table.at[index, column]!r} "
                f"but the exported sample has {reference.at[table.at[index, 'row_id'], column]!r}"
            )
    absent = reference.index.difference(table["row_id"])
    if len(absent):
        raise AnnotationError(f"{path}: {len(absent)} exported row(s) are missing, e.g. row_id {absent[0]!r}")


def _bootstrap_ratio(
    agreeing: np.ndarray, judged: np.ndarray, n_bootstrap: int, rng: np.random.Generator
) -> np.ndarray:
    """Ratio sum(agreeing) / sum(judged) over B resamples of whole responses (multinomial weights)."""
    weights = rng.multinomial(len(judged), np.full(len(judged), 1.0 / len(judged)), size=n_bootstrap)
    return 100.0 * (weights @ agreeing) / (weights @ judged)


def agreement(
    annotations: pd.DataFrame, n_bootstrap: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> AgreementResult:
    """Per-task and overall agreement (VIBE Table I) with response-level bootstrap CIs (see module doc)."""
    require_columns(annotations, ["response_id", "task", AGREES_COLUMN], "annotations table")
    if annotations.empty:
        raise ValueError("annotations table has no rows")
    if not annotations[AGREES_COLUMN].isin([True, False]).all():
        raise ValueError(f"{AGREES_COLUMN} must be boolean; read the file with read_annotations")
    per_response = (
        annotations.groupby(["task", "response_id"], sort=True)[AGREES_COLUMN].agg(["sum", "size"]).reset_index()
    )
    rng = np.random.default_rng(seed)
    tail = 100.0 * (1.0 - confidence) / 2.0
    rows = []
    for task, responses in [*per_response.groupby("task", sort=True), ("overall", per_response)]:
        agreeing = responses["sum"].to_numpy(dtype=float)
        judged = responses["size"].to_numpy(dtype=float)
        low, high = np.percentile(_bootstrap_ratio(agreeing, judged, n_bootstrap, rng), [tail, 100.0 - tail])
        rows.append((task, int(judged.sum()), len(responses), 100.0 * agreeing.sum() / judged.sum(), low, high))
    per_task = pd.DataFrame(rows, columns=["task", "judgments", "responses", "agreement", "ci_low", "ci_high"])
    overall = per_task.iloc[-1]
    return AgreementResult(
        per_task=per_task,
        overall=float(overall["agreement"]),
        ci_low=float(overall["ci_low"]),
        ci_high=float(overall["ci_high"]),
        n_judgments=int(overall["judgments"]),
        n_responses=int(overall["responses"]),
        n_bootstrap=n_bootstrap,
        seed=seed,
    )
