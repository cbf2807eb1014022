"""What a gate run is configured with: :class:`GateConfig` (the pytest options), the embedded default model and
its shipped outputs, and each model's option block."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.requests import DecodingParams
from harness.models.cascade import DEMO_MODEL, VOICE_BLIND_MODEL
from harness.tasks import TASKS

DEFAULT_CACHE_DIR = ".lalm_cache"
# The embedded default: a real speech-in, text-out system, served from its shipped outputs (below) on a fresh
# machine; a cache miss regenerates through the real models (the [demo] extra).
DEFAULT_MODELS = (DEMO_MODEL,)
# Shipped cache exports, per model spec: imported into the cache whenever the model runs, so the default
# model on the demo corpus is served without loading anything (scripts/build_demo_outputs.py makes them;
# the provenance.json beside an export says when and how, and reaches the report).
# The voice-blind cascade, the demo's previous release, keeps its own export and provenance (voice-blind/), and
# that release's results.json, which the README's release-gating example passes to --baseline.
DEMO_OUTPUTS_DIR = Path(__file__).parent.parent / "data" / "demo_outputs"
VOICE_BLIND_OUTPUTS_DIR = DEMO_OUTPUTS_DIR / "voice-blind"
DEMO_RELEASE_RESULTS = VOICE_BLIND_OUTPUTS_DIR / "results.json"
BUNDLED_EXPORTS: dict[str, tuple[Path, ...]] = {
    DEMO_MODEL: (DEMO_OUTPUTS_DIR / "cascade-demo.jsonl.gz",),
    VOICE_BLIND_MODEL: (VOICE_BLIND_OUTPUTS_DIR / "cascade-demo.jsonl.gz",),
}


@dataclasses.dataclass(frozen=True)
class GateConfig:
    """What the pytest options say (see the README's option table)."""

    models: tuple[str, ...] = DEFAULT_MODELS
    corpora: Mapping[str, str | None] = dataclasses.field(default_factory=lambda: {"demo": None})
    thresholds_path: str | None = None
    cache_dir: str = DEFAULT_CACHE_DIR
    permutations: int = 10_000
    seed: int = 0
    prompts_dir: str | None = None
    model_options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    model_options_source: str | None = None
    decoding: DecodingParams = DecodingParams()
    tasks: tuple[str, ...] = tuple(TASKS)
    progress: bool = True
    offline: bool = False
    baseline_path: str | None = None
    baseline_model: str | None = None
    extractor: str | None = None
    embedder: str = "auto"
    judge: str | None = None
    basis_judge: str = "rules"
    perceiver: str = "voice:formants"
    """Who labels a counterfactual clip's perceived group (``--perceiver``): ``voice:formants`` (F0 and F1-F3,
    calibrated on the originals), ``voice:praat`` (median F0) or a model spec."""
    basis_suite: str | None = None
    bundled_exports: Mapping[str, Sequence[str | Path]] = dataclasses.field(
        default_factory=lambda: dict(BUNDLED_EXPORTS)
    )


def model_settings(config: GateConfig, spec: str) -> tuple[dict[str, Any], DecodingParams, int]:
    """A model's backend options, decoding parameters and ``chunk_size`` (default 32) from its option block;
    a bad decoding key or a ``chunk_size`` that is no whole number >= 1 is a ``ValueError`` naming the block."""
    options = dict(config.model_options.get(spec, {}))
    where = f"{config.model_options_source or 'model options'}: models.{spec}"
    decoding = options.pop("decoding", {})
    if not isinstance(decoding, Mapping):
        raise ValueError(f"{where}.decoding: expected a mapping of decoding parameters, got {decoding!r}")
    decoding = DecodingParams.from_mapping({**config.decoding.as_dict(), **decoding}, source=f"{where}.decoding")
    chunk_size = options.pop("chunk_size", 32)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"{where}.chunk_size: expected a whole number >= 1, got {chunk_size!r}")
    return options, decoding, chunk_size
