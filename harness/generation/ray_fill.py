"""``lalm-fairness-generate --ray``: a plan (:mod:`harness.generation.request_plan`) filled on a Ray cluster through Ray Data.

Per model of the plan, the rows become a Ray dataset mapped in batches by a pool of ``workers`` actors
(:class:`PlanWorker`): each builds the model from the row's spec and option block once, checks its fingerprint
against the plan's, refuses, naming it, a row whose request hashes to another key than the row's (the driver stores
each answer under the row's key; the in-process fill refuses it too, :func:`harness.generation.request_plan.checked_requests`), and
answers its batches through :class:`~harness.generation.cached_model.CachedModel` (so a composite model's stages and a batch's
duplicates work as in a gate run). Rows of namespace ``embedding`` are answered with the model's own semantic
embedding of their text (:func:`harness.generation.embedding_rows.planned_embedding_entries`, as the in-process fill does). An actor
claims one CPU, the model's tensor x pipeline parallel degree of GPUs when the cluster has GPUs, and any
``resources`` given. Actors and their tasks are restarted and retried by Ray when a node is lost.

The driver stores each returned batch in its cache and rewrites ``--out`` (atomically) after it, keyed by cache
key: an answer is written once whichever actor or retry gave it, and a run stopped part-way keeps what it had.
The workers read each row's audio from its path, so the plan's audio folder must be readable where they run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.cache import OutputCache
from harness.core.errors import ModelError, import_extra
from harness.core.requests import DecodingParams
from harness.generation.cached_model import NAMESPACE, CachedModel
from harness.generation.embedding_rows import planned_embedding_entries
from harness.generation.request_plan import (
    EMBEDDING_NAMESPACE,
    OPTIONAL_PLAN_COLUMNS,
    PLAN_COLUMNS,
    FillCounts,
    PlanError,
    PlannedRequest,
    generation_batches,
    model_groups,
)
from harness.models.residency import parallel_degree

INSTALL_HINT = "pip install 'lalm-fairness[ray]'"
BATCH_SIZE = 16


def import_ray() -> Any:
    return import_extra(("ray", "ray.data"), lambda exc: PlanError(f"--ray needs Ray Data: {INSTALL_HINT} ({exc})"))


def _row(record: Mapping[str, Any]) -> PlannedRequest:
    """A plan row from a Ray Data record (pandas turns a missing string into NaN)."""

    def value(name: str) -> Any:
        item = record[name]
        return None if item is None or (isinstance(item, float) and math.isnan(item)) else item

    names = [*PLAN_COLUMNS, *(name for name in OPTIONAL_PLAN_COLUMNS if name in record)]
    return PlannedRequest(**{name: value(name) for name in names})


@dataclasses.dataclass(frozen=True)
class WorkerAnswer:
    """One answer a worker returns: the cache entry to store (key, namespace, fingerprint, text and metadata as
    JSON, as the in-process fill stores it), or, with ``error``, the row's refusal or failure (nothing stored)."""

    key: str
    namespace: str
    fingerprint: str
    text: str
    metadata: str
    error: str

    @classmethod
    def refused(cls, key: str, reason: str) -> WorkerAnswer:
        return cls(key, "", "", "", "{}", reason)

    @classmethod
    def columns(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]


class PlanWorker:
    """A Ray Data actor: one model, loaded on its first batch, answering batches of plan rows."""

    def __init__(self, spec: str, options: str, fingerprint: str):
        self.scratch = tempfile.TemporaryDirectory(prefix="lalm-ray-worker-")
        self.model = CachedModel(
            spec, OutputCache(self.scratch.name), DecodingParams(), json.loads(options), progress=False
        )
        if self.model.fingerprint != fingerprint:
            raise PlanError(
                f"{spec}: its fingerprint on this worker is {self.model.fingerprint}, the plan's is {fingerprint}"
            )

    def __call__(self, batch: Any) -> Any:
        import pandas as pd

        rows = [_row(record) for record in batch.to_dict("records")]
        answers: list[WorkerAnswer] = []
        embedding_rows = [row for row in rows if row.namespace == EMBEDDING_NAMESPACE]
        if embedding_rows:
            answers += self._embeddings(embedding_rows)
        for decoding, group, checked in generation_batches(rows, self.model.keys):
            answers += [WorkerAnswer.refused(refusal.key, refusal.reason) for refusal in checked.refused]
            if not checked.rows:
                continue
            error = ""
            try:
                texts = self.model.generate(list(checked.requests), label=group[0].label, decoding=decoding)
            except ModelError as exc:
                texts, error = [""] * len(checked.rows), str(exc)
            metadata = [json.dumps({"spec": self.model.spec, "label": row.label}) for row in checked.rows]
            answers += [
                WorkerAnswer(row.key, NAMESPACE, self.model.fingerprint, text, entry, error)
                for row, text, entry in zip(checked.rows, texts, metadata)
            ]
        return pd.DataFrame([dataclasses.asdict(answer) for answer in answers], columns=WorkerAnswer.columns())

    def _embeddings(self, rows: Sequence[PlannedRequest]) -> list[WorkerAnswer]:
        """The model's own embeddings the ``rows`` ask for, as the cache entries the in-process fill stores."""
        try:
            entries, refused = planned_embedding_entries(self.model, rows)
        except ModelError as exc:
            return [WorkerAnswer.refused(row.key, f"{self.model.spec}: {exc}") for row in rows]
        answers = [WorkerAnswer(key, namespace, fingerprint, text, json.dumps(metadata), "")
                   for key, namespace, fingerprint, text, metadata in entries]  # fmt: skip
        return answers + [WorkerAnswer.refused(refusal.key, refusal.reason) for refusal in refused]


def fill_on_ray(
    rows: Sequence[PlannedRequest],
    out: str | Path,
    cache: OutputCache,
    *,
    address: str,
    workers: int = 1,
    resources: Mapping[str, float] | None = None,
    batch_size: int = BATCH_SIZE,
) -> FillCounts:
    """Answer the ``rows`` that ``out`` does not hold yet on the Ray cluster at ``address`` (``auto``: the one
    this machine belongs to), ``workers`` actors per model; ``out`` is rewritten after every batch."""
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    ray = import_ray()
    out = Path(out)
    if out.is_file():
        cache.import_file(out)
    planned_keys = [row.key for row in rows]
    answered = set(cache.lookup(planned_keys))
    counts = FillCounts(planned=len(rows), already=len(answered))
    left = [row for row in rows if row.key not in answered]
    if not left:
        return counts
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    try:
        cluster_gpus = ray.cluster_resources().get("GPU", 0)
        for (spec, options, fingerprint), group in model_groups(left).items():
            gpus = parallel_degree(spec, json.loads(options)) if cluster_gpus else 0
            dataset = ray.data.from_items([dataclasses.asdict(row) for row in group])
            mapped = dataset.map_batches(
                PlanWorker,
                fn_constructor_kwargs={"spec": spec, "options": options, "fingerprint": fingerprint},
                batch_size=batch_size,
                batch_format="pandas",
                compute=ray.data.ActorPoolStrategy(min_size=1, max_size=workers),
                num_cpus=1,
                num_gpus=gpus,
                resources=dict(resources or {}) or None,
                max_restarts=-1,
                max_task_retries=-1,
            )
            try:
                for batch in mapped.iter_batches(batch_format="pandas", batch_size=None):
                    entries = [
                        (
                            record["key"],
                            record["namespace"],
                            record["fingerprint"],
                            record["text"],
                            json.loads(record["metadata"]),
                        )
                        for record in batch.to_dict("records")
                        if not record["error"]
                    ]
                    cache.put_many(entries)
                    counts.failures += sorted({record["error"] for record in batch.to_dict("records")} - {""})
                    cache.export(out, set(cache.lookup(planned_keys)))
            except Exception as exc:  # an actor that cannot start (a fingerprint that differs there) fails its model
                counts.failures.append(f"{spec}: {type(exc).__name__}: {str(exc).splitlines()[-1:]}")
    finally:
        ray.shutdown()
    counts.generated = len(cache.lookup(planned_keys)) - counts.already
    counts.failed = counts.left
    return counts
