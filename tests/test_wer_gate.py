"""The semantic-aware WER check in the gate, and the semantic covariates behind it."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cache import OutputCache
from harness.semantic import Embedder, cached_embeddings, principal_components

REPO = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]


def test_principal_components_are_standardised_and_capped_at_the_rank():
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(5, 3)) @ rng.normal(size=(3, 16))
    scores, ratio = principal_components(np.repeat(embeddings, 4, axis=0), k=8)
    assert scores.shape == (20, 3)
    assert np.allclose(scores.std(axis=0), 1.0) and np.allclose(scores.mean(axis=0), 0.0)
    assert ratio.sum() == pytest.approx(1.0) and np.all(np.diff(ratio) <= 0)


def test_embeddings_are_cached_per_distinct_text(tmp_path):
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([[len(text), text.count("a")] for text in texts], dtype=float)

    embedder = Embedder("fake", "fake:v1", embed)
    cache = OutputCache(tmp_path)
    first = cached_embeddings(embedder, ["a cat", "a dog", "a cat"], cache)
    second = cached_embeddings(embedder, ["a dog", "a cat"], cache)
    assert calls == [["a cat", "a dog"]]
    assert np.array_equal(first[[1, 0]], second)


@pytest.fixture
def project(pytester):
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_wer.py", pytester.path / "test_wer.py")
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    return pytester


def run(project, *args):
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--cache-dir", str(project.path / "cache"), *args)
    return result, json.loads((project.path / "results.json").read_text())


def test_biased_recogniser_fails_gender_and_fair_one_passes(project):
    result, results = run(project, "--model", "sim:fair", "--model", "sim:biased")
    failed = {case["id"] for case in results["cases"] if not case["passed"]}
    assert failed == {"sim:biased-demo-gender"}
    result.assert_outcomes(passed=3, failed=1, skipped=1)  # test_score_ratio has no case without --judge
    gender = next(case for case in results["cases"] if case["id"] == "sim:biased-demo-gender")
    methods = [row["method"] for row in gender["comparisons"][0]["methods"]]
    assert methods[0] == "vanilla" and len(methods) in (3, 4)
    assert gender["value"] > 1.5 and gender["ci"][0] > 1.0
    accent = next(case for case in results["cases"] if case["id"] == "sim:biased-demo-accent")
    assert len(accent["comparisons"]) == 6  # one-vs-rest for each accent
    assert "Semantic-aware WER fairness" in (project.path / "report.html").read_text()


def test_without_an_embedder_the_speaker_model_decides_and_says_so(project):
    result, results = run(project, "--model", "sim:biased", "--embedder", "none", "-k", "gender")
    result.assert_outcomes(failed=1)
    case = results["cases"][0]
    assert case["semantics"]["embedder"] == "none"
    assert "no semantic embedder available" in case["message"]
    assert case["comparisons"][0]["judged_method"] == "regression w/ speaker w/o semantics"


def test_judge_score_ratio_runs_only_with_a_judge_and_catches_the_biased_chat(project):
    without_judge = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "sim:biased", "-k", "score_ratio")
    without_judge.assert_outcomes(skipped=1)  # an empty parameter set: no judge, no case
    result, results = run(project, "--model", "sim:fair", "--model", "sim:biased", "--judge", "sim:fair",
                          "-k", "score_ratio and gender")
    failed = {case["id"] for case in results["cases"] if not case["passed"]}
    assert failed == {"sim:biased-demo-gender"}
    biased = next(case for case in results["cases"] if case["id"] == "sim:biased-demo-gender")
    assert biased["check"] == "score_ratio" and biased["value"] < 1 and biased["semantics"]["unscored_replies"] == 0
    assert results["metadata"]["judge"].startswith("sim:fair")
