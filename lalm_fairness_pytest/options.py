"""The gate's command-line options, registered without importing :mod:`harness` (so that registering them costs
nothing, and works in a folder whose own ``harness/`` shadows the package).

The defaults named in the help texts are the gate's (:mod:`harness.gate.config`, :mod:`harness.models.cascade`);
``tests/plugin/test_entry_point.py`` holds them equal.
"""

from __future__ import annotations

import pytest

GROUP = "lalm-fairness"
DEFAULT_CACHE_DIR = ".lalm_cache"
DEMO_LLM = "smollm2:135m-instruct"
DEFAULT_MODELS = ("cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct",)
DEFAULT_JUDGE = DEMO_LLM
GATE_OPTIONS: dict[str, object] = {}
"""Destination -> default of every gate option, filled when they are registered."""


def add_options(parser: pytest.Parser) -> None:
    """Register the gate's options once (a second call, e.g. from :mod:`harness.plugin` registered by a conftest
    beside the entry point, adds nothing)."""
    group = parser.getgroup(GROUP, "voice-induced bias gate")
    if any("--model" in option.names() for option in group.options):
        return
    _add_gate_options(group)
    GATE_OPTIONS.update({option.dest: option.default for option in group.options})


def _add_gate_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--model",
        action="append",
        default=None,
        metavar="SPEC",
        help=f"model spec, repeatable (sim:fair, sim:biased, hf:..., ...); default: {' '.join(DEFAULT_MODELS)}",
    )
    group.addoption(
        "--corpus",
        action="append",
        default=None,
        metavar="NAME[=PATH]",
        help="corpus NAME=PATH (folder with corpus.yaml, or a manifest, or an unpacked distribution when NAME "
        "is a loader: built once into the cache folder), repeatable; default: the demo corpus",
    )
    group.addoption(
        "--basis-suite",
        default=None,
        metavar="PATH",
        help="BASIS-Bench item suite (a folder with suite.yaml, or spoken-stereoset=DIR: the release built "
        "once into the cache folder); default: the shipped demo suite",
    )
    group.addoption(
        "--thresholds",
        default=None,
        metavar="FILE",
        help="thresholds file, or preset:NAME for a shipped preset (preset:vibe, VIBE's own criterion); default: "
        "thresholds.yaml in the rootdir",
    )
    group.addoption(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help=f"output cache folder (default {DEFAULT_CACHE_DIR} in the rootdir)",
    )
    group.addoption(
        "--permutations", type=int, default=10_000, metavar="B", help="speaker-level permutations per nTVD test"
    )
    group.addoption("--fairness-seed", type=int, default=0, metavar="N", help="seed of the permutation tests")
    group.addoption(
        "--prompts", default=None, metavar="DIR", help="folder of prompt templates replacing the built-in ones"
    )
    group.addoption("--model-config", default=None, metavar="FILE", help="YAML: per-model option blocks keyed by spec")
    group.addoption("--offline", action="store_true", help="never load a model: every output must come from the cache")
    group.addoption(
        "--import-cache",
        action="append",
        default=None,
        metavar="FILE",
        help="add a cache export (lalm-fairness-cache export) to the cache before the run; repeatable",
    )
    group.addoption(
        "--plan",
        default=None,
        metavar="PATH",
        help="write the requests the selected cases need and the cache lacks to a Parquet plan, loading no model and "
        "running no case; fill it with lalm-fairness-generate, then --import-cache its output (repeat for later stages)",
    )
    group.addoption(
        "--shard", default=None, metavar="i/N", help="with --plan: write only the i-th of N disjoint parts of the plan"
    )
    group.addoption("--export-cache", default=None, metavar="FILE", help="write every output this run used to one file")
    group.addoption(
        "--baseline",
        default=None,
        metavar="RESULTS_JSON",
        help="a released checkpoint's results.json: cases then fail only on a significant regression",
    )
    group.addoption(
        "--baseline-model", default=None, metavar="SPEC", help="which model of the baseline file (if it holds several)"
    )
    group.addoption(
        "--extractor",
        default=None,
        metavar="SPEC",
        help="the VIBE attribute extractor (a model spec, text-only and cached, or 'rules' for the self-report form's "
        "field reader); overrides thresholds vibe.defaults.extractor and what the models declare (the paper: "
        "vllm:Qwen/Qwen3-8B)",
    )
    group.addoption(
        "--embedder",
        default="auto",
        metavar="SPEC",
        help="semantic covariates of the ratio checks: auto (each model's own Embed-AGG and Embed-EOWL where its weights "
        "are here, else minilm if installed, named as a deviation), model (its own or stop), minilm, "
        "embed-agg:<model spec>, embed-eowl:<model spec>, none; also the nTVD phrase merger (minilm under auto)",
    )
    group.addoption(
        "--basis-judge",
        default="rules",
        metavar="SPEC",
        help="the judge of BASIS's open answers (age personalization, spoken QA): rules (the offline rule judges) or "
        "a model spec, text only and cached, asked the paper's questions (Appendix B.3; the paper: gpt-5.4-mini)",
    )
    group.addoption(
        "--perceiver",
        default="voice:formants",
        metavar="SPEC",
        help="who labels the perceived group of each counterfactual clip: voice:formants (F0 and F1-F3 by a "
        "discriminant fitted on the corpus's originals; the default), voice:praat (median F0 alone) or a model spec, "
        "asked whether the voice sounds male or female, its answers cached",
    )
    group.addoption(
        "--judge",
        default=None,
        metavar="SPEC",
        help=f"judge model for the judge-score ratio (score_ratio cases run only with a judge); without --model, the demo's judge {DEFAULT_JUDGE}",
    )
    group.addoption(
        "--report",
        default=None,
        metavar="FILE",
        help="HTML report path (default report.html in the rootdir; '' for none)",
    )
    group.addoption(
        "--results-json",
        default=None,
        metavar="FILE",
        help="results.json path (default results.json in the rootdir; '' for none)",
    )
    group.addoption(
        "--summary-md",
        default=None,
        metavar="FILE",
        help="also write a short Markdown summary (verdict, failed/unmeasured/regressed cases) for a CI page",
    )
    group.addoption(
        "--annotation-sample",
        default=None,
        metavar="FILE",
        help="also write a human-validation sample of the run's VIBE answers and extracted values (VIBE Table I) to a "
        "new CSV file, for an annotator to fill in; then lalm-fairness-report RESULTS_JSON --human-validation FILE",
    )
    group.addoption(
        "--annotation-per-task",
        type=int,
        default=12,
        metavar="N",
        help="answers drawn per model and task for --annotation-sample (default 12; seeded by --fairness-seed)",
    )
