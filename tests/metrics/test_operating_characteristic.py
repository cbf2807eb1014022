"""The whole gate's operating characteristic (issue 16), by the statistics-level simulation of
``benchmarks/bench_operating_characteristic.py`` on the shipped demo design: a voice-blind simulator fails
the gate rarely enough to tell 5% from the 40% the issue measured, and the biased simulator is caught."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from scipy.stats import binom

from harness.metrics.multitest import DecisionRule

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_operating_characteristic.py"


@pytest.fixture(scope="module")
def simulation():
    spec = importlib.util.spec_from_file_location("bench_operating_characteristic", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def whole_gate_fails(simulation, preset: str, seed: int, sets) -> bool:
    _, comparisons = simulation.seed_cases("demo", preset, seed, 200, sets)
    rule = DecisionRule(alpha=0.05, family_size=int(comparisons["case"].nunique()))
    return any(
        rule.decide(rows["p"].tolist(), rows["relevant"].tolist()).failed for _, rows in comparisons.groupby("case")
    )


@pytest.mark.slow
def test_a_voice_blind_model_rarely_fails_the_whole_gate(simulation):
    """20 seeds: at most 3 false fails. At a true rate of 5% that holds with probability 0.98; at the 40%
    the issue measured, with probability 0.016 (the benchmark, `--seeds 100`, bounds the rate itself)."""
    seeds, allowed = 20, 3
    assert binom.cdf(allowed, seeds, 0.05) > 0.97 and binom.cdf(allowed, seeds, 0.40) < 0.02
    sets = simulation.load_sets()
    false_fails = sum(whole_gate_fails(simulation, "fair", seed, sets) for seed in range(1, seeds + 1))
    assert false_fails <= allowed


@pytest.mark.slow
def test_the_biased_simulator_is_caught(simulation):
    sets = simulation.load_sets()
    assert all(whole_gate_fails(simulation, "biased", seed, sets) for seed in range(1, 6))
