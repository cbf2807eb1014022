"""Output cache keyed by model, decoding parameters, prompt and audio content; lazy model loading."""

import multiprocessing

import numpy as np
import pytest

from harness.cache import OutputCache
from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.generation.cached_model import CachedModel
from harness.models import BACKENDS, register_backend
from harness.models.base import Backend


class CountingBackend(Backend):
    """A test backend that records loads and calls; answers echo the prompt, or are empty on request."""

    loads = 0

    def __init__(self, spec, target, options):
        self.spec, self.target, self.options = spec, target, options

    def fingerprint(self):
        return f"counting:{self.target}:{self.options.get('weights', 'v1')}"

    def load(self):
        type(self).loads += 1
        return self

    def generate(self, requests, params):
        if self.target == "broken":
            raise RuntimeError("CUDA out of memory")
        return ["" if "EMPTY" in r.prompt else f"answer to {r.prompt} ({params.max_new_tokens})" for r in requests]


@pytest.fixture(autouse=True)
def counting_backend():
    register_backend("counting", f"{__name__}:CountingBackend")
    CountingBackend.loads = 0
    yield
    BACKENDS.pop("counting")


def tone(frequency, seconds=0.2):
    t = np.arange(int(16000 * seconds)) / 16000
    return Audio(np.sin(2 * np.pi * frequency * t).astype(np.float32))


def model(tmp_path, target="m", decoding=None, **options):
    return CachedModel(
        f"counting:{target}", OutputCache(tmp_path), decoding or DecodingParams(), options, progress=False
    )


def test_fully_cached_run_never_loads_the_model(tmp_path):
    requests = [GenerationRequest("p1", tone(200)), GenerationRequest("p2", tone(300))]
    first = model(tmp_path)
    assert first.generate(requests) == ["answer to p1 (256)", "answer to p2 (256)"]
    assert first.calls == 2 and CountingBackend.loads == 1
    second = model(tmp_path)
    assert second.generate(requests) == first.generate(requests)
    assert second.calls == 0 and not second.loaded and CountingBackend.loads == 1


def test_same_audio_content_at_two_paths_is_one_entry(tmp_path):
    cached = model(tmp_path)
    cached.generate([GenerationRequest("p", tone(200))])
    cached.generate([GenerationRequest("p", Audio(tone(200).samples.copy()))])
    assert cached.calls == 1 and len(cached.cache) == 1


def test_key_changes_with_audio_prompt_decoding_and_weights(tmp_path):
    base = model(tmp_path)
    request = GenerationRequest("p", tone(200))
    keys = {
        base.keys([request])[0],
        base.keys([GenerationRequest("p", tone(201))])[0],
        base.keys([GenerationRequest("q", tone(200))])[0],
        base.keys([GenerationRequest("p", tone(200), system="sys")])[0],
        model(tmp_path, decoding=DecodingParams(max_new_tokens=64)).keys([request])[0],
        model(tmp_path, weights="v2").keys([request])[0],
        model(tmp_path, target="other").keys([request])[0],
    }
    assert len(keys) == 7


def test_an_empty_answer_is_cached_as_the_answer_and_an_error_is_not(tmp_path):
    """Issue 59, item 4: an empty answer was never stored, so a plan filled elsewhere never held it and the plan loop
    never ended; it is the model's answer (counted as empty by the checks), read back as such."""
    cached = model(tmp_path)
    assert cached.generate([GenerationRequest("EMPTY please", tone(200))]) == [""]
    assert len(cached.cache) == 1 and cached.calls == 1
    again = model(tmp_path)
    assert again.generate([GenerationRequest("EMPTY please", tone(200))]) == [""] and again.calls == 0
    broken = model(tmp_path, target="broken")
    with pytest.raises(ModelError, match="counting:broken: generation failed .*CUDA out of memory"):
        broken.generate([GenerationRequest("p", tone(200))])
    assert len(broken.cache) == 1, "the error stored nothing"


def test_chunks_already_generated_survive_a_later_failure(tmp_path):
    class FailsSecondChunk(CountingBackend):
        def generate(self, requests, params):
            if any(r.prompt == "p3" for r in requests):
                raise RuntimeError("died")
            return super().generate(requests, params)

    globals()["FailsSecondChunk"] = FailsSecondChunk
    register_backend("flaky", f"{__name__}:FailsSecondChunk")
    try:
        flaky = CachedModel("flaky:m", OutputCache(tmp_path), DecodingParams(), {}, chunk_size=2, progress=False)
        with pytest.raises(ModelError):
            flaky.generate([GenerationRequest(f"p{i}", tone(200 + i)) for i in range(4)])
        assert len(flaky.cache) == 2
    finally:
        BACKENDS.pop("flaky")


def test_identical_requests_of_a_batch_are_generated_once(tmp_path):
    sent = []

    class Recording(CountingBackend):
        def generate(self, requests, params):
            sent.extend(r.prompt for r in requests)
            return super().generate(requests, params)

    globals()["Recording"] = Recording
    register_backend("recording", f"{__name__}:Recording")
    try:
        cached = CachedModel("recording:m", OutputCache(tmp_path), DecodingParams(), {}, chunk_size=1, progress=False)
        prompts = ["p1", "p2", "p1", "EMPTY", "p1", "EMPTY", "p2"]
        answers = cached.generate([GenerationRequest(p, tone(200)) for p in prompts])
        assert sent == ["p1", "p2", "EMPTY"]
        assert answers == [
            "answer to p1 (256)",
            "answer to p2 (256)",
            "answer to p1 (256)",
            "",
            "answer to p1 (256)",
            "",
            "answer to p2 (256)",
        ]
        assert (cached.calls, cached.duplicates, cached.hits) == (3, 4, 0)
        again = cached.generate([GenerationRequest(p, tone(200)) for p in ["p2", "p2", "EMPTY", "EMPTY"]])
        assert again == ["answer to p2 (256)", "answer to p2 (256)", "", ""]
        assert sent == ["p1", "p2", "EMPTY"]  # the empty answer is read back, as any
        assert (cached.calls, cached.duplicates, cached.hits) == (3, 6, 2)
        assert cached.output_counts()["duplicates"] == 6
    finally:
        BACKENDS.pop("recording")


def _writer(args):
    directory, worker = args
    cache = OutputCache(directory)
    for index in range(200):
        cache.put_many([(f"k{index}", "generate", "fp", f"text {index}", {"worker": worker})])
    return len(cache.get_many([f"k{index}" for index in range(200)]))


def test_concurrent_writers_from_several_processes(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        counts = pool.map(_writer, [(str(tmp_path), worker) for worker in range(4)])
    assert counts == [200] * 4
    assert len(OutputCache(tmp_path)) == 200


def test_unknown_decoding_key_is_named():
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['temprature'\]"):
        DecodingParams.from_mapping({"temprature": 0.5})


def test_export_import_round_trip_and_truncated_file(tmp_path):
    from harness.cache import CacheError

    source = model(tmp_path / "a")
    requests = [GenerationRequest(f"p{i}", tone(200 + i)) for i in range(5)]
    source.generate(requests)
    export = tmp_path / "run.jsonl.gz"
    assert source.cache.export(export, keys=source.keys(requests[:3])) == 3
    target = OutputCache(tmp_path / "b")
    assert target.import_file(export) == 3
    assert target.get_many(source.keys(requests)) == source.cache.get_many(source.keys(requests[:3]))

    import gzip

    lines = gzip.open(export, "rt").read().splitlines()
    truncated = tmp_path / "truncated.jsonl.gz"
    with gzip.open(truncated, "wt") as handle:
        handle.write("\n".join(lines[:-1]) + "\n")
    fresh = OutputCache(tmp_path / "c")
    with pytest.raises(CacheError, match="announces 3 entries, file holds 2"):
        fresh.import_file(truncated)
    assert len(fresh) == 0


def test_offline_model_refuses_to_load(tmp_path):
    offline = CachedModel("counting:m", OutputCache(tmp_path), DecodingParams(), {}, progress=False, offline=True)
    with pytest.raises(ModelError, match="missing from the cache and the run is offline"):
        offline.generate([GenerationRequest("p", tone(200))])
    assert CountingBackend.loads == 0


def test_the_database_is_read_through_a_memory_map(tmp_path):
    """A re-score looks every answer up by key: SQLite reads the database's pages through a map of the file
    (``PRAGMA mmap_size``) rather than one ``read`` call per page."""
    from harness.cache import MMAP_BYTES

    cache = OutputCache(tmp_path / "cache")
    assert cache._connection.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES > 0
