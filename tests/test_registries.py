"""Contract tests over every registry entry: each satisfies its protocol, and what it declares resolves to it.

A new check (with its record kind and report view), backend, architecture, task or corpus loader is one module and one registry line; these tests
are what that line must satisfy.
"""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from harness.checks import CHECKS, Case, Check, get_check
from harness.checks.base import CheckContext
from harness.data.loaders import LOADERS
from harness.gate import Gate, GateConfig
from harness.models import BACKENDS, build_backend
from harness.models.base import Backend
from harness.models.cascade import DEMO_MODEL
from harness.models.hf_arch import ARCHITECTURES, MODEL_TYPES, architecture_for, load_adapter
from harness.models.hf_arch.base import AudioLMAdapter
from harness.records import RECORD_TYPES
from harness.report.views import VIEWS
from harness.tasks import TASKS
from harness.tasks.base import PROMPTS_DIR
from harness.thresholds import ThresholdSchema

REPO = Path(__file__).resolve().parents[1]


def registered(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> CheckContext:
    config = GateConfig(models=("sim:fair",), judge="sim:fair", cache_dir=str(tmp_path_factory.mktemp("cache")), progress=False)
    return Gate(config).pipeline


def gate_test_functions() -> dict[str, set[str]]:
    """Fixture names each gate module's test functions take."""
    fixtures: dict[str, set[str]] = {}
    for path in sorted((REPO / "harness" / "gate_tests").glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                fixtures[node.name] = {arg.arg for arg in node.args.args}
    return fixtures


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_every_check_is_a_check_with_cases_a_schema_a_view_and_a_gate_test(name, context):
    check = get_check(name)
    assert isinstance(check, Check) and check.name == name
    assert isinstance(check.schema, ThresholdSchema)
    assert set(check.variants(context)) >= {case.variant for case in check.cases(context) if case.variant is not None}
    cases = check.cases(context)
    assert cases, f"{name}: no case on the demo corpus and suite"
    assert all(isinstance(case, Case) and case.check == name and case.model == "sim:fair" for case in cases)
    assert len({case.id for case in cases}) == len(cases), f"{name}: case ids collide"
    assert name in RECORD_TYPES, f"{name}: no record kind in harness.records.RECORD_TYPES"
    assert name in VIEWS, f"{name}: no report view in harness.report.views.VIEWS"
    assert (REPO / "harness" / "report" / "templates" / "checks" / VIEWS[name].template).is_file()
    assert any(check.fixture in fixtures and "assess" in fixtures for fixtures in gate_test_functions().values()), (
        f"{name}: no gate test takes {check.fixture}"
    )


def test_every_view_and_record_kind_belongs_to_a_check():
    assert set(VIEWS) == set(CHECKS) == set(RECORD_TYPES)


@pytest.mark.parametrize("prefix", sorted(BACKENDS))
def test_every_backend_subclasses_the_protocol_and_builds_from_its_spec(prefix):
    backend_class = registered(BACKENDS[prefix])
    assert Backend in backend_class.__mro__
    assert list(inspect.signature(backend_class).parameters)[:3] == ["spec", "target", "options"]
    for capability in ("fingerprint", "load", "transcription_source", "compose"):
        assert callable(getattr(backend_class, capability))


@pytest.mark.parametrize("spec", ["sim:fair", "sim:biased", DEMO_MODEL])
def test_cheap_backends_fingerprint_without_loading(spec):
    backend = build_backend(spec)
    assert backend.spec == spec and backend.fingerprint() == build_backend(spec).fingerprint()


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_every_architecture_adapter_serves_exactly_the_model_types_that_resolve_to_it(name):
    adapter = load_adapter(name)
    assert isinstance(adapter, AudioLMAdapter) and adapter.name == name
    assert name in adapter.model_types
    assert all(architecture_for(model_type) == name for model_type in adapter.model_types)
    aliases = {model_type for model_type, architecture in MODEL_TYPES.items() if architecture == name}
    assert aliases <= set(adapter.model_types), f"{name}: MODEL_TYPES maps {aliases - set(adapter.model_types)} to it undeclared"
    assert adapter.model_class, f"{name}: no transformers model class"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_renders_its_prompt_and_asks_for_each_attribute(name):
    task = TASKS[name]
    assert task.name == name and (PROMPTS_DIR / task.prompt_file).is_file()
    prompt = task.render("The bus leaves at seven.")
    assert "$transcript" not in prompt
    assert task.attributes and len(set(task.attribute_names)) == len(task.attributes)
    for attribute in task.attributes:
        assert any(f"{label}:" in prompt.lower() for label in attribute.labels), f"{name}: the prompt never asks for {attribute.name!r}"


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_loader_is_its_modules_build_under_its_modules_name(name):
    build = LOADERS[name]
    assert importlib.import_module(build.__module__).NAME == name
    assert list(inspect.signature(build).parameters)[:2] == ["source", "output"]
