"""benchmarks/compare_rescore.py compares two checkouts' cached re-scores by their records: what differs between
checkouts by design (the run's volatile metadata, the path of the built-in thresholds file) is left out, and any
other difference is named by its JSON path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compare_module():
    spec = importlib.util.spec_from_file_location("compare_rescore", REPO / "benchmarks" / "compare_rescore.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def results(source: str, created: str, value: float) -> dict:
    return {
        "verdict": "fail",
        "metadata": {"created": created, "model_calls": {"sim:fair": 0}, "thresholds": {"source": source, "sha": "x"}},
        "cases": [{"id": "a", "value": 1.0}, {"id": "b", "value": value, "contrasts": [{"p": 0.5}]}],
    }


def test_checkouts_differing_only_by_design_have_the_same_records():
    compare = compare_module()
    main = compare.comparable_records(results("<built-in defaults: /main/harness/thresholds.yaml>", "t1", 2.0))
    branch = compare.comparable_records(results("<built-in defaults: /branch/harness/thresholds.yaml>", "t2", 2.0))
    assert compare.differences(main, branch) == []


def test_a_changed_record_is_named_by_its_path():
    compare = compare_module()
    main = compare.comparable_records(results("s", "t1", 2.0))
    branch = compare.comparable_records(results("s", "t1", 2.5))
    assert compare.differences(main, branch) == [".cases[1].value"]
    thresholds_changed = compare.comparable_records(
        {**results("s", "t1", 2.0), "metadata": {"thresholds": {"sha": "y"}}}
    )
    assert compare.differences(main, thresholds_changed) == [".metadata.thresholds.sha"]
