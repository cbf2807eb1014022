"""GPU placement under pytest-xdist, and why the ``gpu`` marker's tests must skip here.

Each xdist worker (``PYTEST_XDIST_WORKER`` = ``gw0``, ``gw1``...) takes as many GPUs as the run's models need
(the largest tensor x pipeline parallel degree of their option blocks, :func:`assign_worker_gpus`; one by default):
worker ``k`` gets the ``k mod s``-th of the ``s`` disjoint slots of the visible GPUs, by narrowing ``CUDA_VISIBLE_DEVICES`` to it. This only works
before torch initialises CUDA in the process, so :func:`assign_worker_gpu` must run early (e.g. from
``pytest_configure`` in the plugin) and refuses to act silently once CUDA is initialised.

Nothing here imports torch unless asked whether CUDA is usable (:func:`cuda_available`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import MutableMapping

GPU_MARKER = "gpu"


def worker_index(env: MutableMapping[str, str] | None = None) -> int | None:
    """0 for ``gw0``, 1 for ``gw1``...; None outside xdist (or for the controller)."""
    env = os.environ if env is None else env
    match = re.fullmatch(r"gw(\d+)", env.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else None


def visible_gpus(env: MutableMapping[str, str] | None = None) -> list[str]:
    """The GPU ids this process may use, without initialising CUDA.

    ``CUDA_VISIBLE_DEVICES`` when set (ids or UUIDs, as given); else the GPUs ``nvidia-smi -L`` lists;
    else none.
    """
    env = os.environ if env is None else env
    setting = env.get("CUDA_VISIBLE_DEVICES")
    if setting is not None:
        ids = [s.strip() for s in setting.split(",") if s.strip()]
        # CUDA ignores everything from the first invalid entry on (e.g. "-1" hides all GPUs)
        valid: list[str] = []
        for s in ids:
            if s.startswith("-"):
                break
            valid.append(s)
        return valid
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def assign_worker_gpu(env: MutableMapping[str, str] | None = None) -> str | None:
    """Narrow ``CUDA_VISIBLE_DEVICES`` to this xdist worker's GPU; return that GPU's id (or None).

    No-op outside xdist and without GPUs. Raises RuntimeError when CUDA is already initialised in this
    process with a different visibility (too late to choose: call this before anything touches CUDA).
    """
    chosen = assign_worker_gpus(1, env)
    return None if chosen is None else chosen[0]


def assign_worker_gpus(need: int, env: MutableMapping[str, str] | None = None) -> list[str] | None:
    """Narrow ``CUDA_VISIBLE_DEVICES`` to this xdist worker's ``need`` GPUs (a model's tensor x pipeline parallel
    degree): the visible GPUs form ``len(gpus) // need`` disjoint slots and worker ``k`` takes slot ``k mod slots``.
    Returns them, or None outside xdist and without GPUs. More GPUs than are visible is a ValueError saying so."""
    env = os.environ if env is None else env
    index = worker_index(env)
    if index is None:
        return None
    gpus = visible_gpus(env)
    if not gpus:
        return None
    if need > len(gpus):
        raise ValueError(
            f"xdist worker gw{index}: a model needs {need} GPUs (tensor x pipeline parallel) and {len(gpus)} are "
            f"visible ({', '.join(gpus)})"
        )
    slot = index % (len(gpus) // need)
    chosen = gpus[slot * need : (slot + 1) * need]
    setting = ",".join(chosen)
    if env.get("CUDA_VISIBLE_DEVICES") == setting:
        return chosen
    if env is os.environ and _cuda_initialised():
        raise RuntimeError(
            f"CUDA is already initialised in xdist worker gw{index}: cannot pin it to GPU {setting}; "
            "call assign_worker_gpu() before torch touches CUDA (e.g. in pytest_configure)"
        )
    env["CUDA_VISIBLE_DEVICES"] = setting
    return chosen


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA device (imports torch; initialises nothing else)."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def gpu_skip_reason() -> str | None:
    """Why ``gpu`` tests must be skipped here, or None when a CUDA device is usable."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "gpu test: torch is not installed (pip install 'lalm-fairness[hf]')"
    if not cuda_available():
        return "gpu test: no CUDA device available"
    return None


def xdist_group_name(spec: str) -> str:
    """A stable ``xdist_group`` name for a model spec (all of one model's tests run on one worker)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec)[:40]
    return f"model-{safe}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"
