"""The CPU numerics contract of the demo models (harness/models/numerics.py) and the drift measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from harness.models import build_backend, numerics
from harness.models.cascade import DEMO_ASR, DEMO_LLM, DEMO_MODEL, join_output
from harness.models.numerics import (
    CPU_NUMERICS,
    EXPECTED_IN_FORCE,
    NUMERICS_ENV,
    UNVERIFIED,
    VERIFIED,
    compute_environment,
    contract_applies,
    cpu_description,
    pin_cpu_numerics,
)
from harness.reproducibility import TOLERANCE, output_drift

REPO = Path(__file__).resolve().parents[2]
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
def test_each_engine_reports_the_contract_or_runs_unverified_with_a_warning_in_a_fresh_process():
    """Whatever this CPU is, the demo models load and say the truth: CTranslate2's own report of oneDNN at
    AVX2 and torch's MKL on the COMPATIBLE branch with AVX2 kernels, or one warning naming the CPU and an
    ``unverified`` fingerprint. Never a refusal."""
    pytest.importorskip("torch")
    pytest.importorskip("ctranslate2")
    code = (
        "import json, warnings; warnings.simplefilter('always')\n"
        "from harness.models import build_backend; from harness.models import numerics\n"
        "backends = [build_backend(spec) for spec in ('whisper:tiny.en', 'smollm2:135m-instruct')]\n"
        "prints = [backend.fingerprint() for backend in backends]; loaded = [backend.load() for backend in backends]\n"
        "print(json.dumps({'states': {e: numerics.engine_numerics(e) for e in numerics.ENGINES}, "
        "'contracts': {e: numerics.contract(e) for e in numerics.ENGINES}}))"
    )
    finished = run_python(code, MKL_CBWR="AVX512")
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    vendor = cpu_description().get("vendor")
    for engine, state in report["states"].items():
        expected = EXPECTED_IN_FORCE[engine]
        if state["status"] == VERIFIED:
            assert {key: state["in_force"][key] for key in expected} == expected
            assert "unverified" not in report["contracts"][engine]
            assert f"{engine}: the demo models' CPU numerics contract" not in finished.stderr
        else:
            assert state["status"] == UNVERIFIED, state
            assert report["contracts"][engine]["unverified"]["vendor"] == vendor
            assert finished.stderr.count(f"{engine}: the demo models' CPU numerics contract") == 1
            assert str(vendor) in finished.stderr and "own fingerprint" in finished.stderr
    assert EXPECTED_IN_FORCE["torch"]["torch_mkl_branch"] == CPU_NUMERICS["MKL_CBWR"] == "COMPATIBLE"
    assert "[ctranslate2]" not in finished.stderr  # its report is read, not shown


@needs_contract
def test_a_cpu_that_cannot_give_the_contract_runs_warned_once_under_its_own_fingerprint(monkeypatch):
    """An MKL that ignores the pinned branch (as contract 1's AVX2 branch was ignored on AMD): the model is
    built, one warning names the CPU and what is in force, the load is not refused, and the fingerprint
    differs from the contract's, so its outputs never mix with the shipped ones."""
    pytest.importorskip("torch")
    verified = build_backend(DEMO_LLM).fingerprint()
    in_force = {"torch_mkl_branch": "AUTO", "torch_cpu_capability": "AVX2"}
    monkeypatch.setattr(numerics, "_engine_numerics", {})
    monkeypatch.setattr(numerics, "_imported_before_pin", set())
    monkeypatch.setattr(numerics, "engine_in_force", lambda engine: dict(in_force))
    with pytest.warns(
        UserWarning, match=r"torch: the demo models' CPU numerics contract 2 .* cannot be had here"
    ) as caught:
        unverified = build_backend(DEMO_LLM).fingerprint()
    assert str(cpu_description().get("vendor")) in str(caught[0].message) and "AUTO" in str(caught[0].message)
    assert unverified != verified
    assert numerics.contract("torch")["unverified"]["in_force"] == in_force
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert build_backend(DEMO_LLM).fingerprint() == unverified
        numerics.check_cpu_numerics(DEMO_LLM, "torch")
        with numerics.as_shipped():
            assert build_backend(DEMO_LLM).fingerprint() == verified
    assert numerics.compute_environment()["engines"]["torch"]["status"] == UNVERIFIED


@needs_contract
@pytest.mark.parametrize("early", [True, False], ids=["imported-before-the-pin", "settings-ignored"])
def test_ctranslate2_reporting_another_path_than_the_contract_is_refused_with_the_cause(monkeypatch, early):
    """CTranslate2's own report (AVX-512 and MKL instead of oneDNN at AVX2) contradicts a verified
    fingerprint: the load is refused, saying whether the process imported it before the pin."""
    report = {
        "ctranslate2_isa": "AVX512",
        "ctranslate2_uses_mkl": "true",
        "ctranslate2_sgemm": "MKL",
        "ctranslate2_gemm_s8": "MKL",
    }
    monkeypatch.setattr(numerics, "_engine_numerics", {})
    monkeypatch.setattr(numerics, "_imported_before_pin", {"ctranslate2"} if early else set())
    assert numerics.engine_numerics("ctranslate2")["status"] == VERIFIED
    numerics.record_ctranslate2_report(report)
    cause = "initialised ctranslate2 before the CPU numerics contract was set" if early else "ctranslate2 did not take"
    with pytest.raises(Exception, match=cause) as refused:
        numerics.check_cpu_numerics(DEMO_ASR, "ctranslate2")
    assert "'ctranslate2_isa': 'AVX512'" in str(refused.value)
    numerics.record_ctranslate2_report(dict(EXPECTED_IN_FORCE["ctranslate2"]))
    numerics.check_cpu_numerics(DEMO_ASR, "ctranslate2")


def test_ctranslate2_report_is_parsed_from_its_log_and_other_output_passes_through(capfd):
    ctranslate2 = pytest.importorskip("ctranslate2")
    before = ctranslate2.get_log_level()
    with numerics.ctranslate2_report() as report:
        os.write(
            2,
            b"[2026-12-01 13:45:17.792] [ctranslate2] [thread 1] [info]  - Selected ISA: AVX2\n"
            b"[2026-12-01 13:45:17.792] [ctranslate2] [thread 1] [info]  - SGEMM backend: DNNL (packed: false)\n"
            b"[2026-12-01 13:45:17.792] [ctranslate2] [thread 1] [info]  - GEMM_S8 backend: DNNL (packed: false, u8s8 preferred: true)\n"
            b"something else\n",
        )
        level = ctranslate2.get_log_level()
    assert report == {"ctranslate2_isa": "AVX2", "ctranslate2_sgemm": "DNNL", "ctranslate2_gemm_s8": "DNNL"}
    assert level == 20 and ctranslate2.get_log_level() == before
    assert capfd.readouterr().err == "something else\n"


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
    assert (
        "ModelError smollm2:135m-instruct: this process initialised torch before the CPU numerics contract"
        in finished.stdout
    )
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
        join_output(
            "the bus leaves at seven", "Department: shoes\nBudget: low\nBuying trigger: late night\nVibe: calm"
        ),
        "we met on the second floor",
        join_output("i sew", "B", "The speaker has a low-pitched voice and sounds like a man."),
    ]
    regenerated = [
        join_output(
            "the bus leaves at heaven", "Department: shoes\nBudget: high\nBuying trigger: late night\nVibe: calm"
        ),
        "we met on the second floor",
        join_output("i sew", "C", "The speaker has a high-pitched voice and sounds like a woman."),
    ]
    drift = output_drift(shipped, regenerated, ["personal_shopper", None, None])
    # Outputs: 1 of 3 identical. Transcripts: "seven" -> "heaven" is 1 substitution in 5 + 6 + 2 reference words.
    assert drift.identical == pytest.approx(1 / 3)
    assert drift.transcripts == 3
    assert drift.transcript_wer == pytest.approx(1 / 13)
    # Fields of personal_shopper: 4 attributes, the budget differs.
    assert (drift.fields, drift.fields_identical) == (4, 0.75)
    # One answer carries a voice description, and it differs.
    assert (drift.voices, drift.voices_identical) == (1, 0.0)
    assert "0.0% of 1 voice descriptions identical" in drift.summary()
    assert not drift.within(None)
    assert "33.3% of 3 outputs identical" in drift.summary() and "seven" in drift.summary()


def test_drift_refuses_mismatched_or_empty_inputs():
    with pytest.raises(ValueError, match="2 shipped, 1 regenerated and 2 task entries"):
        output_drift(["a", "b"], ["a"], [None, None])
    with pytest.raises(ValueError, match="no outputs"):
        output_drift([], [], [])
