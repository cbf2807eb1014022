"""Two ``vllm:`` engines in turn in one process, through the run's residency (run in the engine's venv by
``tests/nightly/test_residency_engines.py``).

    python tests/nightly/residency_runner.py CHECKPOINT OUT.json

Writes ``{"loads": [...], "first_engine_processes": [pids], "alive_when_second_loaded": [pids], "answers": [...]}``:
the engine processes of the first engine, and which of them were still alive when the second engine loaded.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def main() -> int:
    import psutil

    from harness.cache import OutputCache
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation import CachedModel
    from harness.models.residency import Residency

    checkpoint, out = sys.argv[1], Path(sys.argv[2])
    options = {"dtype": "float32", "enforce_eager": True, "max_model_len": 1024}
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
                seen["first"] = [child.pid for child in me.children(recursive=True)]
        residency.release_all()
    out.write_text(json.dumps({
        "loads": residency.to_json(),
        "first_engine_processes": seen["first"],
        "alive_when_second_loaded": seen.get("alive_when_second_loaded", []),
        "answers": answers,
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
