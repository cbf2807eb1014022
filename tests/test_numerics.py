"""The CPU numerics contract of the demo models (harness/models/numerics.py) and the drift measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.models import build_backend
from harness.models.cascade import DEMO_ASR, DEMO_LLM, DEMO_MODEL, join_output
from harness.models.numerics import CPU_NUMERICS, NUMERICS_ENV, compute_environment, contract_applies, pin_cpu_numerics
from harness.reproducibility import TOLERANCE, output_drift

REPO = Path(__file__).resolve().parents[1]
needs_contract = pytest.mark.skipif(not contract_applies(), reason="the CPU numerics contract needs x86-64 with AVX2")


def run_python(code: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in CPU_NUMERICS and key != NUMERICS_ENV}
    env.update(environment)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@needs_contract
def test_building_a_demo_backend_pins_the_contract_and_warns_about_what_it_replaces(monkeypatch):
    for name in CPU_NUMERICS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CT2_FORCE_CPU_ISA", "AVX512")
    with pytest.warns(UserWarning, match=r"CT2_FORCE_CPU_ISA='AVX512' in the environment is replaced by 'AVX2'"):
        build_backend(DEMO_ASR)
    assert {name: os.environ[name] for name in CPU_NUMERICS} == CPU_NUMERICS


def test_the_contract_enters_both_demo_fingerprints_and_native_numerics_change_them(monkeypatch):
    monkeypatch.delenv(NUMERICS_ENV, raising=False)
    pinned = {spec: build_backend(spec).fingerprint() for spec in (DEMO_ASR, DEMO_LLM, DEMO_MODEL)}
    monkeypatch.setenv(NUMERICS_ENV, "native")
    native = {spec: build_backend(spec).fingerprint() for spec in (DEMO_ASR, DEMO_LLM, DEMO_MODEL)}
    assert all(pinned[spec] != native[spec] for spec in pinned)
    monkeypatch.setenv(NUMERICS_ENV, "fast")
    with pytest.raises(Exception, match=f"{NUMERICS_ENV} must be 'contract' or 'native'"):
        build_backend(DEMO_ASR)


@needs_contract
def test_mkl_reports_the_pinned_branch_in_a_fresh_process():
    pytest.importorskip("torch")
    code = (
        "import json, warnings; from harness.models import build_backend; build_backend('smollm2:135m-instruct');"
        "import torch; from harness.models.numerics import engines_in_force; print(json.dumps(engines_in_force()))"
    )
    finished = run_python(code, MKL_CBWR="AVX512")
    assert finished.returncode == 0, finished.stderr
    in_force = json.loads(finished.stdout.strip().splitlines()[-1])
    assert in_force["torch_mkl_branch"] == "AVX2,STRICT"
    assert in_force["torch_cpu_capability"] == "AVX2"


@needs_contract
def test_torch_used_before_the_pin_is_refused_with_a_clear_error():
    pytest.importorskip("torch")
    code = (
        "import torch; a = torch.ones(64, 64); (a @ a).sum();"
        "from harness.models.numerics import check_cpu_numerics\n"
        "try:\n    check_cpu_numerics('smollm2:135m-instruct', 'torch')\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)"
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr
    assert "ModelError smollm2:135m-instruct: this process initialised torch before the CPU numerics contract" in finished.stdout
    assert "fresh process" in finished.stdout


def test_compute_environment_describes_the_machine_and_the_contract():
    environment = compute_environment()
    assert environment["cpu"]["cpus"] == os.cpu_count()
    assert environment["contract"]["settings"] in (CPU_NUMERICS, "native")
    assert set(environment["environment"]) >= set(CPU_NUMERICS)
    assert json.loads(json.dumps(environment)) == environment


def test_pinning_is_a_no_op_where_the_contract_is_switched_off(monkeypatch):
    monkeypatch.setenv(NUMERICS_ENV, "native")
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    pin_cpu_numerics("test")
    assert os.environ["MKL_CBWR"] == "AUTO"


# ------------------------------------------------------------------------------------------- drift


def test_identical_outputs_have_no_drift():
    outputs = [join_output("the bus leaves at seven", "Department: shoes\nBudget: low"), "the bus leaves", "A"]
    drift = output_drift(outputs, outputs, ["personal_shopper", None, None])
    assert (drift.identical, drift.transcript_wer, drift.fields_identical, drift.differing) == (1.0, 0.0, 1.0, ())
    assert drift.within(None) and drift.within(TOLERANCE)


def test_drift_counts_outputs_transcript_words_and_fields_by_hand():
    shipped = [
        join_output("the bus leaves at seven", "Department: shoes\nBudget: low\nBuying trigger: late night\nVibe: calm"),
        "we met on the second floor",
        join_output("i sew", "B"),
    ]
    regenerated = [
        join_output("the bus leaves at heaven", "Department: shoes\nBudget: high\nBuying trigger: late night\nVibe: calm"),
        "we met on the second floor",
        join_output("i sew", "C"),
    ]
    drift = output_drift(shipped, regenerated, ["personal_shopper", None, None])
    # Outputs: 1 of 3 identical. Transcripts: "seven" -> "heaven" is 1 substitution in 5 + 6 + 2 reference words.
    assert drift.identical == pytest.approx(1 / 3)
    assert drift.transcripts == 3
    assert drift.transcript_wer == pytest.approx(1 / 13)
    # Fields of personal_shopper: 4 attributes, the budget differs.
    assert (drift.fields, drift.fields_identical) == (4, 0.75)
    assert not drift.within(None)
    assert "33.3% of 3 outputs identical" in drift.summary() and "seven" in drift.summary()


def test_drift_refuses_mismatched_or_empty_inputs():
    with pytest.raises(ValueError, match="2 shipped, 1 regenerated and 2 task entries"):
        output_drift(["a", "b"], ["a"], [None, None])
    with pytest.raises(ValueError, match="no outputs"):
        output_drift([], [], [])
