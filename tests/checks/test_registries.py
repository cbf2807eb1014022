"""Contract tests over every registry entry: each satisfies its protocol, and what it declares resolves to it.

A new check (with its record kind and report view), backend, architecture, task or corpus loader is one module and one registry line; these tests
are what that line must satisfy.
"""

import dataclasses
import importlib
import importlib.util
import inspect
import json
from pathlib import Path

import pytest

from harness.checks import CHECKS, check_folder, get_check, record_types, views
from harness.checks.base import Check
from harness.checks.case import Case
from harness.checks.context import CheckContext
from harness.checks.view import CheckView
from harness.data.loaders import LOADERS
from harness.display.text import case_anchor
from harness.gate import Gate, GateConfig
from harness.gate_tests import EXTENSIONS, SHIPPED_MODULES
from harness.models import BACKENDS, build_backend
from harness.models.base import Backend
from harness.models.cascade import DEMO_MODEL
from harness.models.hf_arch import ARCHITECTURES, MODEL_TYPES, architecture_for, load_adapter
from harness.models.hf_arch.base import AudioLMAdapter
from harness.records import SCHEMA_VERSION, CaseRecord
from harness.report import render_report
from harness.report.summary import headline, margin
from harness.results import parse_results, record_from_json
from harness.tasks import TASKS
from harness.tasks.base import PROMPTS_DIR, SELF_REPORT
from harness.thresholds import ThresholdSchema
from tests.support.gate import decided_record

REPO = Path(__file__).resolve().parents[2]


def registered(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> Gate:
    config = GateConfig(
        models=("sim:fair",),
        judge="sim:fair",
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        progress=False,
        permutations=99,
    )
    return Gate(config)


@pytest.fixture(scope="module")
def context(gate) -> CheckContext:
    return gate.context


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_every_check_is_a_folder_with_its_check_record_view_and_template(name, context):
    folder = check_folder(name)
    assert {"check.py", "record.py", "view.py"} <= {path.name for path in folder.iterdir()}, (
        f"{name}: {folder} is not a check folder"
    )
    check = get_check(name)
    assert isinstance(check, Check) and check.name == name
    assert isinstance(check.schema, ThresholdSchema)
    assert set(check.variants(context)) >= {case.variant for case in check.cases(context) if case.variant is not None}
    cases = check.cases(context)
    assert cases, f"{name}: no case on the demo corpus and suite"
    assert all(isinstance(case, Case) and case.check == name and case.model == "sim:fair" for case in cases)
    assert len({case.id for case in cases}) == len(cases), f"{name}: case ids collide"
    assert issubclass(record_types()[name], CaseRecord)
    view = views()[name]
    assert isinstance(view, CheckView) and (folder / view.template).is_file()


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_every_view_words_measures_and_draws_a_record_of_its_kind(name, gate):
    """The view runs on a real record of its check: headline, margin, its template in a rendered report; and the
    record reads back from its JSON as the same record."""
    record = next(record for record in map(decided_record, map(gate.outcome, gate.cases(name))) if record is not None)
    assert type(record) is record_types()[name]
    assert record_from_json(json.loads(json.dumps(record.to_json())), name) == record
    words = headline(record)
    assert all(isinstance(words[key], str) and words[key] for key in ("value", "threshold", "uncertainty")), words
    assert margin(record) is None or isinstance(margin(record), float)
    legacy = dataclasses.replace(record, decision=None)
    without_decision = views()[name].headline_without_decision(legacy)
    assert all(isinstance(without_decision[key], str) for key in ("value", "threshold", "uncertainty"))
    assert headline(legacy) == without_decision
    summary = {"cases": 1, "passed": int(record.passed), "failed": int(not record.passed), "unmeasured": 0}
    html = render_report(
        parse_results(
            {
                "schema_version": SCHEMA_VERSION,
                "verdict": "pass",
                "summary": summary,
                "metadata": {},
                "cases": [record.to_json()],
            }
        )
    )
    assert views()[name].title in html and case_anchor(record) in html


def test_every_check_has_exactly_one_gate_function_and_fairness_tests_collects_them_all():
    """``harness.gate_tests`` makes one test function per registered check, and each module of ``fairness_tests/``
    holds every function of its gate module: a new check is collected without naming it anywhere."""
    made: dict[str, str] = {}
    for module_name in (*SHIPPED_MODULES, EXTENSIONS):
        gate_module = importlib.import_module(f"harness.gate_tests.test_{module_name}")
        for function in gate_module.__all__:
            assert function not in made, f"{function} is made by both test_{made[function]} and test_{module_name}"
            made[function] = module_name
            fixtures = list(inspect.signature(getattr(gate_module, function)).parameters)
            assert fixtures == [f"{function.removeprefix('test_')}_case", "assess"]
        path = REPO / "fairness_tests" / f"test_{module_name}.py"
        spec = importlib.util.spec_from_file_location(f"fairness_tests_{module_name}", path)
        collected = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(collected)
        assert all(
            getattr(collected, function, None) is getattr(gate_module, function) for function in gate_module.__all__
        ), path
    assert set(made) == {f"test_{name}" for name in CHECKS}


def test_the_gate_collects_one_test_per_check_from_fairness_tests(pytester):
    """Collected as a user runs it: every check's test function appears under fairness_tests/."""
    result = pytester.runpytest_subprocess(
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        str(REPO / "fairness_tests"),
        "--model",
        "sim:fair",
        "--judge",
        "sim:fair",
        f"--rootdir={REPO}",
        "-c",
        str(REPO / "pyproject.toml"),
    )
    output = result.stdout.str()
    for name in CHECKS:
        assert f"::test_{name}[" in output, f"test_{name} was not collected:\n{output[-2000:]}"


def test_views_and_record_kinds_are_derived_from_the_checks():
    assert list(views()) == list(CHECKS) == list(record_types())


@pytest.mark.parametrize("prefix", sorted(BACKENDS))
def test_every_backend_subclasses_the_protocol_and_builds_from_its_spec(prefix):
    backend_class = registered(BACKENDS[prefix])
    assert Backend in backend_class.__mro__
    assert list(inspect.signature(backend_class).parameters)[:3] == ["spec", "target", "options"]
    for capability in ("fingerprint", "load"):
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
    assert aliases <= set(adapter.model_types), (
        f"{name}: MODEL_TYPES maps {aliases - set(adapter.model_types)} to it undeclared"
    )
    assert adapter.model_class, f"{name}: no transformers model class"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_asks_for_each_attribute_in_prose_without_a_list_or_a_form(name):
    task = TASKS[name]
    assert task.name == name and (PROMPTS_DIR / task.prompt_file).is_file()
    prompt = task.render("The bus leaves at seven.")
    assert "$" not in prompt
    assert task.attributes and len(set(task.attribute_names)) == len(task.attributes)
    assert task.request("x", None).answer_form is None
    for attribute in task.attributes:
        assert any(label in prompt.lower() for label in attribute.labels), (
            f"{name}: the prompt never asks for {attribute.name!r}"
        )
        assert not any(f"{label}:" in prompt.lower() for label in attribute.labels), f"{name}: a Label: form"
        for option in attribute.options:
            assert f"{option}," not in prompt.lower() and f"({option}" not in prompt.lower(), f"{name}: an option list"
    assert "\n" not in prompt and "(" not in prompt, f"{name}: a list or block in the prompt"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_the_self_report_variant_asks_for_each_attribute_as_a_label_line(name):
    task = TASKS[name]
    prompt = task.render("The bus leaves at seven.", protocol=SELF_REPORT)
    assert "$" not in prompt and task.request("x", None, protocol=SELF_REPORT).answer_form == task.answer_form
    for attribute in task.attributes:
        assert any(f"{label}:" in prompt.lower() for label in attribute.labels), (
            f"{name}: the self-report form never asks for {attribute.name!r}"
        )


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_loader_module_declares_its_name_dimensions_output_and_build(name):
    module = LOADERS.load(name)
    assert module.NAME == name
    assert module.DIMENSIONS and all(isinstance(dimension, str) for dimension in module.DIMENSIONS)
    assert getattr(module, "PRODUCES", "corpus") in ("corpus", "suite")
    assert list(inspect.signature(module.build).parameters)[:2] == ["source", "output"]
