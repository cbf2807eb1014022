"""Models in turn on real engines: two vLLM CPU engines in one process (the first engine's processes have exited
before the second loads), and two tiny ``hf:`` checkpoints on a GPU (the first's memory is back before the second
loads). Each skips, saying why, where its engine or device is missing.

    .venv/bin/python -m pytest tests/nightly/test_residency_engines.py -m "engine or gpu" -p no:cacheprovider
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.cache import OutputCache
from harness.core.requests import DecodingParams, GenerationRequest
from harness.generation.cached_model import CachedModel
from harness.models.placement import gpu_skip_reason
from harness.models.residency import Residency

from support import engine as es

RUNNER = Path(__file__).with_name("residency_runner.py")


@pytest.mark.engine
# CI's engine stage: after the tiny Qwen2-Audio module (181 s), not after the SmolLM2 test (205 s beside it)
@pytest.mark.xdist_group("tiny-qwen2-audio")
def test_the_first_vllm_engine_is_shut_down_before_the_second_starts(tmp_path):
    es.skip_without_engine()
    checkpoint = es.build_engine_checkpoint(tmp_path / "tiny-qwen2-audio")
    out = tmp_path / "out.json"
    done = subprocess.run(
        [str(es.engine_python()), str(RUNNER), str(checkpoint), str(out)],
        capture_output=True,
        text=True,
        env=es.engine_env(),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(out.read_text())
    first, second = report["loads"]
    assert first["released_for"] == second["spec"] and first["released_s"] <= second["loaded_s"]
    assert report["first_engine_processes"], "the CPU engine runs its core in a process of its own"
    assert report["alive_when_second_loaded"] == []
    assert len(report["answers"]) == 2


@pytest.mark.gpu
def test_two_hf_models_in_turn_on_a_gpu_give_the_first_one_s_memory_back(tmp_path):
    reason = gpu_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    import torch

    from support import tiny_models as tm

    first_dir = tm.build_qwen2_audio(tmp_path / "first", seed=0)
    second_dir = tm.build_qwen2_audio(tmp_path / "second", seed=1)
    residency = Residency()
    cache = OutputCache(tmp_path / "cache")
    decoding = DecodingParams(max_new_tokens=4)
    baseline = torch.cuda.memory_allocated()
    first = CachedModel(f"hf:{first_dir}", cache, decoding, {"device": "cuda"}, progress=False, residency=residency)
    first.generate([GenerationRequest("Say something.")])
    held_by_first = torch.cuda.memory_allocated() - baseline
    assert held_by_first > 0
    second = CachedModel(f"hf:{second_dir}", cache, decoding, {"device": "cuda"}, progress=False, residency=residency)
    second.model()
    assert not first.loaded
    assert torch.cuda.memory_allocated() - baseline <= held_by_first * 1.05
    residency.release_all()
    assert torch.cuda.memory_allocated() - baseline < held_by_first * 0.05
