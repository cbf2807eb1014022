"""A plan holds the model's own embedding requests (semantic-aware paper §III-B, Embed-AGG and Embed-EOWL), and
every fill answers them with the embeddings the gate computes in process, under the keys the gate reads."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from harness.cache import OutputCache
from harness.core.errors import RequestsPlanned
from harness.core.requests import DecodingParams
from harness.generation.cached_model import CachedModel
from harness.generation.fill_plan import fill
from harness.generation.ray_fill import PlanWorker
from harness.generation.request_plan import EMBEDDING_NAMESPACE, Planner, read_plan, write_plan
from harness.models import BACKENDS, register_backend
from harness.models.base import Backend
from harness.semantic import EMBEDDING_VERSION, cached_embeddings, embedding_key, eowl_prompt, own_embedders

pytest.importorskip("pyarrow")

TEXTS = ["the cat sat", "a dog ran", "the cat sat", "birds sing at dawn"]


def vector(text: str, dim: int = 6) -> np.ndarray:
    """A text's made-up hidden state: fixed numbers from its SHA-256."""
    digest = hashlib.sha256(text.encode()).digest()
    return np.frombuffer(digest[:dim], dtype=np.uint8).astype(np.float64) / 255.0


class FakePass:
    def embed_agg(self, texts):
        return np.vstack([vector(text) for text in texts])

    def embed_eowl(self, prompts):
        return np.vstack([vector(prompt)[::-1] for prompt in prompts])


class FakeWeightsBackend(Backend):
    """A model whose weights are here: its own semantic source, loaded once per process (counted)."""

    loads = 0

    def __init__(self, spec, target, options):
        self.spec, self.target, self.options = spec, target, options

    def fingerprint(self):
        return f"fake-weights:{self.target}"

    def semantic_source(self):
        return self

    def load(self):
        type(self).loads += 1
        return self

    def semantic_pass(self):
        return FakePass()

    def generate(self, requests, params):
        return [f"an answer to {request.prompt}" for request in requests]


@pytest.fixture(autouse=True)
def fake_backend():
    register_backend("fakeweights", f"{__name__}:FakeWeightsBackend")
    FakeWeightsBackend.loads = 0
    yield
    BACKENDS.pop("fakeweights")


def planned_rows(tmp_path, spec="fakeweights:v1"):
    """The embedding rows a gate run under ``--plan`` writes for ``TEXTS`` (both kinds), read back from Parquet."""
    model = CachedModel(spec, OutputCache(tmp_path / "plan-cache"), DecodingParams(), progress=False)
    model.planner = Planner(tmp_path / "plan.parquet.audio")
    for embedder in own_embedders(model):
        with pytest.raises(RequestsPlanned, match=f"3 {embedder.name} embedding"):
            cached_embeddings(embedder, TEXTS, model.cache)
    assert FakeWeightsBackend.loads == 0, "planning loaded the model"
    model.planner.write(tmp_path / "plan.parquet")
    return read_plan(tmp_path / "plan.parquet")


def test_a_plan_holds_the_models_own_embeddings_and_a_fill_gives_the_in_process_ones(tmp_path):
    rows = planned_rows(tmp_path)
    assert len(rows) == 6 and {row.namespace for row in rows} == {EMBEDDING_NAMESPACE}
    assert {row.embedding for row in rows} == {"embed-agg", "embed-eowl"}
    assert {row.prompt for row in rows} == set(TEXTS)  # the reference text; the EOWL template is the fill's
    agg = f"embed-agg:v{EMBEDDING_VERSION}:fake-weights:v1"
    assert {row.key for row in rows if row.embedding == "embed-agg"} == {embedding_key(agg, text) for text in TEXTS}

    counts = fill(rows, tmp_path / "filled.jsonl.gz", OutputCache(tmp_path / "fill-cache"), progress=False)
    assert (counts.generated, counts.failed, counts.left) == (6, 0, 0)
    rescore = OutputCache(tmp_path / "rescore")
    rescore.import_file(tmp_path / "filled.jsonl.gz")
    next_round = CachedModel("fakeweights:v1", rescore, DecodingParams(), progress=False)
    next_round.planner = Planner(tmp_path / "next.audio")
    for embedder in own_embedders(next_round):
        cached_embeddings(embedder, TEXTS, rescore)
    assert not next_round.planner.rows and next_round.planner.total == 6  # asked, and found in the cache
    offline = CachedModel("fakeweights:v1", rescore, DecodingParams(), offline=True, progress=False)
    in_process = CachedModel("fakeweights:v1", OutputCache(tmp_path / "in-process"), DecodingParams(), progress=False)
    for read, computed in zip(own_embedders(offline), own_embedders(in_process)):
        np.testing.assert_array_equal(
            cached_embeddings(read, TEXTS, rescore), cached_embeddings(computed, TEXTS, in_process.cache)
        )
    np.testing.assert_allclose(cached_embeddings(own_embedders(offline)[1], TEXTS[:1], rescore)[0],
                               vector(eowl_prompt(TEXTS[0]))[::-1], rtol=1e-6)  # fmt: skip


def test_a_ray_worker_returns_the_entries_the_in_process_fill_stores(tmp_path):
    rows = planned_rows(tmp_path)
    fill(rows, tmp_path / "filled.jsonl.gz", OutputCache(tmp_path / "fill-cache"), progress=False)
    stored = OutputCache(tmp_path / "stored")
    stored.import_file(tmp_path / "filled.jsonl.gz")
    table = pd.read_parquet(tmp_path / "plan.parquet")
    worker = PlanWorker("fakeweights:v1", table.options[0], table.fingerprint[0])
    answered = worker(table)
    assert (answered.error == "").all() and set(answered.namespace) == {EMBEDDING_NAMESPACE}
    assert dict(zip(answered.key, answered.text)) == stored.get_many(list(table.key))
    assert set(answered.fingerprint) == {
        f"{kind}:v{EMBEDDING_VERSION}:fake-weights:v1" for kind in ("embed-agg", "embed-eowl")
    }


def test_an_embedding_row_whose_text_hashes_to_another_key_is_refused_naming_it(tmp_path):
    rows = planned_rows(tmp_path)
    table = pd.read_parquet(tmp_path / "plan.parquet")
    table.loc[0, "prompt"] = "an edited text"
    table.loc[1, "embedding"] = "embed-other"
    table.to_parquet(tmp_path / "altered.parquet", index=False)
    altered = read_plan(tmp_path / "altered.parquet")
    counts = fill(altered, tmp_path / "o.jsonl.gz", OutputCache(tmp_path / "fill-cache"), progress=False)
    assert (counts.generated, counts.failed) == (len(rows) - 2, 2)
    assert any(f"plan row {table.key[0]} (fakeweights:v1, " in failure and "its text hashes to" in failure
               for failure in counts.failures)  # fmt: skip
    assert any(f"plan row {table.key[1]}" in failure and "no 'embed-other' embedding" in failure
               for failure in counts.failures)  # fmt: skip
    answered = PlanWorker("fakeweights:v1", table.options[0], table.fingerprint[0])(table).set_index("key")
    assert answered.loc[table.key[0], "error"].startswith(f"plan row {table.key[0]} (fakeweights:v1, ")
    assert answered.loc[table.key[0], "text"] == "" and (answered.drop(index=list(table.key[:2])).error == "").all()


def test_a_model_without_weights_here_plans_no_embedding(tmp_path):
    model = CachedModel("sim:fair", OutputCache(tmp_path / "c"), DecodingParams(), progress=False)
    model.planner = Planner(tmp_path / "a")
    assert own_embedders(model) == () and not model.planner.rows


def test_an_old_plan_without_the_embedding_column_still_reads(tmp_path):
    rows = planned_rows(tmp_path)
    write_plan(tmp_path / "old.parquet", rows)
    table = pd.read_parquet(tmp_path / "old.parquet").drop(columns=["embedding"])
    table.to_parquet(tmp_path / "old.parquet", index=False)
    assert [row.embedding for row in read_plan(tmp_path / "old.parquet")] == [None] * len(rows)
