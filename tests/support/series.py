"""Synthetic nightly results.json files for the trend report's tests and benchmark.

Each night holds classification cases (one per model x dimension) whose per-speaker data barely move from
night to night, so that neighbouring nights never differ significantly, except where a regression is
injected: from that night on one group of that case answers far worse, and the paired bootstrap flags it.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SPEAKERS_PER_GROUP = 12
ITEMS_PER_SPEAKER = 10
START = datetime.datetime(2026, 10, 1, 2, 0, tzinfo=datetime.UTC)


def classification_case(model: str, dimension: str, night: int, worse: bool = False) -> dict[str, Any]:
    """A classification record; ``worse`` drops group ``b`` from about 80% to 30% correct."""
    speakers, groups, correct = [], [], []
    for group in ("a", "b"):
        for speaker in range(SPEAKERS_PER_GROUP):
            speakers.append(f"{dimension}/{group}{speaker:02d}")
            groups.append(group)
            correct.append(3 if worse and group == "b" else 8 + ((speaker + night) % 3 == 0))
    accuracy = {
        group: 100.0 * sum(c for c, g in zip(correct, groups) if g == group) / (SPEAKERS_PER_GROUP * ITEMS_PER_SPEAKER)
        for group in ("a", "b")
    }
    gap = abs(accuracy["a"] - accuracy["b"])
    value = sum(accuracy.values()) / 2
    case_id = f"{model}-{dimension}"
    return {
        "check": "classification",
        "id": case_id,
        "model": model,
        "model_fingerprint": f"{model}@night{night}",
        "corpus": "basis-synthetic",
        "dimension": dimension,
        "variant": None,
        "value": value,
        "threshold": {"min_accuracy": 50.0, "max_gap": 50.0},
        "passed": value >= 50.0,
        "message": f"{case_id}: synthetic",
        "paired_data": crossed_cells(speakers, groups, correct),
        "decision": {
            "alpha": 0.05,
            "family_size": 6,
            "correction": "within the case one comparison; Bonferroni across cases",
        },
        "per_label": [
            {
                "set": "synthetic",
                "label": group,
                "n": SPEAKERS_PER_GROUP * ITEMS_PER_SPEAKER,
                "correct": round(accuracy[group] * SPEAKERS_PER_GROUP * ITEMS_PER_SPEAKER / 100),
                "accuracy": accuracy[group],
            }
            for group in ("a", "b")
        ],
        "confusion": {},
        "gap": {"value": gap, "ci_low": max(gap - 4.0, 0.0), "ci_high": gap + 4.0, "best": "a", "worst": "b"},
        "n_answers": len(speakers) * ITEMS_PER_SPEAKER,
        "nodeid": f"fairness_tests/test_basis.py::test_classification[{case_id}]",
    }


def crossed_cells(speakers: Sequence[str], groups: Sequence[str], correct: Sequence[int]) -> dict[str, list]:
    """The per-(speaker, item) cells a classification record carries: each speaker answers the same
    ``ITEMS_PER_SPEAKER`` items and gets its first ``correct`` of them (in an order of its own) right."""
    rows: dict[str, list] = {"speaker": [], "group": [], "item": [], "weight": [], "value": []}
    for position, (speaker, group, right) in enumerate(zip(speakers, groups, correct)):
        order = [(item * 7 + position) % ITEMS_PER_SPEAKER for item in range(ITEMS_PER_SPEAKER)]
        for rank, item in enumerate(order):
            for column, value in zip(rows, (speaker, group, f"item{item:02d}", 1.0, 100.0 * (rank < right))):
                rows[column].append(value)
    return rows


def night_results(
    night: int,
    models: Sequence[str],
    dimensions: Sequence[str],
    regression: tuple[str, int] | None = None,
    absent: Sequence[str] = (),
    unmeasured: Sequence[str] = (),
) -> dict[str, Any]:
    """One night's results.json: ``regression`` = (case id, first worse night); ``absent`` case ids are left out,
    ``unmeasured`` ones recorded as errors."""
    cases = []
    for model in models:
        for dimension in dimensions:
            case_id = f"{model}-{dimension}"
            if case_id in absent:
                continue
            if case_id in unmeasured:
                cases.append(
                    {
                        "check": "error",
                        "id": case_id,
                        "nodeid": f"fairness_tests/test_basis.py::test_classification[{case_id}]",
                        "passed": False,
                        "message": "ModelError: the server answered 503",
                    }
                )
                continue
            worse = regression is not None and regression[0] == case_id and night >= regression[1]
            cases.append(classification_case(model, dimension, night, worse))
    failed = sum(not case["passed"] for case in cases)
    created = (START + datetime.timedelta(days=night)).isoformat(timespec="seconds")
    return {
        "schema_version": 1,
        "verdict": "fail" if failed else "pass",
        "summary": {"cases": len(cases), "passed": len(cases) - failed, "failed": failed},
        "metadata": {
            "created": created,
            "seed": 0,
            "permutations": 999,
            "models": {model: f"{model}@night{night}" for model in models},
        },
        "cases": cases,
    }


def write_series(
    folder: Path,
    nights: int,
    models: Sequence[str],
    dimensions: Sequence[str],
    regression: tuple[str, int] | None = None,
    changes: dict[int, dict[str, Sequence[str]]] | None = None,
) -> list[Path]:
    """``nights`` files ``night-NN.json`` in ``folder``; ``changes[night]`` gives that night's ``absent``/``unmeasured`` ids."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for night in range(nights):
        path = folder / f"night-{night:02d}.json"
        path.write_text(
            json.dumps(night_results(night, models, dimensions, regression, **(changes or {}).get(night, {})))
        )
        paths.append(path)
    return paths
