"""The run's model pool (:mod:`harness.gate.model_pool`): a gate builds each named model's backend once, whoever asks
for it (the check of the named models before any case, the VIBE protocol, the cached model); the cached model
answers with that very backend; a composite model's transcription stage is made once; and a planner handed to the
pool reaches the models made before it and after it."""

from collections import Counter

import harness.gate.model_pool as model_pool
from harness.gate import Gate, GateConfig
from harness.generation.request_plan import Planner
from harness.models import build_backend
from harness.models.cascade import DEMO_MODEL


def counting_builds(monkeypatch) -> Counter:
    built: Counter = Counter()

    def build(spec, options=None):
        built[spec] += 1
        return build_backend(spec, options)

    monkeypatch.setattr(model_pool, "build_backend", build)
    return built


def test_a_gate_builds_each_named_models_backend_once(monkeypatch, tmp_path):
    built = counting_builds(monkeypatch)
    gate = Gate(GateConfig(models=("sim:fair", "sim:biased"), judge="sim:fair", cache_dir=str(tmp_path)))
    context = gate.context
    _ = context.vibe  # reads what each model declares
    models = {spec: context.model(spec) for spec in ("sim:fair", "sim:biased")}
    assert built == Counter({"sim:fair": 1, "sim:biased": 1})
    assert all(model.backend is context.pool.backend(spec) for spec, model in models.items())
    assert context.model("sim:fair") is models["sim:fair"] and built["sim:fair"] == 1


def test_a_cascades_transcription_stage_is_made_once_and_listed_as_a_stage(tmp_path):
    gate = Gate(GateConfig(models=(DEMO_MODEL,), cache_dir=str(tmp_path), offline=True))
    pool = gate.context.pool
    stage, prompt = pool.transcriber(DEMO_MODEL)
    assert prompt == "" and pool.transcriber(DEMO_MODEL)[0] is stage
    assert list(pool.fingerprints()) == [DEMO_MODEL] and list(pool.fingerprints(stages=True)) == [stage.spec]
    assert pool.all_models() == [pool.model(DEMO_MODEL), stage]


def test_a_planner_reaches_the_models_made_before_and_after_it(tmp_path):
    gate = Gate(GateConfig(models=("sim:fair", "sim:biased"), cache_dir=str(tmp_path)))
    pool = gate.context.pool
    before = pool.model("sim:fair")
    planner = Planner(tmp_path / "plan.parquet.audio")
    pool.planner = planner
    assert before.planner is planner and pool.model("sim:biased").planner is planner
