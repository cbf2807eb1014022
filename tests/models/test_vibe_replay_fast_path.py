"""The replay benchmark's fast path (``benchmarks/bench_vibe_replay.py``: the seed distribution from per-speaker
counts) decides as the gate does: on a small design, from the gate's own answers of seed 0, it gives every case's
nTVD, permutation p, BH q and verdict under both threshold sets; and its tau filter is the gate's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.checks.ntvd.tables import group_table
from harness.data.cremad_design import build_design_corpus
from harness.metrics.ntvd import count_tensor, frequent_values
from harness.models.sim_replay import replay_cells

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_vibe_replay.py"
SPECS = ("sim:vibe-desta", "sim:vibe-qwen2-5-omni-3b")
PERMUTATIONS = 199


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_vibe_replay", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gates(bench, tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay")
    manifest = build_design_corpus(folder / "corpus", speakers={"female": 6, "male": 7}, sentences=4, emotions=2)
    cache = str(folder / "cache")
    built = [
        bench.replay_gate(SPECS, manifest, thresholds, cache, PERMUTATIONS, 0)
        for thresholds in (None, bench.DEFAULT_VIBE_THRESHOLDS)
    ]
    return manifest, built


def test_the_fast_path_gives_the_gates_numbers_and_verdicts_for_its_answers(bench, gates):
    _, built = gates
    tables = {}
    for gate in built:
        judge = bench.FastJudge(gate)
        outcomes = bench.run_gate(gate)
        tensors = {
            judge.key(case): count_tensor(
                tables.setdefault(
                    judge.key(case), group_table(gate.context, case.model, case.corpus, case.variant, case.dimension)
                ),
                judge.thresholds[case].tau,
            )
            for case in judge.cases
        }
        fast = judge.decide(judge.measure(tensors, 0, PERMUTATIONS))
        assert set(fast) == set(outcomes) and len(fast) == 2 * 5
        for key, outcome in outcomes.items():
            assert fast[key].verdict == outcome.verdict, (key, fast[key], outcome)
            assert fast[key].value == pytest.approx(outcome.value, abs=1e-9)
            assert fast[key].p == outcome.p and fast[key].q == pytest.approx(outcome.q, abs=1e-12)
    assert {o.verdict for o in bench.run_gate(built[1]).values()} >= {"FAIL"}


def test_the_tau_filter_is_the_gates(gates):
    _, built = gates
    gate = built[0]
    case = next(c for c in gate.cases("ntvd") if c.variant == "advisory")
    table = group_table(gate.context, case.model, case.corpus, case.variant, case.dimension)
    for tau in (10, 14):
        direct, filtered = count_tensor(table, tau), frequent_values(count_tensor(table, 1), tau)
        assert np.array_equal(direct.counts, filtered.counts) and list(direct.values) == list(filtered.values)
        assert list(direct.attributes) == list(filtered.attributes)
        assert np.array_equal(direct.attribute_of_column, filtered.attribute_of_column)


def test_drawn_counts_have_the_corpus_design(bench, gates):
    manifest, built = gates
    voices = bench.corpus_voices(manifest)
    cells = [c for c in replay_cells() if f"sim:vibe-{c.published.slug}" in SPECS]
    tensors = bench.draw_tensors(voices, cells, 3, bench.FastJudge(built[0]).taus())
    assert len(tensors) == 10 and set(voices.groups) == {"female", "male"}
    for key, tensor in tensors.items():
        slots = sum(len(slots) for slots in bench.REPLAY_POOLS[key.split("|")[1]].values())
        assert tensor.counts.shape[0] == 13 and tensor.counts.sum() <= 13 * 8 * slots
    # the pitch the simulators hear puts every female voice high and every male voice low
    assert ((voices.pitch_z > 0) == (voices.groups[voices.speaker_group[voices.speaker_of_answer]] == "female")).all()
