"""The datasheet's age-counterfactual section (issue 61): written from ``bench_age_counterfactual.py``'s JSON where
the logs hold it, absent (the sheet as before) where they do not."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench():
    spec = importlib.util.spec_from_file_location("bench_datasheet", REPO / "benchmarks" / "bench_datasheet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AGE = {
    "design": {"recordings": 160, "speakers": {"elderly": 10, "young": 10}, "admitted": 150, "permutations": 9999,
               "alpha": 0.05, "max_ntvd": 20.0, "age_effect_scale": 2.0, "manipulation": []},
    "rows": [{"model": "sim:fair", "runs": 100, "failed": 1, "ci": [0.0003, 0.054], "per_task": {}},
             {"model": "sim:age-effect", "runs": 100, "failed": 99, "ci": [0.946, 0.9997], "per_task": {}}],
}  # fmt: skip


def test_the_age_rows_enter_the_sheet_and_its_markdown_only_where_logged(tmp_path):
    module = bench()
    assert module.age_section(tmp_path) == {}
    (tmp_path / module.AGE_JSON).write_text(json.dumps(AGE))
    sheet = module.age_section(tmp_path)
    lines = module.age_lines(sheet)
    assert "## The age counterfactual" in lines
    assert "| sim:fair | 100 | 1 | 0%-5% |" in lines and "| sim:age-effect | 100 | 99 | 95%-100% |" in lines
    assert any("speakers elderly 10, young 10; 150 admitted" in line for line in lines)
    assert module.age_lines({}) == []
