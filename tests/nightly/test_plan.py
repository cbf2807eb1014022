"""The gate's requests as a plan (``--plan``), filled by ``lalm-fairness-generate`` (no Ray), imported and re-scored
``--offline``: the records equal the in-process run's, on the simulators and on a tiny random ``hf:`` checkpoint;
and ``--shard i/N`` cuts a plan into disjoint parts whose union is the plan."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cache import OutputCache
from harness.gate.outcomes import EXIT_SPOT_CHECK
from harness.generation.fill_plan import main as generate_main
from harness.generation.request_plan import (
    OPTIONAL_PLAN_COLUMNS,
    PLAN_COLUMNS,
    PlanError,
    parse_shard,
    read_plan,
    shard,
)

from support import engine as es

pytest.importorskip("pyarrow")
ROOT = Path(__file__).resolve().parents[2]
SIM_SELECTION = ("--pyargs", "harness.gate_tests.test_vibe", "harness.gate_tests.test_wer")


def gate(workdir: Path, *arguments: str, exits: tuple[int, ...] = (0, 1, 7, EXIT_SPOT_CHECK)) -> str:
    """One gate run in a fresh interpreter (this worktree's harness), its output returned."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--rootdir", str(workdir),
               "--permutations", "100", "--report", "", *arguments]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=workdir, timeout=900)
    assert done.returncode in exits, f"exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    return done.stdout


def plan_fill_and_rescore(workdir: Path, selection: tuple[str, ...], *options: str) -> tuple[dict, list[str]]:
    """Plan rounds, each filled by lalm-fairness-generate and imported, until nothing is left; then the offline
    run's results.json, and each round's plan line."""
    cache, plan, lines, imports = workdir / "cache", workdir / "plan.parquet", [], []
    for round_number in range(1, 6):
        output = gate(workdir, *selection, *options, "--cache-dir", str(cache), "--plan", str(plan), *imports)
        lines += [line for line in output.splitlines() if line.startswith("lalm-fairness: plan ")]
        if not read_plan(plan):
            break
        filled = workdir / f"round{round_number}.jsonl.gz"
        assert generate_main(["--plan", str(plan), "--out", str(filled), "--no-progress"]) == 0
        imports = ["--import-cache", str(filled)]
    else:
        pytest.fail(f"the plan still had requests after 5 rounds: {lines}")
    results = workdir / "results.json"
    gate(workdir, *selection, *options, "--cache-dir", str(cache), "--offline", "--results-json", str(results))
    return json.loads(results.read_text()), lines


@pytest.fixture(scope="module")
def fair_plan(tmp_path_factory) -> Path:
    """The plan of ``sim:fair`` over the VIBE and WER modules on an empty cache, planned once for the module's tests
    that read it (a plan run writes no results)."""
    workdir = tmp_path_factory.mktemp("fair-plan")
    gate(workdir, *SIM_SELECTION, "--model", "sim:fair", "--cache-dir", str(workdir / "c"), "--plan", "p.parquet")
    assert not (workdir / "results.json").exists(), "a plan run writes no results"
    return workdir / "p.parquet"


def differences(left, right, path: str = "cases") -> list[str]:
    """Where two results.json values differ, as paths; floats are equal within 1e-9 relative (an embedding computed in
    another process, with another thread count, may differ in its last bits), everything else exactly."""
    if isinstance(left, float) and isinstance(right, float):
        return [] if math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12) else [f"{path}: {left!r} != {right!r}"]
    if isinstance(left, dict) and isinstance(right, dict):
        if left.keys() != right.keys():
            return [f"{path}: keys {sorted(left)} != {sorted(right)}"]
        return [found for key in left for found in differences(left[key], right[key], f"{path}.{key}")]
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return [f"{path}: {len(left)} items != {len(right)}"]
        return [
            found for index, pair in enumerate(zip(left, right)) for found in differences(*pair, f"{path}[{index}]")
        ]
    return [] if left == right else [f"{path}: {str(left)[:200]!r} != {str(right)[:200]!r}"]


def in_process(workdir: Path, selection: tuple[str, ...], *options: str) -> dict:
    results = workdir / "results.json"
    gate(workdir, *selection, *options, "--cache-dir", str(workdir / "cache"), "--results-json", str(results))
    return json.loads(results.read_text())


@pytest.mark.slow
def test_a_plan_filled_elsewhere_rescores_to_the_in_process_records_on_the_simulators(tmp_path):
    """About 110 s on two shared cores: an in-process run, two plan rounds, their fills and the offline run."""
    options = ("--model", "sim:fair", "--model", "sim:biased")
    expected = in_process(tmp_path / "in-process", SIM_SELECTION, *options)
    rescored, lines = plan_fill_and_rescore(tmp_path / "planned", SIM_SELECTION, *options)
    assert rescored["cases"] == expected["cases"] and len(expected["cases"]) > 10
    assert rescored["metadata"]["model_calls"] == 0 and expected["metadata"]["model_calls"] > 0
    assert len(lines) >= 2 and ", 0 already in the cache" in lines[0] and ": 0 requests to generate" in lines[-1]


def test_a_plan_row_holds_what_a_worker_needs(fair_plan):
    import pyarrow.parquet as pq

    table = pq.read_table(fair_plan)
    assert tuple(table.column_names) == (*PLAN_COLUMNS, *OPTIONAL_PLAN_COLUMNS)
    rows = read_plan(fair_plan)
    with_audio = next(row for row in rows if row.audio_path)
    assert Path(with_audio.audio_path).is_file() and with_audio.request().audio.content_hash == with_audio.audio_sha256
    assert {row.spec for row in rows} == {"sim:fair"} and all(row.fingerprint for row in rows)


def test_the_shards_of_a_plan_are_disjoint_and_together_the_plan(fair_plan, tmp_path):
    rows = read_plan(fair_plan)
    parts = [shard(rows, index, 3) for index in range(1, 4)]
    keys = [row.key for part in parts for row in part]
    assert len(keys) == len(set(keys)) == len(rows) and sorted(keys) == sorted(row.key for row in rows)
    assert all(parts)
    gate(tmp_path, *SIM_SELECTION, "--model", "sim:fair", "--cache-dir", str(tmp_path / "c"), "--plan", "p2.parquet",
         "--shard", "2/3")  # fmt: skip
    assert [row.key for row in read_plan(tmp_path / "p2.parquet")] == [row.key for row in parts[1]]
    outputs = [tmp_path / f"shard{index}.jsonl.gz" for index in range(1, 4)]
    for index, output in enumerate(outputs, start=1):
        arguments = ["--plan", str(fair_plan), "--out", str(output), "--shard", f"{index}/3"]
        assert generate_main([*arguments, "--no-progress"]) == 0
    imports = [argument for output in outputs for argument in ("--import-cache", str(output))]
    output = gate(tmp_path, *SIM_SELECTION, "--model", "sim:fair", "--cache-dir", str(tmp_path / "c2"), "--plan",
                  "p3.parquet", *imports)  # fmt: skip
    assert f"{len(rows)} already in the cache" in output
    with pytest.raises(ValueError, match=r"expected i/N with 1 <= i <= N"):
        parse_shard("4/3")


def test_generate_refuses_rows_whose_model_has_another_fingerprint_here(fair_plan, tmp_path, capsys):
    import pyarrow.parquet as pq

    table = pq.read_table(fair_plan).to_pandas()
    table["fingerprint"] = "sim:fair-elsewhere"
    table.to_parquet(tmp_path / "altered.parquet", index=False)
    assert generate_main(["--plan", str(tmp_path / "altered.parquet"), "--out", str(tmp_path / "o.jsonl.gz")]) == 1
    captured = capsys.readouterr()
    assert "the plan's is sim:fair-elsewhere" in captured.err and f"{len(table)} failed" in captured.out


def altered_plan(fair_plan: Path, path: Path, rows: int | None = None):
    """The fair plan (its first ``rows``) with the second row's prompt edited after planning: the row's key no
    longer names its request."""
    import pyarrow.parquet as pq

    table = pq.read_table(fair_plan).to_pandas().iloc[:rows].reset_index(drop=True)
    table.loc[1, "prompt"] += " Answer in French."
    table.to_parquet(path, index=False)
    return table


def test_generate_refuses_a_row_whose_request_hashes_to_another_key_and_answers_the_others(fair_plan, tmp_path, capsys):
    table = altered_plan(fair_plan, tmp_path / "altered.parquet")
    out = tmp_path / "o.jsonl.gz"
    assert generate_main(["--plan", str(tmp_path / "altered.parquet"), "--out", str(out), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert f"failed: plan row {table.key[1]} (sim:fair, {table.label[1]}): its request hashes to " in captured.err
    assert f"{len(table)} planned: {len(table) - 1} done (0 before this run), 1 failed, 1 left" in captured.out
    cache = OutputCache(tmp_path / "imported")
    cache.import_file(out)
    assert set(cache.lookup(list(table.key))) == set(table.key) - {table.key[1]}


def test_a_ray_worker_refuses_a_row_whose_request_hashes_to_another_key_and_answers_the_others(fair_plan, tmp_path):
    """The worker runs here, without a cluster: the driver would store each answer it returns under the row's key."""
    from harness.generation.ray_fill import PlanWorker

    table = altered_plan(fair_plan, tmp_path / "altered.parquet", rows=4)
    worker = PlanWorker("sim:fair", table.options[0], table.fingerprint[0])
    answered = worker(table).set_index("key")
    assert sorted(answered.index) == sorted(table.key)
    refused = answered.loc[table.key[1]]
    assert refused.text == "" and refused.error.startswith(f"plan row {table.key[1]} (sim:fair, {table.label[1]})")
    assert "its request hashes to" in refused.error and "refused" in refused.error
    others = answered.drop(index=table.key[1])
    assert (others.error == "").all() and (others.text != "").all()


@pytest.mark.slow
def test_a_plan_filled_elsewhere_rescores_to_the_in_process_records_on_a_tiny_hf_checkpoint(tmp_path):
    pytest.importorskip("transformers")
    checkpoint = es.build_engine_checkpoint(tmp_path / "tiny-qwen2-audio")
    corpus = es.small_corpus(tmp_path / "corpus", sentences=2)
    selection = ("--pyargs", "harness.gate_tests.test_wer", "-k", "wer_ratio")
    # 12 tokens per transcript: a random checkpoint seldom ends its answer, and 256 tokens each was 90% of the test
    models = tmp_path / "models.yaml"
    models.write_text(f"models:\n  {json.dumps(f'hf:{checkpoint}')}: {{max_new_tokens: 12}}\n")
    options = ("--model", f"hf:{checkpoint}", "--corpus", f"small={corpus}", "--model-config", str(models))
    # the default embedder: the model's own
    expected = in_process(tmp_path / "in-process", selection, *options)
    rescored, lines = plan_fill_and_rescore(tmp_path / "planned", selection, *options)
    assert expected["cases"] and not differences(rescored["cases"], expected["cases"])
    assert rescored["metadata"]["model_calls"] == 0
    decided = [case.get("measured") or case for case in rescored["cases"]]  # unmeasured by design keeps its record
    judged = {comparison["judged_method"] for case in decided for comparison in case["comparisons"]}
    assert judged == {"regression w/ speaker w/ semantics: Embed-AGG"}  # the paper's row, from planned embeddings


def test_a_plan_holds_no_secret(tmp_path):
    from harness.core.requests import DecodingParams, GenerationRequest
    from harness.generation.request_plan import Planner, write_plan

    planner = Planner(tmp_path / "audio")
    planner.add(
        namespace="generate",
        spec="openai:http://127.0.0.1:1/v1/model",
        fingerprint="openai:x",
        options={"api_key": "sk-proj-abcdefghijklmnop", "headers": {"Authorization": "Bearer abcdefghijkl"}},
        decoding=DecodingParams(),
        label="t",
        requests=[GenerationRequest("hello")],
        keys=["0" * 64],
    )
    write_plan(tmp_path / "p.parquet", list(planner.rows.values()))
    text = (tmp_path / "p.parquet").read_bytes()
    assert b"abcdefghijklmnop" not in text and b"abcdefghijkl" not in text
    assert "[REDACTED]" in read_plan(tmp_path / "p.parquet")[0].options


def test_a_plan_row_carries_the_recipe_of_derived_audio_and_a_plan_without_the_column_still_reads(tmp_path):
    """A counterfactual arm is identified by its recipe (:attr:`Audio.recipe`): its row keeps the recipe, so the
    worker's request has the gate's cache key; a plan written before the ``audio_recipe`` column reads (recipe None),
    and a derived clip whose recipe was lost is refused rather than answered under another key."""
    import numpy as np
    import pyarrow.parquet as pq

    from harness.core.requests import Audio, DecodingParams, GenerationRequest
    from harness.generation.request_plan import Planner

    recorded = Audio(np.linspace(-0.5, 0.5, 1600, dtype=np.float32))
    derived = Audio(np.linspace(0.5, -0.5, 1600, dtype=np.float32), recipe="source-hash|male|gender_swap:settings")
    keys = {"recorded": "1" * 64, "derived": "2" * 64}
    planner = Planner(tmp_path / "plan.parquet.audio")
    planner.add(namespace="generate", spec="sim:fair", fingerprint="sim:fair@test", options={},
                decoding=DecodingParams(), label="swap arm", requests=[GenerationRequest("a", recorded),
                GenerationRequest("b", derived)], keys=[keys["recorded"], keys["derived"]])  # fmt: skip
    planner.write(tmp_path / "plan.parquet")
    rows = {row.key: row for row in read_plan(tmp_path / "plan.parquet")}
    assert rows[keys["derived"]].audio_recipe == derived.recipe and rows[keys["recorded"]].audio_recipe is None
    for name, audio in (("recorded", recorded), ("derived", derived)):
        assert rows[keys[name]].request().audio.content_hash == audio.content_hash, name
    pq.write_table(pq.read_table(tmp_path / "plan.parquet").drop(["audio_recipe"]), tmp_path / "old.parquet")
    rows = {row.key: row for row in read_plan(tmp_path / "old.parquet")}
    assert [row.audio_recipe for row in rows.values()] == [None, None]
    assert rows[keys["recorded"]].request().audio.content_hash == recorded.content_hash
    with pytest.raises(PlanError, match="its samples do not hash to the plan's"):
        rows[keys["derived"]].request()


@pytest.mark.slow
def test_an_empty_answer_is_filled_stored_and_the_plan_loop_ends(tmp_path):
    """Issue 59, item 4: ``sim:fair`` answers the identity arm's transcriptions '' when asked in a process of its
    own (lalm-fairness-generate); the cache never stored an empty answer, so every plan round listed them again,
    never reaching "0 requests to generate", and the offline re-score left the ASR counterfactual case unmeasured."""
    selection = ("--pyargs", "harness.gate_tests.test_counterfactual", "-k", "asr")
    rescored, lines = plan_fill_and_rescore(tmp_path, selection, "--model", "sim:fair")
    assert ": 0 requests to generate" in lines[-1], lines
    cases = [case for case in rescored["cases"] if "asr" in case["id"]]
    assert cases and all(case.get("status") != "unmeasured" for case in cases), cases
    assert rescored["summary"]["unmeasured"] == 0, rescored["summary"]
