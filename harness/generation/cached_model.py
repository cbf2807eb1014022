"""Cached generation: answers come from the cache, and the model is loaded only on the first miss."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from harness.cache import IMPORTED, OutputCache, generation_cache_keys
from harness.core.errors import ModelError, PartialGenerationError, RequestsPlanned
from harness.core.progress import Progress
from harness.core.requests import DecodingParams, GenerationRequest, prepare_audio
from harness.generation.request_plan import Planner
from harness.models import build_backend
from harness.models.base import (
    Backend,
    ComposedOfStages,
    Model,
    PreparesRequests,
    StageSpec,
    release_model,
    resident_stages,
)
from harness.models.residency import DEVICE_BUDGET, Residency, memory_shares, stated_share

NAMESPACE = "generate"


class CachedModel:
    """A model spec behind the output cache.

    Misses are generated in chunks of ``chunk_size`` and each chunk is stored as soon as it is done, so
    an interrupted run loses at most one chunk. Requests of one batch that share a cache key are asked once
    (generated once, or read once) and that answer is given to each of them. Empty answers are stored as they are
    (the checks count them as ``empty``). A chunk whose backend answered only some requests (:class:`~harness.core.errors.PartialGenerationError`)
    keeps those answers in the cache and the next chunk runs; the first error is raised once every chunk
    has had its turn. A chunk that failed outright stops the generation at once.

    With a ``residency`` (the run's, :mod:`harness.models.residency`), a model that holds a device's memory is
    admitted there before it loads (which may release the models of other stages on that device) with its memory
    ``share``: stated in its option block, else the whole budget, or for a stage of a composite model (``group``:
    the composite's spec) its equal part of what the stages' option blocks leave.

    With a ``planner`` (``--plan``, :mod:`harness.generation.request_plan`), nothing is generated: the requests the cache lacks are
    planned and :class:`~harness.core.errors.RequestsPlanned` stops the caller there.

    ``backend``: the spec's backend, already built with ``options`` (a run builds each once,
    :class:`harness.gate.model_pool.ModelPool`); else it is built here.
    """

    def __init__(
        self,
        spec: str,
        cache: OutputCache,
        decoding: DecodingParams,
        options: Mapping[str, Any] | None = None,
        chunk_size: int = 32,
        progress: bool = True,
        offline: bool = False,
        residency: Residency | None = None,
        group: str | None = None,
        share: float | None = None,
        planner: Planner | None = None,
        backend: Backend | None = None,
    ):
        self.spec = spec
        self.options = dict(options or {})
        self.planner = planner
        self.cache = cache
        self.decoding = decoding
        self.chunk_size = chunk_size
        self.progress = progress
        self.backend: Backend = backend if backend is not None else build_backend(spec, options)
        if isinstance(self.backend, ComposedOfStages):
            self.backend.compose(self._stage)
        self.fingerprint = self.backend.fingerprint()
        self._model: Model | None = None
        self.offline = offline
        self.residency = residency
        self.group = group or spec
        self.share = stated_share(spec, options or {}) or share or DEVICE_BUDGET
        self.stage_shares = memory_shares(resident_stages(self.backend)) if residency is not None else {}
        self.calls = 0
        self.hits = 0
        self.hits_imported = 0
        self.duplicates = 0
        self.served_keys: set[str] = set()

    def _stage(self, stage: StageSpec, chunk_size: int) -> CachedModel:
        """A stage of a composite backend, behind the same cache (its own fingerprint keys its entries)."""
        return CachedModel(
            stage.spec,
            self.cache,
            stage.decoding,
            stage.options,
            chunk_size=chunk_size,
            residency=self.residency,
            group=self.group,
            share=self.stage_shares.get(stage.spec),
            planner=self.planner,
        )

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def model(self) -> Model:
        if self._model is None:
            if self.offline:
                raise ModelError(
                    f"{self.spec}: an output is missing from the cache and the run is offline (no model is loaded); "
                    "import the cache export of the run that made the outputs, or drop --offline"
                )
            device = self.backend.memory_device() if self.residency is not None else None
            if device is not None:
                self.residency.admit(self.spec, device, self.share, self.group, self.release)
            try:
                self._model = load_with_share(self.backend, self.share if device is not None else None)
            except BaseException:
                if device is not None:
                    self.residency.release(self.spec)
                raise
        return self._model

    def release(self) -> None:
        """Give back the loaded model's memory (:func:`harness.models.base.release_model`); it loads again when
        asked."""
        model, self._model = self._model, None
        if model is not None:
            release_model(model)

    def keys(self, requests: Sequence[GenerationRequest], decoding: DecodingParams | None = None) -> list[str]:
        params = (decoding or self.decoding).as_dict()
        return generation_cache_keys(NAMESPACE, self.fingerprint, params, requests)

    def generate(
        self, requests: Sequence[GenerationRequest], label: str = "", decoding: DecodingParams | None = None
    ) -> list[str]:
        """The answers of ``requests``, from the cache or generated; ``decoding`` replaces the model's own for
        these requests (a task's token budget), and keys their cache entries."""
        decoding = decoding or self.decoding
        keys = self.keys(requests, decoding)
        self.served_keys.update(keys)
        first_of_key = {key: index for index, key in reversed(list(enumerate(keys)))}
        self.duplicates += len(keys) - len(first_of_key)
        cached = self._read(list(first_of_key))
        missing = sorted(index for key, index in first_of_key.items() if key not in cached)
        if self.planner is not None:
            self._plan(requests, keys, missing, cached, label, decoding)
        if not missing:
            return [cached[key] for key in keys]
        with self.cache.lock(f"{self.fingerprint}|{label}"):
            cached.update(self._read([keys[index] for index in missing]))  # what another process wrote meanwhile
            missing = [index for index in missing if keys[index] not in cached]
            self._generate_missing(requests, keys, missing, cached, label, decoding)
        return [cached.get(key, "") for key in keys]

    def _plan(self, requests, keys, missing, cached, label, decoding) -> None:
        self.planner.note_cached(list(cached))
        if missing:
            prepare_audio([requests[index].audio for index in missing], self.progress)
            self.planner.add(
                namespace=NAMESPACE,
                spec=self.spec,
                fingerprint=self.fingerprint,
                options=self.options,
                decoding=decoding,
                label=label,
                requests=[requests[index] for index in missing],
                keys=[keys[index] for index in missing],
            )
            raise RequestsPlanned(f"{self.spec}: {len(missing)} request(s) of {label or 'a batch'} planned")

    def _read(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored answers of ``keys``, counted as read (``hits``; ``hits_imported`` of them imported entries)."""
        found = self.cache.lookup(keys)
        self.hits += len(found)
        self.hits_imported += sum(origin == IMPORTED for _, origin in found.values())
        return {key: text for key, (text, _) in found.items()}

    def output_counts(self) -> dict[str, int]:
        """This process's outputs of the model: generated, read from the cache, of those read the imported
        entries, and the requests answered by an identical request of the same batch (``duplicates``)."""
        return {
            "generated": self.calls,
            "read": self.hits,
            "read_imported": self.hits_imported,
            "duplicates": self.duplicates,
        }

    def _generate_missing(self, requests, keys, missing, cached, label, decoding) -> None:
        """Generate the ``missing`` requests chunk by chunk, storing each chunk; with ``progress``, one bar (or
        plain lines off a terminal, :mod:`harness.core.progress`) per model x task, advanced per chunk (the
        backend's and the stages' own bars stay silent inside it)."""
        bar = (
            Progress(len(missing), f"{self.spec} {label}".rstrip(), min_items=self.chunk_size)
            if self.progress
            else contextlib.nullcontext()
        )
        first_error: PartialGenerationError | None = None
        prepare_audio([requests[index].audio for index in missing], self.progress)
        with bar:
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                try:
                    model = self.model()
                    if start == 0 and isinstance(model, PreparesRequests):  # all the missing, before any chunk
                        model.prepare_requests([requests[index] for index in missing], self.progress)
                    answers = dict(enumerate(model.generate([requests[index] for index in chunk], decoding)))
                    complete = True
                except PartialGenerationError as error:
                    if not error.answers:
                        raise
                    answers, complete, first_error = error.answers, False, first_error or error
                except ModelError:
                    raise
                except Exception as exc:
                    raise ModelError(
                        f"{self.spec}: generation failed for {label or 'a batch'} ({type(exc).__name__}: {exc})"
                    ) from exc
                if complete and len(answers) != len(chunk):
                    raise ModelError(f"{self.spec}: returned {len(answers)} answers for {len(chunk)} requests")
                self.calls += len(answers)
                self.cache.put_many(
                    [
                        (
                            keys[chunk[position]],
                            NAMESPACE,
                            self.fingerprint,
                            answer,
                            {"spec": self.spec, "label": label},
                        )
                        for position, answer in answers.items()
                    ]
                )
                cached.update({keys[chunk[position]]: answer for position, answer in answers.items()})
                if self.progress:
                    bar.advance_to(start + len(chunk))
        if first_error is not None:
            raise first_error


def load_with_share(backend: Backend, share: float | None) -> Model:
    """``backend.load()``, handing it its memory share where its ``load`` takes one (``memory_share``: vLLM's)."""
    if share is not None and "memory_share" in inspect.signature(backend.load).parameters:
        return backend.load(memory_share=share)
    return backend.load()
