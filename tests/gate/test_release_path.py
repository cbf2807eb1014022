"""The release path as a decision rule (issue 23), end to end: the whole gate, every check, against a fair
baseline. ``benchmarks/bench_release_path.py`` measures it on 100 pairs per scenario; here 30."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from scipy.stats import binom

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_release_path.py"
PAIRS = 30


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_release_path", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_a_fair_checkpoint_against_its_fair_predecessor_rarely_fails(bench, tmp_path):
    """30 consecutive fair seeds, each gated against the one before: at most 4 fail. At a true rate of 5% that
    holds with probability 0.98; at 40%, with probability 0.002 (the issue measured 5 fails in 5)."""
    allowed = 4
    assert binom.cdf(allowed, PAIRS, 0.05) > 0.97 and binom.cdf(allowed, PAIRS, 0.40) < 0.002
    tallies = bench.release_path(PAIRS, 1, 0.5, 999, scenarios=("fair/fair",), report=lambda line: None)
    assert tallies["fair/fair"]["runs"] == PAIRS
    assert tallies["fair/fair"]["failed"] <= allowed, tallies["fair/fair"]["cases"]


@pytest.mark.slow
def test_a_biased_checkpoint_against_a_fair_predecessor_is_caught(bench, tmp_path):
    """30 seeds of the biased simulator against one fair baseline: at least 26 caught. At a true detection rate
    of 95% that holds with probability 0.98."""
    required = 26
    assert binom.sf(required - 1, PAIRS, 0.95) > 0.97
    caught = bench.failing_share("sim:biased", range(101, 101 + PAIRS), 100, str(tmp_path / "cache"))
    assert caught >= required
