"""Two ``vllm:`` engines in turn in one process, through the run's residency (run in the engine's venv by
``tests/nightly/test_residency_engines.py``).

    python tests/nightly/residency_runner.py CHECKPOINT OUT.json

Writes ``{"loads": [...], "first_engine_processes": [pids], "alive_when_second_loaded": [pids],
"interpreter_helpers": [pids], "answers": [...]}``: the processes of the first engine, which of them still existed
(a zombie counts) when the second engine loaded, and this interpreter's own helper processes (multiprocessing's
resource tracker, started by the first engine's semaphores and kept for the interpreter's life; no engine memory).

Each engine reserves half of the machine's memory (vLLM's CPU backend reads ``gpu_memory_utilization`` as the
share of RAM; its default 0.92 refuses to start where other processes hold 8%), so the second cannot start unless
the first gave its share back.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def is_resource_tracker(process) -> bool:
    import psutil

    try:
        return "multiprocessing.resource_tracker" in " ".join(process.cmdline())
    except psutil.Error:
        return False


def main() -> int:
    import psutil

    from harness.cache import OutputCache
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation.cached_model import CachedModel
    from harness.models.residency import Residency

    checkpoint, out = sys.argv[1], Path(sys.argv[2])
    options = {"dtype": "float32", "enforce_eager": True, "max_model_len": 1024, "gpu_memory_utilization": 0.5}
    decoding = DecodingParams(max_new_tokens=4)
    residency = Residency()
    me = psutil.Process()
    seen: dict[str, list[int]] = {}
    admit = residency.admit

    def admit_noting_processes(spec, device, share, group, release):
        admit(spec, device, share, group, release)
        if "first" in seen:
            seen["alive_when_second_loaded"] = [pid for pid in seen["first"] if psutil.pid_exists(pid)]

    residency.admit = admit_noting_processes
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = OutputCache(cache_dir)
        answers = []
        for index, spec in enumerate((f"vllm:{checkpoint}", f"vllm:{checkpoint}/.")):
            model = CachedModel(spec, cache, decoding, options, progress=False, residency=residency)
            answers += model.generate([GenerationRequest(f"Say something, {index}.")])
            if index == 0:
                children = me.children(recursive=True)
                helpers = [child.pid for child in children if is_resource_tracker(child)]
                seen["helpers"] = helpers
                seen["first"] = [child.pid for child in children if child.pid not in helpers]
        residency.release_all()
    out.write_text(json.dumps({
        "loads": residency.to_json(),
        "first_engine_processes": seen["first"],
        "alive_when_second_loaded": seen.get("alive_when_second_loaded", []),
        "interpreter_helpers": seen["helpers"],
        "answers": answers,
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
