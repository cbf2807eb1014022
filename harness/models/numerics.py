"""Numerics: the CPU contract under which the demo models give the same text everywhere, and what a run records.

On a CPU, the text a model writes depends on more than its weights and its input. Each engine chooses
kernels for the processor it finds, and kernels for different instruction sets round differently:

* CTranslate2 (Whisper) picks a kernel ISA (AVX, AVX2 or AVX-512, ``CT2_FORCE_CPU_ISA``) and a GEMM
  library by CPU vendor: Intel MKL on Intel, oneDNN elsewhere (``CT2_USE_MKL``);
* Intel MKL, inside both CTranslate2 and torch, picks a code branch per processor, unless conditional
  numerical reproducibility fixes one (``MKL_CBWR``);
* torch picks its vectorised kernels (softmax, norms, activations) by CPU capability (``ATEN_CPU_CAPABILITY``).

Measured on one Intel Xeon (AVX-512, AMX) over 36 demo recordings: Whisper tiny.en int8 wrote a different
transcript for 10 of them on MKL's AVX2 branch than on its default branch; one transcript read "half past
heaven" on one branch and "half past 7" on another. A different transcript changes SmolLM2's answer, so the
demo's findings moved with the machine.

Contract 1 pinned MKL's ``AVX2,STRICT`` branch in both engines. MKL honours the ``AVX2`` branch on Intel
processors only (its developer guide: on non-Intel CPUs "the AUTO branch is used instead"): on an AMD EPYC
(AVX-512, AVX512_BF16) both copies of MKL reported ``AUTO,STRICT``, and 2 of 20 sampled outputs differed
from the Intel-made shipped ones. :data:`CPU_NUMERICS`, contract 2, takes for each engine a path that
does not depend on the vendor:

* **CTranslate2 on oneDNN at AVX2** (``CT2_USE_MKL=0``, ``ONEDNN_MAX_CPU_ISA=AVX2``, ``CT2_FORCE_CPU_ISA=AVX2``):
  CTranslate2's own choice on AMD. oneDNN dispatches its JIT kernels by instruction set, not by vendor,
  and the cap makes every AVX2 machine run the same ones; the int8 GEMMs accumulate in integers, so their
  results do not depend on blocking or threads. On the AMD EPYC it was 6.6 times faster than MKL's
  ``COMPATIBLE`` branch and 3.6 times faster than contract 1's MKL (8 recordings: 3.5 s, 23.3 s, 12.6 s).
* **torch on MKL's ``COMPATIBLE`` branch** (``MKL_CBWR=COMPATIBLE``, ``ATEN_CPU_CAPABILITY=avx2``): the one
  branch MKL defines as the same code on Intel and on non-Intel x86-64 processors (SSE2 without the
  approximate ``rcpps``/``rsqrtps``), with deterministic reductions and fixed cache sizes. It is not a
  *strict* branch, so MKL promises the same bits for a fixed thread count only; that 1 and 2 threads agree
  is measured (``tests/models/test_cascade.py`` regenerates shipped entries under both). It cost SmolLM2 1.7 times
  the time of MKL's own choice on the AMD EPYC (8 answers of 64 tokens: 8.5 s against 4.9 s).

The backends of the demo models (``whisper:``, ``smollm2:``) call :func:`pin_cpu_numerics` when they are
built, before any kernel runs. :func:`engine_numerics` judges, once per process, whether each engine runs
the contract here: torch is asked which MKL branch (``mkl_serv_cbwr_get``) and capability are in force, and
CTranslate2's settings hold on any x86-64 CPU with AVX2, what it selected being read from its own system
report when the model loads:

* **verified**: the contract is in force; the backend's fingerprint carries the contract, and its outputs
  are interchangeable with the shipped ones;
* **unverified**: the environment was set in time and this processor does not give the contract (another
  architecture, or an MKL that ignores the branch). The run goes on, with one warning naming the CPU and
  what is in force, and the fingerprint carries both, so those outputs never mix with the shipped ones;
* an engine initialised *before* the pin (torch used by another model first, say) and not in the
  contract's state is refused at load with a clear error: that is a process problem, not a CPU one.

Where the engine is not installed, nothing can be generated here and the fingerprint is the contract's
(the shipped outputs are served as they are). :func:`compute_environment` describes the machine and what
is in force; it goes into the run metadata, the report's Compute row and the shipped outputs' provenance.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import importlib.util
import os
import platform
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import ModelError

CONTRACT_VERSION = "2"
NUMERICS_ENV = "LALM_CPU_NUMERICS"
CPU_NUMERICS: dict[str, str] = {
    "CT2_FORCE_CPU_ISA": "AVX2",
    "CT2_USE_MKL": "0",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "COMPATIBLE",
    "ATEN_CPU_CAPABILITY": "avx2",
}
ENGINES = ("ctranslate2", "torch")
# What each engine reports when the contract is in force: torch through its MKL and capability, read at
# any time; CTranslate2 through the system report it logs when it loads its first model.
EXPECTED_IN_FORCE: dict[str, dict[str, str]] = {
    "ctranslate2": {
        "ctranslate2_isa": "AVX2",
        "ctranslate2_uses_mkl": "false",
        "ctranslate2_sgemm": "DNNL",
        "ctranslate2_gemm_s8": "DNNL",
    },
    "torch": {
        "torch_mkl_branch": CPU_NUMERICS["MKL_CBWR"],
        "torch_cpu_capability": CPU_NUMERICS["ATEN_CPU_CAPABILITY"].upper(),
    },
}
CT2_REPORT_LINES = {
    "Selected ISA": "ctranslate2_isa",
    "Use Intel MKL": "ctranslate2_uses_mkl",
    "SGEMM backend": "ctranslate2_sgemm",
    "GEMM_S8 backend": "ctranslate2_gemm_s8",
}
# mkl_cbwr_get's codes: the branch and the strict flag.
MKL_CBWR_ALL = -1
MKL_CBWR_BRANCH_CODES = {
    1: "OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    12: "AVX512",
    14: "AVX512_E1",
}
MKL_CBWR_STRICT = 0x10000
CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8", "amx_bf16")
GPU_ENVIRONMENT = (
    "CUDA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "VLLM_ATTENTION_BACKEND",
    "VLLM_USE_V1",
    "TORCH_CUDNN_V8_API_ENABLED",
)

VERIFIED, UNVERIFIED, NOT_INSTALLED, NATIVE = "verified", "unverified", "not installed", "native"
_imported_before_pin: set[str] | None = None
_engine_numerics: dict[str, dict[str, Any]] = {}
_as_shipped = False


def native_numerics() -> bool:
    """``LALM_CPU_NUMERICS=native``: let the engines choose for this machine (faster; other text, other fingerprint)."""
    value = os.environ.get(NUMERICS_ENV, "contract")
    if value not in ("contract", "native"):
        raise ModelError(f"{NUMERICS_ENV} must be 'contract' or 'native', got {value!r}")
    return value == "native"


def contract(engine: str | None = None) -> dict[str, Any]:
    """What enters a demo backend's fingerprint: the contract; ``native``; or the contract and, where
    ``engine`` runs unverified on this CPU (:func:`engine_numerics`), the CPU and what is in force."""
    if native_numerics():
        return {"version": CONTRACT_VERSION, "settings": "native"}
    pinned: dict[str, Any] = {"version": CONTRACT_VERSION, "settings": dict(CPU_NUMERICS)}
    if engine is not None and not _as_shipped:
        state = engine_numerics(engine)
        if state["status"] == UNVERIFIED:
            cpu = cpu_description()
            pinned["unverified"] = {
                "vendor": cpu.get("vendor"),
                "model_name": cpu.get("model_name"),
                "machine": cpu.get("machine"),
                "in_force": {key: state["in_force"].get(key) for key in EXPECTED_IN_FORCE[engine]},
            }
    return pinned


def numerics_status(engine: str) -> str:
    """``contract 2 (verified)``, ``contract 2 (unverified: ...)``, ``native``: what a backend's fingerprint records."""
    state = engine_numerics(engine)
    if state["status"] == NATIVE:
        return NATIVE
    return f"contract {CONTRACT_VERSION} ({state['status']}" + (
        f": {state['reason']})" if state["status"] == UNVERIFIED else ")"
    )


@contextlib.contextmanager
def as_shipped() -> Iterator[None]:
    """Fingerprints made inside are the verified contract's whatever this CPU gives: to *read* shipped
    outputs (``harness.reproducibility``), never to store new ones."""
    global _as_shipped
    previous, _as_shipped = _as_shipped, True
    try:
        yield
    finally:
        _as_shipped = previous


def contract_applies() -> bool:
    """The contract's settings exist on x86-64 processors with AVX2 (elsewhere the engines choose)."""
    return platform.machine().lower() in ("x86_64", "amd64") and "avx2" in cpu_description().get("flags", ())


def pin_cpu_numerics(owner: str) -> None:
    """Set :data:`CPU_NUMERICS` in this process's environment; warn when it overrides another value.

    The first call also notes which engines this process imported before it: only those can be in
    another state because they were initialised too early.
    """
    global _imported_before_pin
    if native_numerics() or not contract_applies():
        return
    if _imported_before_pin is None:
        _imported_before_pin = {engine for engine in ENGINES if engine in sys.modules}
    for name, value in CPU_NUMERICS.items():
        current = os.environ.get(name)
        if current is not None and current != value:
            warnings.warn(
                f"{owner}: {name}={current!r} in the environment is replaced by {value!r}, the CPU numerics "
                "contract of the demo models (harness/models/numerics.py)",
                stacklevel=3,
            )
        os.environ[name] = value


def engine_numerics(engine: str) -> dict[str, Any]:
    """Whether ``engine`` (``"ctranslate2"`` or ``"torch"``) runs under the contract on this CPU, judged once.

    Returns ``{"status", "in_force", "reason"}``; status is ``verified``, ``unverified`` (see the module
    docstring), ``not installed`` or ``native``. torch is asked (imported, after :func:`pin_cpu_numerics`)
    which MKL branch and capability are in force: MKL may ignore a branch on some processors. CTranslate2's
    settings (its kernel ISA, its GEMM library, oneDNN's ISA cap) are honoured on any x86-64 CPU with AVX2;
    what it really selected is read from its own report when the model loads (:func:`check_cpu_numerics`).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine_numerics: unknown engine {engine!r}; known: {ENGINES}")
    if native_numerics():
        return {"status": NATIVE, "in_force": {}, "reason": f"{NUMERICS_ENV}=native"}
    if engine in _engine_numerics:
        return _engine_numerics[engine]
    state: dict[str, Any]
    if importlib.util.find_spec(engine) is None:
        state = {
            "status": NOT_INSTALLED,
            "in_force": {},
            "reason": f"{engine} is not installed: nothing is generated here",
        }
    elif not contract_applies():
        state = {
            "status": UNVERIFIED,
            "in_force": {},
            "reason": f"the contract's settings need x86-64 with AVX2; this is {platform.machine()}",
        }
    elif engine == "ctranslate2":
        state = {
            "status": VERIFIED,
            "in_force": {},
            "reason": "x86-64 with AVX2 (CTranslate2's report is checked at load)",
        }
    else:
        pin_cpu_numerics("harness.models.numerics")
        import torch  # noqa: F401 - MKL and the capability are read from the loaded library

        in_force = engine_in_force(engine)
        wrong = {
            key: in_force.get(key) for key, value in EXPECTED_IN_FORCE[engine].items() if in_force.get(key) != value
        }
        if not wrong:
            state = {"status": VERIFIED, "in_force": in_force, "reason": "in force as pinned"}
        elif engine in (_imported_before_pin or set()):
            # Initialised before the pin: nothing is known of this CPU; check_cpu_numerics refuses the load.
            state = {"status": VERIFIED, "in_force": in_force, "reason": "imported before the pin (checked at load)"}
        else:
            cpu = cpu_description()
            state = {
                "status": UNVERIFIED,
                "in_force": in_force,
                "reason": f"this CPU ({cpu.get('vendor')}, {cpu.get('model_name')}) does not give the contract",
            }
    if state["status"] == UNVERIFIED:
        warnings.warn(
            f"{engine}: the demo models' CPU numerics contract {CONTRACT_VERSION} ({CPU_NUMERICS}) cannot be had here: "
            f"{state['reason']} (in force: {state['in_force'] or 'the engine' + chr(39) + 's own choices'}). The run goes on; "
            "its outputs get their own fingerprint, never mixed with the shipped ones; "
            "`python -m harness.reproducibility` measures their drift from them.",
            stacklevel=2,
        )
    _engine_numerics[engine] = state
    return state


@contextlib.contextmanager
def ctranslate2_report() -> Iterator[dict[str, str]]:
    """Around CTranslate2's first model load: capture the system report it logs (CPU, selected ISA, MKL or
    not, GEMM backends) from file descriptor 2, parse it into the dict yielded, and pass on everything else
    that was written there meanwhile. CTranslate2 logs it once per process."""
    import tempfile

    import ctranslate2

    report: dict[str, str] = {}
    previous = ctranslate2.get_log_level()
    ctranslate2.set_log_level(20)  # logging.INFO
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield report
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            ctranslate2.set_log_level(previous)
            sink.seek(0)
            text = sink.read().decode("utf-8", errors="replace")
            passed_on = []
            for line in text.splitlines():
                label, _, value = line.partition("] ")[2].rpartition("] ")[2].strip(" -").partition(": ")
                if "[ctranslate2]" in line and label in CT2_REPORT_LINES:
                    report[CT2_REPORT_LINES[label]] = value.split(" (")[0].strip()
                elif "[ctranslate2]" not in line:
                    passed_on.append(line)
            if passed_on:
                sys.stderr.write("\n".join(passed_on) + "\n")


def record_ctranslate2_report(report: dict[str, str]) -> None:
    """Keep what CTranslate2 reported (once per process) beside its state, for the check and the run metadata."""
    if report and "ctranslate2" in _engine_numerics:
        _engine_numerics["ctranslate2"]["in_force"] = {**_engine_numerics["ctranslate2"]["in_force"], **report}


def mkl_branch(library: str | Path) -> str | None:
    """The MKL code branch in force in the MKL linked into ``library`` (``"COMPATIBLE"``, ``"AVX2,STRICT"``, ...)."""
    try:
        code = int(ctypes.CDLL(str(library)).mkl_serv_cbwr_get(MKL_CBWR_ALL))
    except (OSError, AttributeError):
        return None
    branch = MKL_CBWR_BRANCH_CODES.get(code & ~MKL_CBWR_STRICT, f"code {code & ~MKL_CBWR_STRICT}")
    return f"{branch},STRICT" if code & MKL_CBWR_STRICT else branch


def ctranslate2_library() -> Path | None:
    spec = importlib.util.find_spec("ctranslate2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(glob.glob(str(Path(spec.origin).parent.parent / "ctranslate2.libs" / "libctranslate2*.so*")))
    return Path(found[0]) if found else None


def torch_library() -> Path | None:
    if "torch" not in sys.modules:
        return None
    import torch

    path = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    return path if path.is_file() else None


def engine_in_force(engine: str) -> dict[str, Any]:
    """What ``engine`` uses now: torch's MKL branch, capability and threads (when imported); CTranslate2's
    report as captured at its first load, with its MKL copy's branch (unused under the contract)."""
    found: dict[str, Any] = {}
    if engine == "ctranslate2":
        found.update(_engine_numerics.get("ctranslate2", {}).get("in_force", {}))
        if "ctranslate2" in sys.modules and (library := ctranslate2_library()) is not None:
            found["ctranslate2_mkl_branch"] = mkl_branch(library)
    if engine == "torch" and (library := torch_library()) is not None:
        import torch

        found["torch_mkl_branch"] = mkl_branch(library)
        found["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        found["torch_threads"] = torch.get_num_threads()
    return found


def engines_in_force() -> dict[str, Any]:
    """What the engines loaded in this process actually use (only engines already imported are asked)."""
    return {key: value for engine in ENGINES if engine in sys.modules for key, value in engine_in_force(engine).items()}


def check_cpu_numerics(owner: str, engine: str) -> None:
    """At load, after the engine is initialised: refuse it where it is not in the contract's state though the
    fingerprint says it is (:func:`engine_numerics`), which happens when it was initialised before the pin.

    Where this CPU cannot give the contract, :func:`engine_numerics` has warned and the fingerprint says so.
    """
    pin_cpu_numerics(owner)
    state = engine_numerics(engine)
    if state["status"] != VERIFIED:
        return
    found = engine_in_force(engine)
    expected = EXPECTED_IN_FORCE[engine]
    if engine == "ctranslate2" and not any(key in found for key in expected):
        if "ctranslate2" in (_imported_before_pin or set()):
            found = {key: "not reported (a model was loaded before the pin)" for key in expected}
        else:
            return
    wrong = {key: found.get(key) for key, value in expected.items() if found.get(key) != value}
    if not wrong:
        return
    early = engine in (_imported_before_pin or set())
    cause = (
        f"this process initialised {engine} before the CPU numerics contract was set"
        if early
        else f"{engine} did not take the CPU numerics contract's settings"
    )
    raise ModelError(
        f"{owner}: {cause} (in force: {wrong}; the contract: {CPU_NUMERICS}); its answers would not be the demo model's. "
        + (
            "Run it in a fresh process, or set these environment variables before anything imports torch or ctranslate2."
            if early
            else "Report this with `python -m harness.reproducibility --out drift.json`; LALM_CPU_NUMERICS=native runs it unpinned."
        )
    )


@functools.cache
def cpu_description() -> dict[str, Any]:
    """Vendor, model name and the instruction-set flags that decide kernel choices, from /proc/cpuinfo."""
    info: dict[str, Any] = {"machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return info
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:
                break
            continue
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    info["vendor"] = fields.get("vendor_id")
    info["model_name"] = fields.get("model name")
    info["flags"] = [flag for flag in CPU_FLAGS_OF_INTEREST if flag in flags]
    return info


def gpu_description() -> dict[str, Any] | None:
    """Device, driver, library versions and the kernel settings that change GPU results; ``None`` without CUDA.

    GPU kernels are not bit-reproducible across GPU types, driver or library versions, nor across the
    choices recorded here (TF32 matmuls, cuDNN autotuning, the attention kernels torch may use, vLLM's
    attention backend): a baseline is comparable only with a run that holds all of them fixed.
    """
    if "torch" not in sys.modules:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    devices = [torch.cuda.get_device_properties(index) for index in range(torch.cuda.device_count())]
    described: dict[str, Any] = {
        "devices": [
            {
                "name": device.name,
                "capability": f"{device.major}.{device.minor}",
                "memory_gib": round(device.total_memory / 2**30, 1),
            }
            for device in devices
        ],
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "driver": _nvidia_driver_version(),
        "torch": torch.__version__,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "tf32_cudnn": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "sdpa": {
            "flash": torch.backends.cuda.flash_sdp_enabled(),
            "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
            "math": torch.backends.cuda.math_sdp_enabled(),
        },
        "environment": {name: os.environ.get(name) for name in GPU_ENVIRONMENT if os.environ.get(name) is not None},
    }
    if "vllm" in sys.modules:
        described["vllm"] = getattr(sys.modules["vllm"], "__version__", None)
    return described


def _nvidia_driver_version() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(errors="replace")
    except OSError:
        return None
    words = text.split()
    return next((word for word in words if word[:1].isdigit() and "." in word), None)


def compute_environment() -> dict[str, Any]:
    """The machine and the numerics in force, for run metadata and provenance."""
    return {
        "cpu": dict(cpu_description()),
        "contract": contract(),
        "contract_applies": contract_applies(),
        "engines": {engine: dict(state) for engine, state in _engine_numerics.items()},
        "environment": {
            name: os.environ.get(name) for name in (*CPU_NUMERICS, NUMERICS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        },
        "in_force": engines_in_force(),
        "gpu": gpu_description(),
    }
