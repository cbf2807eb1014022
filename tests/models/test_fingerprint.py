"""Model fingerprints, GPU placement and the progress bar: the cheap plumbing around backends (no torch)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
import types

import pytest

from harness.core.progress import Progress
from harness.models import fingerprint as fp
from harness.models import placement
from harness.plugin import skip_gpu_items


def make_checkpoint(path, *, config=None, weights=b"\0" * 16):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config or {"model_type": "qwen2_audio", "hidden_size": 32}))
    (path / "tokenizer.json").write_text('{"v": 1}')
    (path / "model.safetensors").write_bytes(weights)
    return path


# ---------------------------------------------------------------------------------------- fingerprints
def test_same_checkpoint_same_fingerprint(tmp_path):
    ck = make_checkpoint(tmp_path / "m")
    assert fp.model_fingerprint("hf", str(ck)) == fp.model_fingerprint("hf", str(ck))
    assert fp.model_fingerprint("hf", str(ck)).startswith("hf:")


def test_two_checkpoints_at_one_path_never_share_a_fingerprint(tmp_path):
    ck = make_checkpoint(tmp_path / "m")
    first = fp.model_fingerprint("hf", str(ck))
    # a different config
    make_checkpoint(ck, config={"model_type": "qwen2_audio", "hidden_size": 64})
    second = fp.model_fingerprint("hf", str(ck))
    assert second != first
    # same config, weights rewritten with the same size (only the mtime differs)
    st = (ck / "model.safetensors").stat()
    (ck / "model.safetensors").write_bytes(b"\1" * 16)
    os.utime(ck / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    third = fp.model_fingerprint("hf", str(ck))
    assert third != second
    # weights of another size
    (ck / "model.safetensors").write_bytes(b"\1" * 32)
    assert fp.model_fingerprint("hf", str(ck)) not in {first, second, third}
    # a changed tokenizer / chat template
    before = fp.model_fingerprint("hf", str(ck))
    (ck / "chat_template.jinja").write_text("{{ messages }}")
    assert fp.model_fingerprint("hf", str(ck)) != before


def test_weights_are_not_read(tmp_path, monkeypatch):
    ck = make_checkpoint(tmp_path / "m")
    read = []
    original = type(ck).read_bytes

    def spy(self):
        read.append(self.name)
        return original(self)

    monkeypatch.setattr(type(ck), "read_bytes", spy)
    fp.directory_digest(ck)
    assert "model.safetensors" not in read and "config.json" in read


def test_fingerprint_includes_backend_options_and_revision(tmp_path):
    ck = str(make_checkpoint(tmp_path / "m"))
    base = fp.model_fingerprint("hf", ck)
    assert fp.model_fingerprint("vllm", ck) != base
    assert fp.model_fingerprint("hf", ck, options={"dtype": "bfloat16"}) != base
    hub = fp.model_fingerprint("hf", "org/model", revision="abc")
    assert hub != fp.model_fingerprint("hf", "org/model", revision="def")
    assert hub != fp.model_fingerprint("hf", "org/other", revision="abc")


def test_hub_revision_resolved_from_local_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--org--model" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("a" * 40)
    assert fp.model_identity("org/model")["resolved"] == "a" * 40
    before = fp.model_fingerprint("hf", "org/model")
    (refs / "main").write_text("b" * 40)
    assert fp.model_fingerprint("hf", "org/model") != before
    assert fp.model_identity("org/uncached")["resolved"] == "unpinned"


def test_credentials_never_enter_a_fingerprint():
    with pytest.raises(ValueError, match="credential"):
        fp.model_fingerprint("openai", "m", options={"api_key": "sk-secret"}, identity={})
    fp.model_fingerprint("openai", "m", options={"api_key_env": "MY_KEY", "max_new_tokens": 3}, identity={})


# ---------------------------------------------------------------------------------------- placement
@pytest.mark.parametrize(
    ("worker", "visible", "expected"),
    [
        ("gw0", "0,1", "0"),
        ("gw1", "0,1", "1"),
        ("gw2", "0,1", "0"),
        ("gw3", "4,5,6", "4"),
        ("gw1", "GPU-a,GPU-b", "GPU-b"),
    ],
)
def test_worker_gpu_from_xdist_worker(worker, visible, expected):
    env = {"PYTEST_XDIST_WORKER": worker, "CUDA_VISIBLE_DEVICES": visible}
    assert placement.assign_worker_gpu(env) == expected
    assert env["CUDA_VISIBLE_DEVICES"] == expected


def test_no_placement_outside_xdist_or_without_gpus():
    env = {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert placement.assign_worker_gpu(env) is None and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    env = {"PYTEST_XDIST_WORKER": "gw1", "CUDA_VISIBLE_DEVICES": ""}
    assert placement.assign_worker_gpu(env) is None
    assert placement.visible_gpus({"CUDA_VISIBLE_DEVICES": "0,-1,2"}) == ["0"]
    assert placement.worker_index({"PYTEST_XDIST_WORKER": "master"}) is None


class MarkedItem:
    def __init__(self, marked):
        self.marked, self.markers = marked, []

    def get_closest_marker(self, name):
        return object() if self.marked and name == "gpu" else None

    def add_marker(self, marker):
        self.markers.append(marker)


def test_gpu_items_skip_with_the_reason_when_no_device_is_usable():
    items = [MarkedItem(True), MarkedItem(False)]
    assert skip_gpu_items(items, lambda: "gpu test: no CUDA device available") == 1
    assert items[0].markers[0].kwargs["reason"] == "gpu test: no CUDA device available"
    assert not items[1].markers


def test_gpu_items_run_where_a_device_is_usable():
    items = [MarkedItem(True), MarkedItem(False)]
    assert skip_gpu_items(items, lambda: None) == 0
    assert not items[0].markers and not items[1].markers


def test_the_device_is_not_probed_without_gpu_items():
    def probe():
        raise AssertionError("probed although no item is marked gpu")

    assert skip_gpu_items([MarkedItem(False)], probe) == 0


def test_gpu_skip_reason_names_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert placement.gpu_skip_reason() == "gpu test: torch is not installed (pip install 'lalm-fairness[hf]')"
    monkeypatch.setitem(
        sys.modules, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    )
    assert placement.gpu_skip_reason() == "gpu test: no CUDA device available"
    monkeypatch.setitem(
        sys.modules, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True))
    )
    assert placement.gpu_skip_reason() is None


def test_xdist_group_name_is_stable_and_distinct():
    a = placement.xdist_group_name("hf:Qwen/Qwen2-Audio-7B-Instruct")
    assert a == placement.xdist_group_name("hf:Qwen/Qwen2-Audio-7B-Instruct")
    assert a != placement.xdist_group_name("hf:Qwen/Qwen2-Audio-7B")
    assert all(c.isalnum() or c in "-_." for c in a)


# ---------------------------------------------------------------------------------------- progress
class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_plain_lines_are_rate_limited(monkeypatch):
    monkeypatch.delenv("LALM_PROGRESS", raising=False)
    out, clock = io.StringIO(), FakeClock()
    bar = Progress(100, "hf:x generate", stream=out, clock=clock, interval_s=10)
    for _ in range(100):
        clock.t += 0.5
        bar.update()
    lines = out.getvalue().splitlines()
    assert 2 <= len(lines) <= 7 and "\r" not in out.getvalue()
    assert lines[-1].startswith("[lalm] hf:x generate [") and "100/100 (100%)" in lines[-1]


def test_progress_silent_for_few_items_and_when_disabled(monkeypatch):
    monkeypatch.delenv("LALM_PROGRESS", raising=False)
    out = io.StringIO()
    with Progress(3, "x", stream=out) as bar:
        bar.update(3)
    assert out.getvalue() == ""
    monkeypatch.setenv("LALM_PROGRESS", "0")
    with Progress(100, "x", stream=out) as bar:
        bar.update(100)
    assert out.getvalue() == ""


def test_progress_tty_draws_a_tqdm_bar_with_count_rate_and_eta(monkeypatch):
    monkeypatch.delenv("LALM_PROGRESS", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with Progress(10, "x", stream=out, clock=time.monotonic) as bar:
        for _ in range(10):
            bar.update()
    text = out.getvalue()
    assert text.startswith("\r") and text.endswith("\n") and text.count("\n") == 1
    final = text.rstrip("\n").split("\r")[-1]
    assert final.startswith("[lalm] x: 100%") and "10/10 [" in final and "item/s]" in final and "<00:00" in final


def test_progress_close_after_error_ends_the_line(monkeypatch):
    monkeypatch.delenv("LALM_PROGRESS", raising=False)
    out = io.StringIO()
    with pytest.raises(RuntimeError), Progress(20, "x", stream=out, interval_s=1e9) as bar:
        bar.update(5)
        raise RuntimeError("boom")
    assert out.getvalue().rstrip().endswith("(stopped)")
