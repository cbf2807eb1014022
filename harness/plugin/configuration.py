"""The plugin's configuration: the gate built from pytest's options (:func:`get_gate`, kept in the stash), the
thresholds file and cache folder it uses, and the run's outputs: where they go, checked before any case, the
earlier ones set aside, and one run at a time per results.json."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cache import CacheError, OutputCache
from harness.core.errors import ModelError
from harness.core.files import ensure_writable, portable_path
from harness.core.progress import attach_terminal, detach_terminal
from harness.data import CorpusError
from harness.gate import DEFAULT_CACHE_DIR, DEFAULT_JUDGE, DEFAULT_MODELS, Gate, GateConfig
from harness.models import missing_extra, missing_model_packages, missing_packages
from harness.models.placement import assign_worker_gpus
from harness.models.residency import largest_parallel_degree
from harness.perception import MODEL_FREE_PERCEIVERS
from harness.thresholds import ThresholdsError
from lalm_fairness_pytest.interrupts import INTERRUPTS, RUNNING
from lalm_fairness_pytest.outputs import OUTPUT_OPTIONS, set_aside_previous_outputs

GATE_KEY = pytest.StashKey[Gate]()
SETUP_ERROR_KEY = pytest.StashKey[pytest.UsageError]()
IMPORTED_KEY = pytest.StashKey[list]()
SIGNALS_KEY = pytest.StashKey[list[str]]()


def assign_gpus_of_worker(config: pytest.Config) -> None:
    """An xdist worker claims the GPUs the run's largest model needs (tensor x pipeline parallel), before CUDA starts."""
    blocks = _read_model_config(Path(config.getoption("--model-config"))) if config.getoption("--model-config") else {}
    named = [
        *(config.getoption("--model") or DEFAULT_MODELS),
        config.getoption("--extractor"),
        config.getoption("--judge"),
        None if config.getoption("--perceiver") in MODEL_FREE_PERCEIVERS else config.getoption("--perceiver"),
    ]
    try:
        assign_worker_gpus(largest_parallel_degree({spec: blocks.get(spec, {}) for spec in named if spec}))
    except ValueError as exc:
        raise pytest.UsageError(f"lalm-fairness: {exc}") from exc


def prepare_outputs(config: pytest.Config) -> None:
    """Before any case runs: the folder of each output named on the command line exists (made when missing)
    and can be written, else one ``ERROR:`` line and exit 4. An ``--annotation-sample`` file must not exist yet:
    an annotator may have filled it in."""
    sample = config.getoption("--annotation-sample")
    if sample and Path(sample).exists():
        raise pytest.UsageError(
            f"lalm-fairness: --annotation-sample {sample}: the file exists and may hold an annotator's work; "
            "name a new file, or move this one away"
        )
    if config.getoption("--annotation-per-task") < 1:
        raise pytest.UsageError(
            f"lalm-fairness: --annotation-per-task must be >= 1, got {config.getoption('--annotation-per-task')}"
        )
    for option in (*OUTPUT_OPTIONS, "--annotation-sample"):
        value = config.getoption(option)
        if value:
            try:
                ensure_writable(value)
            except OSError as exc:
                raise pytest.UsageError(
                    f"lalm-fairness: {option} {value}: cannot be written ({type(exc).__name__}: {exc})"
                ) from exc


def interrupt_on_signals(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, ``timeout``, ``kill``) stops the run as Ctrl-C does, so that the session
    ends and writes its INCOMPLETE outputs, and either signal at any moment exits 2
    (:mod:`lalm_fairness_pytest.interrupts`, whose handler the entry point installed at its import, or this
    call does for a run found to be a gate run only as its tests were collected); a handler someone else
    installed is left alone.

    Both signals are also remembered (``SIGNALS_KEY``) and raised again as each later case starts
    (:func:`reraise_a_lost_interrupt`): a ``KeyboardInterrupt`` that lands in a finaliser or a weakref callback is
    printed as "Exception ignored" and lost, and the run would otherwise go on to a verdict the user stopped."""
    if INTERRUPTS.phase != RUNNING:
        INTERRUPTS.begin_run()
        config.add_cleanup(INTERRUPTS.restore)
    config.stash[SIGNALS_KEY] = INTERRUPTS.received


def reraise_a_lost_interrupt(config: pytest.Config) -> None:
    """Raise ``KeyboardInterrupt`` again where a signal came and the run still goes on (see
    :func:`interrupt_on_signals`)."""
    received = config.stash.get(SIGNALS_KEY, [])
    if received:
        raise KeyboardInterrupt(f"{received[-1]}, received earlier and lost where it landed")


def attach_progress_terminal(config: pytest.Config) -> None:
    """Progress bars of generation on this terminal, drawn with pytest's capture suspended; only in the
    process that owns the terminal (never an xdist worker) and only when stderr is a terminal."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if sys.stderr.isatty() and capture is not None:
        attach_terminal(sys.stderr, capture.global_and_fixture_disabled)
        config.add_cleanup(detach_terminal)


def import_caches(config: pytest.Config) -> None:
    """Load --import-cache files once, in the controlling process, before any worker starts."""
    files = config.getoption("--import-cache") or []
    if not files:
        return
    cache = OutputCache(cache_dir(config))
    try:
        config.stash[IMPORTED_KEY] = [
            {"file": portable_path(path), "entries": sum(counts.values()), "per_model": counts}
            for path, counts in ((path, cache.import_counts(path)) for path in files)
        ]
    except CacheError as exc:
        set_aside_previous_outputs(config)
        raise pytest.UsageError(f"lalm-fairness: {exc}") from exc
    finally:
        cache.close()


def thresholds_path(config: pytest.Config) -> str | None:
    """``--thresholds``, else ``thresholds.yaml`` in pytest's rootdir when there is one, else None (built-in defaults)."""
    chosen = config.getoption("--thresholds")
    if chosen is None and (Path(config.rootpath) / "thresholds.yaml").is_file():
        chosen = str(Path(config.rootpath) / "thresholds.yaml")
    return chosen


def unused_parent_thresholds(config: pytest.Config) -> Path | None:
    """A thresholds.yaml in a folder above the rootdir (up to the repository's top, the first folder holding
    ``.git``): run from a subfolder of a project without a pytest ini file, it would silently not apply."""
    for folder in Path(config.rootpath).resolve().parents:
        if (folder / "thresholds.yaml").is_file():
            return folder / "thresholds.yaml"
        if (folder / ".git").exists():
            return None
    return None


def cache_dir(config: pytest.Config) -> str:
    return config.getoption("--cache-dir") or str(Path(config.rootpath) / DEFAULT_CACHE_DIR)


def check_optional_extras(config: pytest.Config) -> None:
    """Refuse, before anything is written, a run that needs an optional extra this installation lacks (issue 47,
    item 5): ``--plan`` writes Parquet and needs pyarrow (``[plan]``); a model named by ``--model``, ``--judge``,
    ``--extractor``, ``--basis-judge`` or ``--perceiver`` needs its backend's extra (``hf:`` torch and
    transformers, ``vllm:`` vLLM; :func:`harness.models.missing_extra`) unless the run loads no model
    (``--offline``, ``--plan``). One usage error (exit 4) naming the option and the extra."""
    plan = config.getoption("--plan")
    if plan and missing_packages(["pyarrow"]):
        raise pytest.UsageError(
            f"lalm-fairness: --plan {plan}: a plan is a Parquet file and pyarrow is not installed: "
            "pip install 'lalm-fairness[plan]'"
        )
    if plan or config.getoption("--offline"):
        return
    named = [(spec, "--model") for spec in config.getoption("--model") or ()] + [
        (config.getoption(option), option)
        for option in ("--judge", "--extractor", "--basis-judge", "--perceiver")
        if config.getoption(option) not in MODEL_FREE_PERCEIVERS
    ]
    for spec, option in named:
        reason = missing_extra(spec) if spec else None
        if reason:
            raise pytest.UsageError(f"lalm-fairness: {option} {spec}: {reason}")
    check_model_packages(config, named)


def check_model_packages(config: pytest.Config, named: list[tuple[str | None, str]]) -> None:
    """The demo backends' packages (:func:`harness.models.missing_model_packages`: Whisper's, SmolLM2's), checked
    once as the run starts (issue 59, item 6): a run that will ask such a model for outputs that no shipped export
    holds stops here, exit 4, naming the packages, instead of ending unmeasured case by case. The shipped exports
    serve the demo's models (and their stages and judge) on the demo corpus and suite, with the built-in prompts and
    decoding; a run given other corpora, a suite, prompts, model options or an imported cache is asked the packages
    unless the model is served by an ``--import-cache`` file (then nothing is checked)."""
    if config.getoption("--import-cache"):
        return
    models = [(spec, "--model") for spec in config.getoption("--model") or DEFAULT_MODELS]
    served = shipped_output_specs() if shipped_inputs_only(config) else set()
    for spec, option in dict.fromkeys([*models, *((s, o) for s, o in named if s and o != "--model")]):
        reason = None if spec in served else missing_model_packages(spec)
        if reason:
            raise pytest.UsageError(
                f"lalm-fairness: {option} {spec}: {reason}; no shipped output serves this run (its corpora, suite, prompts or model options) "
                "(or give --import-cache FILE --offline)"
            )


def shipped_inputs_only(config: pytest.Config) -> bool:
    """The run asks for the shipped demo's requests only: the demo corpus and suite, built-in prompts and decoding."""
    corpora = config.getoption("--corpus") or ["demo"]
    return (
        all(entry == "demo" for entry in corpora)
        and not config.getoption("--basis-suite")
        and not config.getoption("--prompts")
        and not config.getoption("--model-config")
    )


def shipped_output_specs() -> set[str]:
    """The specs the shipped exports answer for: the demo's models, their stages, the demo's judge."""
    from harness.gate.config import BUNDLED_EXPORTS
    from harness.models.cascade import parse_target

    specs = {DEFAULT_JUDGE}
    for spec in BUNDLED_EXPORTS:
        specs |= {spec, *(stage for stage in parse_target(spec, spec.partition(":")[2]) if stage)}
    return specs


def gate_config(config: pytest.Config) -> GateConfig:
    thresholds = thresholds_path(config)
    corpora: dict[str, str | None] = {}
    for entry in config.getoption("--corpus") or ["demo"]:
        name, sep, path = entry.partition("=")
        if not name or (sep and not path):
            raise pytest.UsageError(f"--corpus {entry!r}: expected NAME or NAME=PATH")
        corpora[name] = path or None
    model_options: dict[str, Any] = {}
    model_config = config.getoption("--model-config")
    if model_config:
        model_options = _read_model_config(Path(model_config))
    judge = config.getoption("--judge")
    if judge is None and not config.getoption("--model"):
        judge = DEFAULT_JUDGE
    return GateConfig(
        models=tuple(dict.fromkeys(config.getoption("--model") or DEFAULT_MODELS)),
        corpora=corpora,
        thresholds_path=thresholds,
        cache_dir=cache_dir(config),
        offline=config.getoption("--offline") or bool(config.getoption("--plan")),
        baseline_path=config.getoption("--baseline"),
        baseline_model=config.getoption("--baseline-model"),
        extractor=config.getoption("--extractor"),
        embedder=config.getoption("--embedder"),
        judge=judge,
        basis_judge=config.getoption("--basis-judge"),
        perceiver=config.getoption("--perceiver"),
        permutations=config.getoption("--permutations"),
        seed=config.getoption("--fairness-seed"),
        prompts_dir=config.getoption("--prompts"),
        model_options=model_options,
        model_options_source=f"--model-config {model_config}" if model_config else None,
        basis_suite=config.getoption("--basis-suite"),
    )


def _read_model_config(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise pytest.UsageError(f"--model-config {path}: cannot be read ({exc})") from exc
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or not all(isinstance(block, dict) for block in models.values()):
        raise pytest.UsageError(f"--model-config {path}: expected a 'models' mapping of spec -> option block")
    return models


def get_gate(config: pytest.Config) -> Gate:
    """The session's gate, built once; a configuration it refuses is a :class:`pytest.UsageError` (kept, and
    raised again on every later call)."""
    if SETUP_ERROR_KEY in config.stash:
        raise config.stash[SETUP_ERROR_KEY]
    if GATE_KEY not in config.stash:
        try:
            gate = Gate(gate_config(config))
            gate.open_cache()
            config.stash[GATE_KEY] = gate
        except pytest.UsageError as exc:
            config.stash[SETUP_ERROR_KEY] = exc
            raise
        except (CorpusError, ThresholdsError, ModelError, ValueError) as exc:
            config.stash[SETUP_ERROR_KEY] = pytest.UsageError(f"lalm-fairness: {' '.join(str(exc).split())}")
            raise config.stash[SETUP_ERROR_KEY] from exc
    return config.stash[GATE_KEY]
