"""Every console script keeps one error contract (``harness.core.tools``; README, "What a failure means"): bad
input, an unknown option or a missing file is one ``ERROR: <tool>: ...`` line on stderr and exit 4, before any work.
A tool added to ``[project.scripts]`` must join :data:`BAD_INPUT` (issue 59)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
VOICES = ",".join(f"espeak-ng:en-us+{voice}@gender={group}" for voice, group in
                  [("f1", "female"), ("f2", "female"), ("m1", "male"), ("m2", "male")])  # fmt: skip
BAD_INPUT = {
    "lalm-fairness-cache": ["stats", "--cache-dir", "{tmp}/no-such-cache"],
    "lalm-fairness-report": ["{tmp}/no-such-results.json", "-o", "{tmp}/report.html"],
    "lalm-fairness-generate": ["--plan", "{tmp}/no-such-plan.parquet", "--out", "{tmp}/out.jsonl.gz"],
    "lalm-fairness-suite": ["build", "--items", "{tmp}/no-such-items.csv", "--out", "{tmp}/suite", "--no-wer-filter",
                            "--voices", VOICES],
}  # fmt: skip


def test_every_console_script_has_a_bad_input_case():
    assert set(SCRIPTS) == set(BAD_INPUT)


def run_tool(tool: str, argv: list[str]) -> int:
    module, _, function = SCRIPTS[tool].partition(":")
    main = getattr(importlib.import_module(module), function)
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


@pytest.mark.parametrize("tool", sorted(BAD_INPUT))
@pytest.mark.parametrize("kind", ["a missing input", "an unknown option"])
def test_bad_input_is_one_error_line_and_exit_4(tool, kind, tmp_path, capsys):
    argv = [argument.format(tmp=tmp_path) for argument in BAD_INPUT[tool]]
    if kind == "an unknown option":
        argv.append("--no-such-option")
    status = run_tool(tool, argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 4 and len(lines) == 1, (status, lines)
    assert lines[0].startswith(f"ERROR: {tool}: ")
    assert ("--no-such-option" if kind == "an unknown option" else "no-such-") in lines[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == [], "nothing is written"


def test_a_failed_cache_import_leaves_no_empty_cache(tmp_path, capsys):
    (tmp_path / "broken.jsonl.gz").write_bytes(b"not gzip")
    assert run_tool("lalm-fairness-cache", ["import", "--file", str(tmp_path / "broken.jsonl.gz"),
                                            "--cache-dir", str(tmp_path / "cache")]) == 4  # fmt: skip
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ERROR: lalm-fairness-cache: ") and not (tmp_path / "cache").exists()
