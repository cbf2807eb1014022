"""Numerics: the CPU contract under which the demo models give the same text everywhere, and what a run records.

On a CPU, the text a model writes depends on more than its weights and its input. Each engine chooses
kernels for the processor it finds, and kernels for different instruction sets round differently:

* CTranslate2 (Whisper) picks a kernel ISA (AVX, AVX2 or AVX-512, ``CT2_FORCE_CPU_ISA``) and a GEMM
  library by CPU vendor: Intel MKL on Intel, oneDNN elsewhere (``CT2_USE_MKL``);
* Intel MKL, inside both CTranslate2 and torch, picks a code branch per processor (AVX2; AVX-512 with
  VNNI, whose int8 products do not saturate as AVX2's do; AMX), unless conditional numerical
  reproducibility fixes one (``MKL_CBWR``, with ``STRICT``: the same bits for any thread count);
* torch picks its vectorised kernels (softmax, norms, activations) by CPU capability (``ATEN_CPU_CAPABILITY``).

Measured on one Intel Xeon (AVX-512, AMX) over 36 demo recordings: Whisper tiny.en int8 wrote a different
transcript for 10 of them on MKL's AVX2 branch than on its default branch, and oneDNN agreed with MKL's
default; one transcript read "half past heaven" on one branch and "half past 7" on another. A different
transcript changes SmolLM2's answer, so the demo's findings moved with the machine.

:data:`CPU_NUMERICS` fixes every one of those choices to the AVX2 variant, which every x86-64 machine of
this project's kind (Intel Xeon or AMD EPYC, all with AVX2) can run: the same code path on each, with
MKL's reductions independent of the thread count. The backends of the demo models (``whisper:``,
``smollm2:``) call :func:`pin_cpu_numerics` when they are built, before any kernel runs, and
:func:`check_cpu_numerics` when they load, which reads back from MKL itself which branch is in force
(``mkl_serv_cbwr_get``) and from torch which capability: a process whose engines were initialised before
the pin (torch used by another model first, say) is refused with a clear error instead of silently
writing other text. The contract enters both backends' fingerprints, so outputs made under another
contract are never served as these. :func:`compute_environment` describes the machine and what is in
force; it goes into the run metadata and into the shipped outputs' provenance.

The cost: Whisper's int8 GEMMs on the AVX2 branch instead of AVX-512 VNNI/AMX, and torch's float32 GEMMs
on MKL's strict AVX2 branch (figures in the README, "The demo model").
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

from harness.core import ModelError

CONTRACT_VERSION = "1"
NUMERICS_ENV = "LALM_CPU_NUMERICS"
CPU_NUMERICS: dict[str, str] = {
    "CT2_FORCE_CPU_ISA": "AVX2",
    "CT2_USE_MKL": "1",
    "MKL_CBWR": "AVX2,STRICT",
    "ATEN_CPU_CAPABILITY": "avx2",
}
# mkl_cbwr_get's codes: the branch (MKL_CBWR_AVX2 = 10) and the strict flag.
MKL_CBWR_ALL = -1
MKL_CBWR_BRANCH_CODES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512", 14: "AVX512_E1"}
MKL_CBWR_STRICT = 0x10000
CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16")
GPU_ENVIRONMENT = (
    "CUDA_VISIBLE_DEVICES", "CUBLAS_WORKSPACE_CONFIG", "NVIDIA_TF32_OVERRIDE", "VLLM_ATTENTION_BACKEND",
    "VLLM_USE_V1", "TORCH_CUDNN_V8_API_ENABLED",
)


def native_numerics() -> bool:
    """``LALM_CPU_NUMERICS=native``: let the engines choose for this machine (faster; other text, other fingerprint)."""
    value = os.environ.get(NUMERICS_ENV, "contract")
    if value not in ("contract", "native"):
        raise ModelError(f"{NUMERICS_ENV} must be 'contract' or 'native', got {value!r}")
    return value == "native"


def contract() -> dict[str, Any]:
    """What enters the demo backends' fingerprints: the contract, or ``native`` when it is switched off."""
    return {"version": CONTRACT_VERSION, "settings": "native" if native_numerics() else dict(CPU_NUMERICS)}


def contract_applies() -> bool:
    """The contract's settings exist on x86-64 processors with AVX2 (elsewhere the engines choose)."""
    return platform.machine().lower() in ("x86_64", "amd64") and "avx2" in cpu_description().get("flags", ())


def pin_cpu_numerics(owner: str) -> None:
    """Set :data:`CPU_NUMERICS` in this process's environment; warn when it overrides another value."""
    if native_numerics() or not contract_applies():
        return
    for name, value in CPU_NUMERICS.items():
        current = os.environ.get(name)
        if current is not None and current != value:
            warnings.warn(
                f"{owner}: {name}={current!r} in the environment is replaced by {value!r}, the CPU numerics "
                "contract of the demo models (harness/models/numerics.py)",
                stacklevel=3,
            )
        os.environ[name] = value


def mkl_branch(library: str | Path) -> str | None:
    """The MKL code branch in force in the MKL linked into ``library`` (``"AVX2,STRICT"``, ``"OFF"``, ...)."""
    try:
        code = int(ctypes.CDLL(str(library)).mkl_serv_cbwr_get(MKL_CBWR_ALL))
    except (OSError, AttributeError):
        return None
    branch = MKL_CBWR_BRANCH_CODES.get(code & ~MKL_CBWR_STRICT, f"code {code & ~MKL_CBWR_STRICT}")
    return f"{branch},STRICT" if code & MKL_CBWR_STRICT else branch


def ctranslate2_library() -> Path | None:
    import importlib.util

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


def engines_in_force() -> dict[str, Any]:
    """What the engines loaded in this process actually use (only engines already imported are asked)."""
    found: dict[str, Any] = {}
    if "ctranslate2" in sys.modules and (library := ctranslate2_library()) is not None:
        found["ctranslate2_mkl_branch"] = mkl_branch(library)
    if (library := torch_library()) is not None:
        import torch

        found["torch_mkl_branch"] = mkl_branch(library)
        found["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        found["torch_threads"] = torch.get_num_threads()
    return found


def check_cpu_numerics(owner: str, engine: str) -> None:
    """Refuse to run ``engine`` (``"ctranslate2"`` or ``"torch"``) where the contract is not in force."""
    pin_cpu_numerics(owner)
    if native_numerics() or not contract_applies():
        return
    found = engines_in_force()
    expected = {"ctranslate2_mkl_branch": CPU_NUMERICS["MKL_CBWR"]}
    if engine == "torch":
        expected = {"torch_mkl_branch": CPU_NUMERICS["MKL_CBWR"], "torch_cpu_capability": CPU_NUMERICS["ATEN_CPU_CAPABILITY"].upper()}
    wrong = {key: found.get(key) for key, value in expected.items() if found.get(key) not in (value, None)}
    if wrong:
        raise ModelError(
            f"{owner}: this process initialised {engine} before the CPU numerics contract was set "
            f"(in force: {wrong}; the contract: {CPU_NUMERICS}); its answers would not be the demo model's. "
            "Run it in a fresh process, or set these environment variables before anything imports torch or ctranslate2."
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
        "devices": [{"name": device.name, "capability": f"{device.major}.{device.minor}", "memory_gib": round(device.total_memory / 2**30, 1)} for device in devices],
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
        "environment": {name: os.environ.get(name) for name in (*CPU_NUMERICS, NUMERICS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "in_force": engines_in_force(),
        "gpu": gpu_description(),
    }
