"""The layers run one way (import-linter contracts in pyproject.toml), and a report renders from
results.json without loading the gate, a check's computation, a model or the model-fitting code: of the check
folders it loads only the records and the views."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.is_file(), "import-linter is missing: pip install -e '.[test]'"
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


RENDER = """
import json, sys
sys.path.insert(0, {tests!r})
from support.records import case, results
from harness.report import render_report

html = render_report(results([case(), case(task="story", value=5.0, q=0.3, passed=True), case(dimension="accent", passed=True)]))
assert "<h2>VIBE: nTVD by task</h2>" in html
print(json.dumps(sorted(sys.modules)))
"""


def test_a_report_renders_without_the_gate_models_or_fitting_code():
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", RENDER.format(tests=str(REPO / "tests"))],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert {"harness.checks.ntvd.view", "harness.checks.ntvd.record"} <= set(loaded)
    forbidden = (
        "harness.gate",
        "harness.models",
        "harness.generation",
        "harness.semantic",
        "harness.checks.base",
        "harness.metrics.glmm",
        "harness.metrics.wer_ratio",
        "statsmodels",
        "torch",
        "transformers",
    )
    computing = [
        name for name in loaded if name.startswith("harness.checks.") and name.rsplit(".", 1)[-1] in ("check", "tables")
    ]
    assert [name for name in loaded if name.startswith(forbidden)] == [] and computing == []
