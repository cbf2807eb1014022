"""docs/datasheet.md states what docs/datasheet.json holds (``benchmarks/bench_datasheet.py`` writes both), and
the README points to it (issue 57: every figure from a command that regenerates it)."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_datasheet_markdown_is_its_json_and_its_targets_hold():
    spec = importlib.util.spec_from_file_location("bench_datasheet", REPO / "benchmarks" / "bench_datasheet.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    sheet = json.loads((REPO / "docs" / "datasheet.json").read_text())
    assert (REPO / "docs" / "datasheet.md").read_text() == bench.markdown(sheet)
    assert all(row["share"] >= 0.75 for row in sheet["detectable"]["rows"])  # each family at its stated effect
    assert (
        sheet["sim:fair"]["whole"]["failed"] == 0
        and sheet["sim:biased"]["whole"]["failed"] == sheet["sim:biased"]["whole"]["runs"]
    )
    assert "docs/datasheet.md" in (REPO / "README.md").read_text()
