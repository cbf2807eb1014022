"""The ratio checks' semantic covariates: an embedding that cannot be computed (an offline re-score whose cache lacks
it) is a named deviation from the paper's row, and under ``--plan`` every embedder's requests are planned before
the case stops."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from harness.cache import OutputCache
from harness.checks.semantic_aware.tables import with_semantic_covariates
from harness.core.errors import ModelError, RequestsPlanned
from harness.semantic import Embedder, SemanticSetup

TEXTS = [f"sentence number {index}" for index in range(12)]


def working(texts):
    return np.vstack([[len(text), index % 3, index % 5, float(index) ** 0.5] for index, text in enumerate(texts)])


def failing(texts):
    raise ModelError("hf:tiny: an output is missing from the cache and the run is offline")


@dataclasses.dataclass
class Context:
    cache: OutputCache
    setup: SemanticSetup

    def semantics(self, model):
        return self.setup


def context(tmp_path, *embedders):
    setup = SemanticSetup(tuple(embedders), "model", "the model under test's own Embed-AGG and Embed-EOWL (hf:tiny)")
    return Context(OutputCache(tmp_path / "cache"), setup)


def test_an_embedding_that_cannot_be_computed_is_a_named_deviation(tmp_path):
    agg = Embedder("embed-agg:hf:tiny", "embed-agg:v2:tiny", failing, "Embed-AGG", "embed-agg")
    eowl = Embedder("embed-eowl:hf:tiny", "embed-eowl:v2:tiny", working, "Embed-EOWL", "embed-eowl")
    table, sets, semantics = with_semantic_covariates(
        context(tmp_path, agg, eowl), "hf:tiny", pd.DataFrame(index=range(12)), TEXTS, 2
    )
    assert list(sets) == ["Embed-EOWL"] and list(table.columns) == ["embed_eowl_pc1", "embed_eowl_pc2"]
    assert "offline" in semantics["embeddings"]["Embed-AGG"]["error"]
    assert semantics["deviation"].startswith("semantic covariates of hf:tiny: Embed-AGG (hf:tiny: an output is missing")
    assert "not judged on those embeddings' rows (semantic-aware paper §III-B)" in semantics["deviation"]


def test_covariates_that_are_all_computed_name_no_deviation(tmp_path):
    eowl = Embedder("embed-eowl:hf:tiny", "embed-eowl:v2:tiny", working, "Embed-EOWL", "embed-eowl")
    _, sets, semantics = with_semantic_covariates(
        context(tmp_path, eowl), "hf:tiny", pd.DataFrame(index=range(12)), TEXTS, 2
    )
    assert list(sets) == ["Embed-EOWL"] and semantics["deviation"] is None


def test_under_a_plan_every_embedder_is_planned_before_the_case_stops(tmp_path):
    planned = []

    def planning(name):
        def embed(texts):
            planned.append((name, len(texts)))
            raise RequestsPlanned(f"hf:tiny: {len(texts)} {name} embedding(s) planned")

        return embed

    agg = Embedder("embed-agg:hf:tiny", "embed-agg:v2:tiny", planning("Embed-AGG"), "Embed-AGG", "embed-agg")
    eowl = Embedder("embed-eowl:hf:tiny", "embed-eowl:v2:tiny", planning("Embed-EOWL"), "Embed-EOWL", "embed-eowl")
    with pytest.raises(RequestsPlanned, match="Embed-AGG embedding"):
        with_semantic_covariates(context(tmp_path, agg, eowl), "hf:tiny", pd.DataFrame(index=range(12)), TEXTS, 2)
    assert planned == [("Embed-AGG", 12), ("Embed-EOWL", 12)]
