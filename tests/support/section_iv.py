"""The semantic-aware paper's §IV simulation with the demo LLM's own Embed-AGG and Embed-EOWL, in a process of its own
(SmolLM2 must set the CPU numerics contract before anything imports torch): prints each method row and each
embedding's explained variance as JSON.

Usage: ``python tests/support/section_iv.py CACHE_DIR``.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test modules import the package ``support``

from test_wer_gate import section_iv_design

from harness.cache import OutputCache
from harness.metrics.score_ratio import judge_score_ratio
from harness.models import build_backend
from harness.semantic import model_embedders, semantic_covariates


def main(cache_dir: str) -> dict:
    questions, table = section_iv_design()
    source = build_backend("smollm2:135m-instruct").semantic_source()
    covariate_sets, explained = {}, {}
    for embedder in model_embedders(source.fingerprint(), source.load, spec=source.spec):
        covariates = semantic_covariates(embedder, questions, OutputCache(cache_dir), k=8, prefix=embedder.name)
        table = table.assign(**{c: covariates.scores[:, i] for i, c in enumerate(covariates.columns)})
        covariate_sets[embedder.name] = covariates.columns
        explained[embedder.name] = float(covariates.explained_variance_ratio.sum())
    methods = judge_score_ratio(table, covariates=covariate_sets, numerator="M", denominator="F", n_boot=300).methods
    rows = {
        method: {key: (None if row[key] is None else float(row[key])) for key in ("ratio", "ci_low", "ci_high")}
        | {"converged": bool(row["converged"])}
        for method, row in methods.iterrows()
    }
    return {"rows": rows, "explained": explained}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
