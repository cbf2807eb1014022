"""Models share a device in turn (:mod:`harness.models.residency`): a fake engine records every load and release,
and no two engines are alive on a device where their memory shares do not fit together."""

from __future__ import annotations

import pytest

import harness.generation.cached_model as cached_model
from harness.cache import OutputCache
from harness.core.errors import ModelError
from harness.core.requests import DecodingParams, GenerationRequest
from harness.gate import validate_models
from harness.gate.config import GateConfig
from harness.generation.cached_model import CachedModel
from harness.models import residency as residency_module
from harness.models.base import Backend, ComposedOfStages, StageFactory
from harness.models.residency import (
    DEVICE_BUDGET,
    PlacementError,
    Residency,
    check_backend_placement,
    memory_shares,
)

DECODING = DecodingParams(max_new_tokens=4)


class EngineLedger:
    """Every load and release of the fake engines, and the shares alive per device at each load."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.alive: dict[str, float] = {}
        self.peak = 0.0

    def load(self, spec: str, share: float) -> None:
        self.alive[spec] = share
        self.peak = max(self.peak, sum(self.alive.values()))
        self.events.append(("load", spec))

    def release(self, spec: str) -> None:
        del self.alive[spec]
        self.events.append(("release", spec))


class FakeEngine:
    def __init__(self, spec: str, ledger: EngineLedger) -> None:
        self.spec = spec
        self.ledger = ledger

    def generate(self, requests, params):
        return [f"{self.spec}: {request.prompt}" for request in requests]

    def release(self) -> None:
        self.ledger.release(self.spec)


class FakeEngineBackend(Backend, ComposedOfStages):
    """A model on ``cuda`` whose loads take a memory share, as vLLM's does; with ``stages``, a composite whose stages
    the test builds itself (:meth:`compose` keeps nothing)."""

    def __init__(self, spec: str, ledger: EngineLedger, stages: dict | None = None) -> None:
        self.spec = spec
        self.ledger = ledger
        self.stages = stages or {}

    def fingerprint(self) -> str:
        return f"fake:{self.spec}"

    def memory_device(self) -> str:
        return "cuda"

    def resident_stages(self) -> dict:
        return self.stages

    def compose(self, stage: StageFactory) -> None:
        return None

    def load(self, memory_share: float | None = None) -> FakeEngine:
        self.ledger.load(self.spec, memory_share)
        return FakeEngine(self.spec, self.ledger)


@pytest.fixture
def ledger(monkeypatch):
    ledger = EngineLedger()
    monkeypatch.setattr(cached_model, "build_backend", lambda spec, options=None: FakeEngineBackend(spec, ledger))
    return ledger


def ask(model: CachedModel, prompt: str) -> list[str]:
    return model.generate([GenerationRequest(prompt)], label="test")


def test_the_extractor_loads_only_after_the_model_under_test_is_released(ledger, tmp_path):
    cache = OutputCache(tmp_path)
    residency = Residency()
    under_test = CachedModel("vllm:/ckpts/1.3", cache, DECODING, progress=False, residency=residency)
    extractor = CachedModel("vllm:Qwen/Qwen3-8B", cache, DECODING, progress=False, residency=residency)
    judge = CachedModel("vllm:judge", cache, DECODING, progress=False, residency=residency)
    ask(under_test, "answer")
    ask(extractor, "extract")
    ask(judge, "judge")
    assert ledger.events == [
        ("load", "vllm:/ckpts/1.3"),
        ("release", "vllm:/ckpts/1.3"),
        ("load", "vllm:Qwen/Qwen3-8B"),
        ("release", "vllm:Qwen/Qwen3-8B"),
        ("load", "vllm:judge"),
    ]
    assert ledger.peak == pytest.approx(DEVICE_BUDGET)
    loads = residency.to_json()
    assert [(load["spec"], load["released_for"]) for load in loads] == [
        ("vllm:/ckpts/1.3", "vllm:Qwen/Qwen3-8B"),
        ("vllm:Qwen/Qwen3-8B", "vllm:judge"),
        ("vllm:judge", None),
    ]
    assert loads[-1]["released_s"] is None and all(load["device"] == "cuda" for load in loads)
    ask(under_test, "answer")  # cached: nothing loads again
    assert ledger.events[-1] == ("load", "vllm:judge")
    ask(under_test, "a new question")  # a miss: the model under test loads again, in the judge's place
    assert ledger.events[-2:] == [("release", "vllm:judge"), ("load", "vllm:/ckpts/1.3")]
    residency.release_all()
    assert ledger.alive == {}


def test_stated_shares_that_fit_stay_resident_together(ledger, tmp_path):
    cache = OutputCache(tmp_path)
    residency = Residency()
    first = CachedModel("a", cache, DECODING, {"gpu_memory_utilization": 0.4}, progress=False, residency=residency)
    second = CachedModel("b", cache, DECODING, {"gpu_memory_utilization": 0.45}, progress=False, residency=residency)
    ask(first, "x")
    ask(second, "y")
    assert ledger.events == [("load", "a"), ("load", "b")]
    assert ledger.alive == {"a": 0.4, "b": 0.45}


def test_a_composite_model_s_stages_split_the_budget_and_are_never_released_for_each_other(ledger, tmp_path):
    stages = {"asr": {}, "llm": {"gpu_memory_utilization": 0.5}}
    residency = Residency()
    parent = CachedModel("composite", OutputCache(tmp_path), DECODING, progress=False, residency=residency)
    parent.stage_shares = memory_shares(stages)
    asr = parent._stage(cached_model.StageSpec("asr", DECODING), 8)
    llm = parent._stage(cached_model.StageSpec("llm", DECODING, {"gpu_memory_utilization": 0.5}), 8)
    ask(asr, "hear")
    ask(llm, "answer")
    assert ledger.alive == {"asr": pytest.approx(DEVICE_BUDGET - 0.5), "llm": 0.5}
    assert ("release", "asr") not in ledger.events


def test_memory_shares_split_what_the_stated_ones_leave():
    assert memory_shares({"a": {}, "b": {}}) == {"a": pytest.approx(0.45), "b": pytest.approx(0.45)}
    assert memory_shares({"a": {"gpu_memory_utilization": 0.6}, "b": {}, "c": {}}) == {
        "a": 0.6,
        "b": pytest.approx(0.15),
        "c": pytest.approx(0.15),
    }
    with pytest.raises(PlacementError, match=r"a 0.6, b 0.5: 1.1 of a budget of 0.9"):
        memory_shares({"a": {"gpu_memory_utilization": 0.6}, "b": {"gpu_memory_utilization": 0.5}})
    with pytest.raises(PlacementError, match="leaving nothing for c"):
        memory_shares({"a": {"gpu_memory_utilization": 0.9}, "c": {}})
    with pytest.raises(PlacementError, match=r"a: gpu_memory_utilization must be a number in \(0, 1\], got 1.5"):
        memory_shares({"a": {"gpu_memory_utilization": 1.5}})


def test_a_model_that_needs_more_gpus_than_the_process_sees_cannot_be_placed():
    backend = FakeEngineBackend("vllm:big", EngineLedger())
    check_backend_placement(
        backend, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, gpus=["0", "1", "2", "3"]
    )
    with pytest.raises(PlacementError, match=r"vllm:big: needs 4 GPUs .* this process sees 2 \(0, 1\)"):
        check_backend_placement(backend, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, gpus=["0", "1"])
    with pytest.raises(PlacementError, match="tensor_parallel_size must be a whole number >= 1, got 0"):
        check_backend_placement(backend, {"tensor_parallel_size": 0}, gpus=["0"])


def test_an_impossible_placement_stops_the_run_before_any_case(monkeypatch):
    """:func:`harness.gate.validate_models` runs when the gate is built; its ModelError is the plugin's exit 4."""
    monkeypatch.setattr(residency_module, "visible_gpus", lambda: ["0"])
    config = GateConfig(
        models=("vllm:big",),
        model_options={"vllm:big": {"tensor_parallel_size": 2}},
        model_options_source="--model-config models.yaml",
    )
    with pytest.raises(ModelError, match=r"--model-config models.yaml: vllm:big: needs 2 GPUs"):
        validate_models(config, lambda spec: FakeEngineBackend(spec, EngineLedger()))


def test_the_compute_row_says_who_shared_which_device_and_when_each_left():
    from harness.report import render_report
    from harness.results import parse_results

    from support.records import case, results_json

    run = results_json([case()])
    run["metadata"]["compute_environment"] = {
        "cpu": {"machine": "x86_64", "cpus": 2, "vendor": "GenuineIntel", "model_name": "Xeon", "flags": []},
        "contract": {"version": "2", "settings": "native"},
        "contract_applies": True,
        "in_force": {},
        "gpu": None,
    }
    clock = iter([0.0, 0.0, 1.5, 2.0, 2.25]).__next__
    residency = Residency(clock=clock)
    residency.admit("vllm:/ckpts/1.3", "cuda", 0.9, "vllm:/ckpts/1.3", lambda: None)
    residency.admit("vllm:Qwen/Qwen3-8B", "cuda", 0.9, "vllm:Qwen/Qwen3-8B", lambda: None)
    residency.admit("sim:fair", "cpu", 0.0, "sim:fair", lambda: None)
    run["metadata"]["residency"] = residency.to_json()
    html = render_report(parse_results(run))
    assert (
        "Shared cuda in turn: vllm:/ckpts/1.3 (memory share 0.9, loaded at 0.0 s, released at 1.5 s for "
        "vllm:Qwen/Qwen3-8B); vllm:Qwen/Qwen3-8B (memory share 0.9, loaded at 2.0 s, resident to the end)"
    ) in html
    assert "Shared cpu" not in html


@pytest.mark.parametrize(
    ("worker", "need", "expected"),
    [("gw0", 2, ["0", "1"]), ("gw1", 2, ["2", "3"]), ("gw2", 2, ["0", "1"]), ("gw1", 4, ["0", "1", "2", "3"])],
)
def test_an_xdist_worker_claims_the_gpus_its_largest_model_needs(worker, need, expected):
    from harness.models.placement import assign_worker_gpus

    env = {"PYTEST_XDIST_WORKER": worker, "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert assign_worker_gpus(need, env) == expected
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(expected)


def test_an_xdist_worker_refuses_a_model_larger_than_the_visible_gpus():
    from harness.models.placement import assign_worker_gpus
    from harness.models.residency import largest_parallel_degree

    need = largest_parallel_degree(
        {
            "vllm:big": {"tensor_parallel_size": 4, "pipeline_parallel_size": 2},
            "sim:fair": {},
            "bad": {"tensor_parallel_size": 0},
        }
    )
    assert need == 8
    with pytest.raises(ValueError, match=r"gw0: a model needs 8 GPUs .* 4 are visible \(0, 1, 2, 3\)"):
        assign_worker_gpus(need, {"PYTEST_XDIST_WORKER": "gw0", "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
