"""Models that share a device in turn: which loaded model is released before the next one loads, and what share of
a device's memory each engine is given.

A gate run's stages are sequential (answers, then extraction, then judging and embeddings), so a model the next
stage does not need is released before that stage's model loads on the same device: :class:`Residency` keeps the
run's loaded models per device, and loading one whose memory share does not fit beside those alive there releases
the least recently used of them first (a vLLM engine is shut down, an ``hf:`` model deleted and the CUDA cache
emptied: each loaded model's own ``release()``). A released model loads again if a later case asks for it.

Memory shares (vLLM's ``gpu_memory_utilization``): a model that runs alone takes the whole budget
(:data:`DEVICE_BUDGET`, vLLM's own default); the models of one co-resident group (a composite model's stages,
which answer one request together) split what their option blocks leave of the budget equally
(:func:`memory_shares`). A share stated in an option block is kept as stated; shares that cannot fit are a
:class:`PlacementError` before any case, as is a model whose tensor x pipeline parallel degree exceeds the
GPUs this process sees (:func:`check_backend_placement`, asked for every model before any case).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.core.errors import ModelError
from harness.models.base import Backend, resident_stages
from harness.models.placement import visible_gpus

DEVICE_BUDGET = 0.9
"""The share of one device's memory the harness hands out to the engines on it (vLLM's default
``gpu_memory_utilization``)."""
SHARE_OPTION = "gpu_memory_utilization"


class PlacementError(ModelError):
    """Models that cannot be placed on this machine's devices as configured."""


def parallel_degree(spec: str, options: Mapping[str, Any]) -> int:
    """The GPUs one copy of the model needs: ``tensor_parallel_size`` x ``pipeline_parallel_size`` (1 each by
    default); anything but a whole number >= 1 is a :class:`PlacementError` naming the spec and key."""
    degree = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = options.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlacementError(f"{spec}: {key} must be a whole number >= 1, got {value!r}", source=spec)
        degree *= value
    return degree


def largest_parallel_degree(blocks: Mapping[str, Mapping[str, Any]]) -> int:
    """The most GPUs one of these models needs (spec -> option block); 1 where none states a parallel size, and
    a block that states a bad one counts 1 here (:func:`check_backend_placement` names it before any case)."""
    degrees = [1]
    for spec, options in blocks.items():
        try:
            degrees.append(parallel_degree(spec, options))
        except PlacementError:
            continue
    return max(degrees)


def stated_share(spec: str, options: Mapping[str, Any]) -> float | None:
    """The ``gpu_memory_utilization`` an option block states (a number in (0, 1]), or None."""
    value = options.get(SHARE_OPTION)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise PlacementError(f"{spec}: {SHARE_OPTION} must be a number in (0, 1], got {value!r}", source=spec)
    return float(value)


def memory_shares(group: Mapping[str, Mapping[str, Any]], budget: float = DEVICE_BUDGET) -> dict[str, float]:
    """Spec -> memory share of each model of one co-resident group on one device.

    Stated shares are kept; the others split the rest equally: ``(budget - sum(stated)) / n_unstated``. Stated
    shares above the budget together, or none left for the unstated, are a :class:`PlacementError`."""
    stated = {spec: stated_share(spec, options) for spec, options in group.items()}
    fixed = sum(share for share in stated.values() if share is not None)
    unstated = [spec for spec, share in stated.items() if share is None]
    left = budget - fixed
    if fixed > budget + 1e-9 or (unstated and left <= 0):
        described = ", ".join(f"{spec} {share}" for spec, share in stated.items() if share is not None)
        raise PlacementError(
            f"models that must be resident together on one device state {SHARE_OPTION} {described}: "
            f"{fixed:g} of a budget of {budget:g}"
            + (f", leaving nothing for {', '.join(unstated)}" if unstated else "")
            + "; lower the stated shares in the option blocks"
        )
    return {spec: share if share is not None else left / len(unstated) for spec, share in stated.items()}


def check_parallel_fits(spec: str, degree: int, gpus: Sequence[str]) -> None:
    """A GPU model's parallel degree fits in the GPUs this process sees, else a :class:`PlacementError` naming the
    model, its degree and the GPUs."""
    if degree > len(gpus):
        raise PlacementError(
            f"{spec}: needs {degree} GPUs (tensor x pipeline parallel) and this process sees {len(gpus)} "
            f"({', '.join(gpus) or 'none'}); lower the parallel sizes or give the run more GPUs",
            source=spec,
        )


def check_backend_placement(backend: Backend, options: Mapping[str, Any], gpus: Sequence[str] | None = None) -> None:
    """Before any case: the model's stated share and its stages' shares fit a device's budget, and a model on a GPU
    fits in the GPUs this process sees (``gpus``; default :func:`harness.models.placement.visible_gpus`)."""
    stated_share(backend.spec, options)
    stages = resident_stages(backend)
    memory_shares(stages)
    for spec, block in stages.items():
        parallel_degree(spec, block)
    degree = parallel_degree(backend.spec, options)
    if backend.memory_device() == "cuda":
        check_parallel_fits(backend.spec, degree, visible_gpus() if gpus is None else gpus)


@dataclasses.dataclass
class Residence:
    """One load of one model on one device: when it loaded, and when and for whom it was released."""

    spec: str
    device: str
    share: float
    group: str
    loaded_at: float
    released_at: float | None = None
    released_for: str | None = None
    release: Callable[[], None] | None = dataclasses.field(default=None, repr=False, compare=False)

    def to_json(self, start: float) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "device": self.device,
            "share": round(self.share, 4),
            "loaded_s": round(self.loaded_at - start, 3),
            "released_s": None if self.released_at is None else round(self.released_at - start, 3),
            "released_for": self.released_for,
        }


class Residency:
    """The run's loaded models per device (``capacity``: the share of a device that may be alive at once)."""

    def __init__(self, capacity: float = DEVICE_BUDGET, clock: Callable[[], float] = time.monotonic):
        self.capacity = capacity
        self.clock = clock
        self.start = clock()
        self.history: list[Residence] = []

    def alive(self, device: str | None = None) -> list[Residence]:
        return [r for r in self.history if r.released_at is None and (device is None or r.device == device)]

    def admit(self, spec: str, device: str, share: float, group: str, release: Callable[[], None]) -> None:
        """Before ``spec`` loads: release the least recently loaded models of other groups on ``device`` until its
        share fits beside the rest, then record it as alive (``release`` undoes its load)."""
        for resident in self.alive(device):
            if sum(r.share for r in self.alive(device)) + share <= self.capacity + 1e-9:
                break
            if resident.group != group:
                self.released(resident, for_spec=spec)
        used = sum(r.share for r in self.alive(device))
        if used + share > self.capacity + 1e-9:
            raise PlacementError(
                f"{spec}: its memory share {share:g} does not fit on {device} beside "
                f"{', '.join(f'{r.spec} ({r.share:g})' for r in self.alive(device))}, which must stay resident "
                f"with it (budget {self.capacity:g})",
                source=spec,
            )
        self.history.append(Residence(spec, device, share, group, self.clock(), release=release))

    def released(self, resident: Residence, for_spec: str | None = None) -> None:
        if resident.release is not None:
            resident.release()
        resident.released_at = self.clock()
        resident.released_for = for_spec

    def release(self, spec: str) -> None:
        """Release ``spec`` wherever it is alive (the rest of the run no longer needs it)."""
        for resident in self.alive():
            if resident.spec == spec:
                self.released(resident)

    def release_all(self) -> None:
        for resident in self.alive():
            self.released(resident)

    def to_json(self) -> list[dict[str, Any]]:
        """Each load in order: model, device, share, seconds from the run's start to its load and release, and the
        model it was released for (None: released at the end, or alive)."""
        return [resident.to_json(self.start) for resident in self.history]
