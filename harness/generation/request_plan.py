"""The gate's requests as a plan: every request the selected cases need that the cache does not hold, one Parquet
row each, for another engine to answer (``lalm-fairness-generate``, a Ray cluster, a batch API), and then
``--import-cache`` to re-score.

A row holds the cache key and namespace; the model spec, its fingerprint and its option block (redacted, as
everywhere: :mod:`harness.core.redaction`); the decoding parameters; the prompt, system text and declared answer
form (JSON); the audio's content hash and the path of its float32 WAV, written once per hash into a folder beside
the plan; and the label of the stage that asked. Stages run in order, so a request whose input is not in the cache
yet (an extraction of an answer still to be generated) cannot be planned: :class:`RequestsPlanned` stops that
case at its first miss, and the next round's plan, made once this round's answers are imported, holds it.

:func:`shard` cuts a plan into ``N`` disjoint parts by cache key, so that an array job can fill one part per task.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.answers import AnswerForm, ChoiceForm, Field, FieldsForm, JsonForm
from harness.core.errors import import_extra
from harness.core.redaction import redact
from harness.core.requests import Audio, DecodingParams, GenerationRequest

PLAN_COLUMNS = (
    "key", "namespace", "spec", "fingerprint", "options", "decoding", "prompt", "system", "answer_form",
    "audio_sha256", "audio_path", "label",
)  # fmt: skip
OPTIONAL_PLAN_COLUMNS = ("audio_recipe", "embedding", "replicate")
"""Columns a plan written before them lacks (read as None): ``audio_recipe``, the recipe that identifies derived
audio (:attr:`harness.core.requests.Audio.recipe`, a counterfactual arm), whose hash is not its samples';
``embedding``, the kind of a row of namespace ``embedding`` (``embed-agg`` or ``embed-eowl``: the model's own
semantic embedding of the row's ``prompt``, :mod:`harness.semantic`); and ``replicate``, a repeated request's
index as text (:attr:`harness.core.requests.GenerationRequest.replicate`, the audio floor's replicate arm), None
for replicate 0."""
EMBEDDING_NAMESPACE = "embedding"
"""The namespace of a row that asks for an embedding, not an answer (:data:`harness.semantic.NAMESPACE`)."""
AUDIO_FOLDER_SUFFIX = ".audio"


class PlanError(ValueError):
    """A plan file that cannot be read, or a row that cannot be turned back into a request (names file and row)."""


@dataclasses.dataclass(frozen=True)
class PlannedRequest:
    """One row of a plan."""

    key: str
    namespace: str
    spec: str
    fingerprint: str
    options: str
    decoding: str
    prompt: str
    system: str | None
    answer_form: str | None
    audio_sha256: str | None
    audio_path: str | None
    label: str
    audio_recipe: str | None = None
    embedding: str | None = None
    replicate: str | None = None

    def request(self) -> GenerationRequest:
        """The request this row asks (its audio read back from ``audio_path``)."""
        audio = None
        if self.audio_path is not None:
            import soundfile

            samples, rate = soundfile.read(self.audio_path, dtype="float32")
            audio = Audio(samples, rate, recipe=self.audio_recipe)
            if audio.content_hash != self.audio_sha256:
                raise PlanError(f"{self.audio_path}: its samples do not hash to the plan's {self.audio_sha256}")
        replicate = int(self.replicate) if self.replicate else 0
        return GenerationRequest(self.prompt, audio, self.system, form_from_json(self.answer_form), replicate)

    def decoding_params(self) -> DecodingParams:
        return DecodingParams.from_mapping(json.loads(self.decoding), source=f"plan row {self.key}: decoding")

    def option_block(self) -> dict[str, Any]:
        return json.loads(self.options)


@dataclasses.dataclass(frozen=True)
class RefusedRow:
    """A plan row a fill will not answer: its ``key`` and why (the sentence names the row)."""

    key: str
    reason: str


@dataclasses.dataclass(frozen=True)
class CheckedRows:
    """Rows of one model and decoding whose requests hash, where the fill runs, to their plan keys (``rows`` and
    their ``requests``, in order), and those ``refused``."""

    rows: tuple[PlannedRequest, ...]
    requests: tuple[GenerationRequest, ...]
    refused: tuple[RefusedRow, ...]


def checked_requests(
    rows: Sequence[PlannedRequest], keys_here: Callable[[Sequence[GenerationRequest]], Sequence[str]]
) -> CheckedRows:
    """Each row's request, kept when the key it hashes to here, ``keys_here(requests)`` (the model's
    :meth:`harness.generation.cached_model.CachedModel.keys` under the rows' decoding: ``cache_key("generate", fingerprint,
    decoding, request identity)``), is the row's ``key``; refused, naming the row, when it hashes to another key (an
    answer stored under the row's key would be found for another request) or its audio does not read back to the
    plan's hash. Every fill (in process, on Ray) answers only the kept rows."""
    readable: list[tuple[PlannedRequest, GenerationRequest]] = []
    refused: list[RefusedRow] = []
    for row in rows:
        try:
            readable.append((row, row.request()))
        except (PlanError, OSError, RuntimeError) as exc:  # soundfile raises LibsndfileError (a RuntimeError)
            refused.append(RefusedRow(row.key, f"plan row {row.key} ({row.spec}, {row.label}): refused: {exc}"))
    keys = list(keys_here([request for _, request in readable])) if readable else []
    kept = []
    for (row, request), key in zip(readable, keys, strict=True):
        if key == row.key:
            kept.append((row, request))
        else:
            refused.append(
                RefusedRow(
                    row.key,
                    f"plan row {row.key} ({row.spec}, {row.label}): its request hashes to {key} here, not to the "
                    "row's key: refused, as an answer stored under the row's key would be found for another request",
                )
            )
    return CheckedRows(tuple(row for row, _ in kept), tuple(request for _, request in kept), tuple(refused))


def form_to_json(form: AnswerForm | None) -> str | None:
    """A declared answer form as JSON with its kind (``fields``, ``choice`` or ``json``)."""
    if form is None:
        return None
    kind = {FieldsForm: "fields", ChoiceForm: "choice", JsonForm: "json"}[type(form)]
    return json.dumps({"kind": kind, **dataclasses.asdict(form)}, sort_keys=True)


def form_from_json(text: str | None) -> AnswerForm | None:
    if text is None:
        return None
    data = json.loads(text)
    kind = data.pop("kind")
    if kind == "fields":
        return FieldsForm(tuple(Field(f["label"], tuple(f["options"]), f["items"]) for f in data["fields"]))
    if kind == "choice":
        return ChoiceForm(tuple(data["options"]))
    if kind == "json":
        return JsonForm(
            tuple((key, value) for key, value in data["properties"]),
            tuple((key, tuple(allowed)) for key, allowed in data["choices"]),
            data["schema"],
        )
    raise PlanError(f"unknown answer form kind {kind!r}")


class Planner:
    """Collects the requests a run asks for: how many in all (by cache key) and which the cache lacks."""

    def __init__(self, audio_folder: str | Path):
        self.audio_folder = Path(audio_folder)
        self.rows: dict[str, PlannedRequest] = {}
        self.cached: set[str] = set()

    @property
    def total(self) -> int:
        return len(self.cached | set(self.rows))

    def note_cached(self, keys: Sequence[str]) -> None:
        self.cached.update(keys)

    def add(
        self,
        *,
        namespace: str,
        spec: str,
        fingerprint: str,
        options: Mapping[str, Any],
        decoding: DecodingParams,
        label: str,
        requests: Sequence[GenerationRequest],
        keys: Sequence[str],
        embedding: str | None = None,
    ) -> None:
        """Plan ``requests`` (whose cache keys are ``keys``), writing each new audio once; with ``embedding``, each
        request's prompt is a text whose embedding of that kind is asked (namespace ``embedding``)."""
        option_text = redact(json.dumps(dict(options), sort_keys=True, default=str))
        decoding_text = json.dumps(decoding.as_dict(), sort_keys=True)
        for key, request in zip(keys, requests, strict=True):
            if key in self.rows:
                continue
            audio_path = None if request.audio is None else str(self._audio_file(request.audio))
            self.rows[key] = PlannedRequest(
                key=key,
                namespace=namespace,
                spec=spec,
                fingerprint=fingerprint,
                options=option_text,
                decoding=decoding_text,
                prompt=request.prompt,
                system=request.system,
                answer_form=form_to_json(request.answer_form),
                audio_sha256=None if request.audio is None else request.audio.content_hash,
                audio_path=audio_path,
                label=label,
                audio_recipe=None if request.audio is None else request.audio.recipe,
                embedding=embedding,
                replicate=str(request.replicate) if request.replicate else None,
            )

    def _audio_file(self, audio: Audio) -> Path:
        path = self.audio_folder / f"{audio.content_hash}.wav"
        if not path.is_file():
            import soundfile

            self.audio_folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".wav.partial")
            soundfile.write(partial, audio.samples, audio.sample_rate, subtype="FLOAT", format="WAV")
            partial.replace(path)
        return path.resolve()

    def write(self, path: str | Path) -> int:
        """Write the planned rows (sorted by key) to a Parquet file; returns their count."""
        write_plan(path, sorted(self.rows.values(), key=lambda row: row.key))
        return len(self.rows)


def audio_folder_for(plan_path: str | Path) -> Path:
    """Where a plan's audio files go: ``<plan>.audio/`` beside it."""
    plan_path = Path(plan_path)
    return plan_path.with_name(plan_path.name + AUDIO_FOLDER_SUFFIX)


def _pyarrow() -> Any:
    return import_extra(
        ("pyarrow", "pyarrow.parquet"),
        lambda exc: PlanError(f"plans are Parquet files and need pyarrow: pip install 'lalm-fairness[plan]' ({exc})"),
    )


def write_plan(path: str | Path, rows: Sequence[PlannedRequest]) -> None:
    pa = _pyarrow()
    columns = {name: [getattr(row, name) for row in rows] for name in (*PLAN_COLUMNS, *OPTIONAL_PLAN_COLUMNS)}
    table = pa.table({name: pa.array(values, type=pa.string()) for name, values in columns.items()})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    pa.parquet.write_table(table, partial)
    partial.replace(path)


def read_plan(path: str | Path) -> list[PlannedRequest]:
    """The rows of a plan file; a missing column or key is a :class:`PlanError` naming the file (and row)."""
    pa = _pyarrow()
    try:
        table = pa.parquet.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise PlanError(f"{path}: cannot be read as a plan ({exc})") from exc
    missing = [name for name in PLAN_COLUMNS if name not in table.column_names]
    if missing:
        raise PlanError(f"{path}: not a lalm-fairness plan, it lacks the column(s) {missing}")
    names = [*PLAN_COLUMNS, *(name for name in OPTIONAL_PLAN_COLUMNS if name in table.column_names)]
    rows = [PlannedRequest(**{name: row[name] for name in names}) for row in table.to_pylist()]
    for index, row in enumerate(rows):
        if not row.key or not row.fingerprint or not row.spec:
            raise PlanError(f"{path}, row {index}: key, spec and fingerprint must be set")
    return rows


def parse_shard(text: str) -> tuple[int, int]:
    """``i/N`` -> (i, N), 1 <= i <= N; anything else is a ValueError saying the expected form."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError(f"--shard {text!r}: expected i/N with 1 <= i <= N (e.g. 2/8)")
    return int(match.group(1)), int(match.group(2))


def shard(rows: Sequence[PlannedRequest], index: int, count: int) -> list[PlannedRequest]:
    """The ``index``-th of ``count`` disjoint parts (1-based): the rows whose key, read as a hexadecimal number,
    is ``index - 1`` modulo ``count``; the parts together are the plan."""
    return [row for row in rows if int(row.key[:15], 16) % count == index - 1]


@dataclasses.dataclass
class FillCounts:
    """Rows of the plan (or shard): answered before this run, answered now, failed, and still unanswered."""

    planned: int = 0
    already: int = 0
    generated: int = 0
    failed: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)

    @property
    def left(self) -> int:
        return self.planned - self.already - self.generated

    def line(self) -> str:
        return (
            f"{self.planned} planned: {self.already + self.generated} done ({self.already} before this run), "
            f"{self.failed} failed, {self.left} left"
        )


def model_groups(rows: Sequence[PlannedRequest]) -> dict[tuple[str, str, str], list[PlannedRequest]]:
    """Rows per model as planned: (spec, option block, fingerprint)."""
    groups: dict[tuple[str, str, str], list[PlannedRequest]] = {}
    for row in rows:
        groups.setdefault((row.spec, row.options, row.fingerprint), []).append(row)
    return groups


def generation_batches(
    rows: Sequence[PlannedRequest], keys: Callable[..., Sequence[str]]
) -> Iterator[tuple[DecodingParams, list[PlannedRequest], CheckedRows]]:
    """The rows that ask a generation (every namespace but :data:`EMBEDDING_NAMESPACE`) grouped by their decoding,
    in first-seen order: one ``generate`` call a group. Each group comes with its decoding's parameters and its
    :func:`checked_requests` under ``keys(requests, decoding=...)`` (the model's
    :meth:`~harness.generation.cached_model.CachedModel.keys`), both made as the group is reached."""
    by_decoding: dict[str, list[PlannedRequest]] = {}
    for row in rows:
        if row.namespace != EMBEDDING_NAMESPACE:
            by_decoding.setdefault(row.decoding, []).append(row)
    for group in by_decoding.values():
        decoding = group[0].decoding_params()
        yield decoding, group, checked_requests(group, functools.partial(keys, decoding=decoding))
