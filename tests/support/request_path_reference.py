"""The per-request hot path as it was before issue 46's vectorisation, kept verbatim as the reference the fast
versions are compared with (tests/metrics/test_request_path_equivalence.py) and timed against
(benchmarks/bench_request_path.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jiwer
import pandas as pd

from harness.metrics.counterfactual import _arm_rows
from harness.metrics.wer import WordErrors, normalise_text


def flip_rates_reference(table: pd.DataFrame, arms: Sequence[str] = ("identity", "swap")) -> pd.DataFrame:
    """One frozenset of ``str(value)`` per attribute, recording and arm; a recording flips where its two differ."""
    rows = _arm_rows(table, arms, ("attribute", "value"), "flip_rates", drop_unpaired=True)
    value_sets = rows.groupby(["attribute", "recording", "arm"])["value"].agg(
        lambda values: frozenset(map(str, values))
    )
    paired = value_sets.unstack("arm").reindex(columns=list(arms)).dropna()
    flipped = (paired[arms[0]] != paired[arms[1]]).groupby(level="attribute")
    result = pd.DataFrame({"recordings": flipped.size(), "flipped": flipped.sum().astype(int)})
    result["flip_rate"] = result["flipped"] / result["recordings"]
    return result


def cache_key_reference(
    namespace: str, model_fingerprint: str, params: Mapping[str, Any], request: Mapping[str, Any]
) -> str:
    """SHA-256 of ``json.dumps`` of the whole key payload, one call per request."""
    payload = {"namespace": namespace, "model": model_fingerprint, "params": dict(params), "request": dict(request)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def word_errors_reference(reference: str, hypothesis: str, *, normalise: bool = True) -> WordErrors:
    """Normalised, split, and aligned by ``jiwer.process_words`` per pair."""
    ref = (normalise_text(reference) if normalise else str(reference)).split()
    hyp = (normalise_text(hypothesis) if normalise else str(hypothesis)).split()
    if not ref:
        return WordErrors(0, 0, len(hyp), 0)
    if not hyp:
        return WordErrors(0, len(ref), 0, len(ref))
    alignment = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return WordErrors(alignment.substitutions, alignment.deletions, alignment.insertions, len(ref))
