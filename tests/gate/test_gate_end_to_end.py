"""The gate end to end on the shipped demo corpus, through pytest itself (pytester, in subprocesses)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.gate import DEMO_RELEASE_RESULTS
from harness.gate.outcomes import EXIT_UNMEASURED
from harness.models.cascade import DEMO_MODEL, VOICE_BLIND_MODEL

from support.gate import thresholds_for_modules

REPO = Path(__file__).resolve().parents[2]
BIASED_TASKS = ("story", "advisory", "personal_shopper", "hollywood_casting")

pytest_plugins = ["pytester"]


@pytest.fixture
def gate_project(pytester: pytest.Pytester, tmp_path_factory) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    shutil.copy(REPO / "fairness_tests" / "test_vibe.py", pytester.path / "test_vibe.py")
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(["test_vibe.py"]))
    return pytester


def run_gate(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--permutations", "999", *args)
    results = json.loads((project.path / "results.json").read_text())
    return result, results


def probe_calls_beyond(*asked_tasks: str) -> int:
    """The audio floor's task probe's distinct requests on the demo corpus (it asks the selected nTVD cases' tasks,
    ``asked_tasks``), less those of their own recordings, which their cases ask already."""
    from harness.data.corpus import load_corpus
    from harness.gate.audio_probe import task_probe_requests
    from harness.metrics.audio_dependence import ORIGINAL
    from harness.tasks import TASKS

    corpus = load_corpus(REPO / "harness" / "data" / "demo", check_audio=False)
    built = task_probe_requests(corpus, {task: TASKS[task] for task in asked_tasks}, 24)
    identity = [json.dumps(request.cache_identity(), sort_keys=True, default=str) for request in built.requests]
    asked = {
        key
        for key, task, audio in zip(identity, built.rows["stratum"], built.rows["audio"])
        if task in asked_tasks and audio == ORIGINAL
    }
    return len(set(identity) - asked)


def test_fair_simulator_passes_every_case(gate_project):
    result, results = run_gate(gate_project, "--model", "sim:fair")
    result.assert_outcomes(passed=10)
    assert results["verdict"] == "pass"
    assert {case["dimension"] for case in results["cases"]} == {"gender", "accent"}
    assert (gate_project.path / "report.html").is_file()


def test_biased_simulator_fails_exactly_the_gender_cases_of_its_biased_tasks(gate_project):
    result, results = run_gate(gate_project, "--model", "sim:biased")
    failed = {case["id"] for case in results["cases"] if not case["passed"]}
    assert failed == {f"sim:biased-{task}-gender" for task in BIASED_TASKS}
    result.assert_outcomes(passed=6, failed=4)
    assert results["verdict"] == "fail"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = next(case for case in results["cases"] if case["id"] == "sim:biased-advisory-gender")
    assert set(record) >= {"check", "model", "task", "dimension", "value", "p", "q", "threshold", "passed"}
    assert record["q"] >= record["p"]


def test_keyword_selects_advisory_only_and_second_run_makes_no_model_call(gate_project):
    cache = gate_project.path / "cache"
    result, first = run_gate(gate_project, "--model", "sim:fair", "-k", "advisory", "--cache-dir", str(cache))
    result.assert_outcomes(passed=2)
    assert {case["task"] for case in first["cases"]} == {"advisory"}
    assert first["metadata"]["model_calls"] == 324 + probe_calls_beyond("advisory")
    result, second = run_gate(gate_project, "--model", "sim:fair", "-k", "advisory", "--cache-dir", str(cache))
    result.assert_outcomes(passed=2)
    assert second["metadata"]["model_calls"] == 0
    assert second["metadata"]["models_loaded"] == []
    assert [case["value"] for case in second["cases"]] == [case["value"] for case in first["cases"]]


def test_two_xdist_workers_give_the_same_results_as_one_process(gate_project):
    cache = gate_project.path / "cache"
    args = ("--model", "sim:biased", "-k", "story or candidate", "--cache-dir", str(cache))
    result, single = run_gate(gate_project, *args)
    result.assert_outcomes(passed=3, failed=1)
    result, parallel = run_gate(gate_project, *args, "-n", "2")
    result.assert_outcomes(passed=3, failed=1)
    assert parallel["metadata"]["workers"] == 2
    assert parallel["metadata"]["model_calls"] == 0

    def key(results):
        return {case["id"]: (case["value"], case["p"], case["q"], case["passed"]) for case in results["cases"]}

    assert key(parallel) == key(single)


def test_under_loadgroup_each_models_cases_run_on_one_worker(gate_project):
    """docs/models-and-engines.md: ``-n N --dist loadgroup`` keeps each model on one worker (each case carries its
    model's ``xdist_group``), so a model loads once; pytest 9.2 had silently dropped the grouping."""
    args = ("--model", "sim:fair", "--model", "sim:biased", "-k", "story", "-n", "2", "--dist", "loadgroup", "-v")
    result, results = run_gate(gate_project, *args, "--cache-dir", str(gate_project.path / "cache"))
    workers: dict[str, set[str]] = {}
    for worker, node_id in re.findall(r"\[(gw\d+)\].*?(?:PASSED|FAILED) (\S+)", result.stdout.str()):
        model = node_id.split("[", 1)[1].split("-")[0]
        assert "@" in node_id, node_id
        workers.setdefault(model, set()).add(worker)
    assert set(workers) == {"sim:fair", "sim:biased"} and all(len(ran) == 1 for ran in workers.values()), workers
    assert len(results["cases"]) == 2 * 2  # each model's story-gender and story-accent


def test_fresh_cache_under_two_workers_generates_each_output_once(gate_project):
    result, results = run_gate(
        gate_project,
        "--model",
        "sim:fair",
        "-k",
        "personal_shopper",
        "-n",
        "2",
        "--cache-dir",
        str(gate_project.path / "fresh"),
    )
    result.assert_outcomes(passed=2)
    assert results["metadata"]["model_calls"] == 324 + probe_calls_beyond("personal_shopper")


def test_invalid_thresholds_file_stops_collection_naming_file_and_valid_keys(gate_project):
    (gate_project.path / "thresholds.yaml").write_text("ntvd:\n  tasks:\n    advisroy: {max_ntvd: 10}\n")
    result = gate_project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "sim:fair")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: lalm-fairness: *thresholds.yaml: ntvd.tasks: unknown task 'advisroy'; valid: advisory, candidate_review*"
        ]
    )
    assert not (gate_project.path / "results.json").exists()


def test_unknown_model_backend_stops_collection_with_the_known_ones(gate_project):
    result = gate_project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "nope:thing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: lalm-fairness: *unknown backend 'nope'; known backends: *sim*"])


def test_export_import_offline_rescore_gives_identical_results(gate_project):
    args = ("--model", "sim:biased", "-k", "advisory or story")
    export = gate_project.path / "run.cache.jsonl.gz"
    result, original = run_gate(
        gate_project,
        *args,
        "--cache-dir",
        str(gate_project.path / "gpu-runner"),
        "--export-cache",
        str(export),
        "-n",
        "2",
    )
    result.assert_outcomes(passed=2, failed=2)
    exported = 648 + probe_calls_beyond("advisory", "story")
    result.stdout.fnmatch_lines([f"*exported {exported} cached outputs*"])
    result, rescored = run_gate(
        gate_project,
        *args,
        "--cache-dir",
        str(gate_project.path / "ci-machine"),
        "--import-cache",
        str(export),
        "--offline",
    )
    result.assert_outcomes(passed=2, failed=2)
    assert rescored["cases"] == original["cases"]
    assert rescored["metadata"]["model_calls"] == 0 and rescored["metadata"]["offline"] is True
    assert rescored["metadata"]["imported_caches"][0]["entries"] == exported
    assert "no model was loaded" in (gate_project.path / "report.html").read_text()


def test_offline_run_with_a_cache_miss_names_the_remedy(gate_project):
    result, results = run_gate(
        gate_project,
        "--model",
        "sim:fair",
        "-k",
        "advisory-gender",
        "--offline",
        "--cache-dir",
        str(gate_project.path / "empty"),
    )
    result.assert_outcomes(errors=1)
    assert result.ret == EXIT_UNMEASURED and results["verdict"] == "spot-check"  # a -k run
    assert results["cases"][0]["status"] == "unmeasured" and results["cases"][0]["cause"]["kind"] == "model"
    # The audio floor asks first, and fails closed: its probe's answers are missing too.
    message = results["cases"][0]["message"]
    assert "audio dependence not measured" in message and "import the cache export" in message
    assert "the run is offline" in message and "drop --offline" in message


def test_damaged_cache_export_is_refused_before_the_run(gate_project):
    import gzip

    damaged = gate_project.path / "damaged.jsonl.gz"
    with gzip.open(damaged, "wt") as handle:
        handle.write('{"format": "lalm-fairness-cache", "version": 1, "entries": 2}\n{"key": "k"}\n')
    result = gate_project.runpytest_subprocess("-p", "no:cacheprovider", "--import-cache", str(damaged))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*damaged.jsonl.gz, line 2: entry lacks*"])


JSON_EXTRACTOR = '''
import json
import re
from harness.extraction.fields import extract_fields
from harness.models import register_backend
from harness.models.base import Backend as BackendProtocol
from harness.tasks import TASKS


class ReadsTheFields:
    """A stand-in extraction LLM: answers the extraction prompt with the answer's fields as JSON."""

    def generate(self, requests, params):
        replies = []
        for request in requests:
            title = re.search(r'given the "(.+?)" task', request.prompt).group(1)
            task = next(task for task in TASKS.values() if task.title == title)
            answer = request.prompt.split("<<<RESPONSE\\n", 1)[1].rsplit("\\nRESPONSE>>>", 1)[0]
            extraction = extract_fields(answer, task)
            reply = {a.name: (list(extraction.values.get(a.name, ())) if a.multi_valued
                              else (extraction.values.get(a.name) or [None])[0]) for a in task.attributes}
            reply["refusal"] = extraction.status == "refusal"
            replies.append("```json\\n" + json.dumps(reply) + "\\n```")
        return replies


class Backend(BackendProtocol):
    def __init__(self, spec, target, options):
        self.spec = spec

    def fingerprint(self):
        return "reads-the-fields:v1"

    def load(self):
        return ReadsTheFields()


register_backend("fields", "conftest:Backend")
pytest_plugins = ["harness.plugin"]
'''


def test_llm_extractor_through_the_gate_agrees_with_the_rule_reader(gate_project):
    gate_project.makeconftest(JSON_EXTRACTOR)
    args = ("--model", "sim:biased", "-k", "advisory", "--cache-dir", str(gate_project.path / "cache"))
    result, rules = run_gate(gate_project, *args)
    result.assert_outcomes(passed=1, failed=1)
    result, llm = run_gate(gate_project, *args, "--extractor", "fields:json")
    result.assert_outcomes(passed=1, failed=1)
    assert [case["value"] for case in llm["cases"]] == [case["value"] for case in rules["cases"]]
    assert llm["metadata"]["extractor"] == llm["cases"][0]["extractor"] != "rules"
    assert 0 < llm["metadata"]["model_calls"] <= 324  # one extraction per distinct answer


@pytest.mark.skipif(
    not (REPO / "harness" / "data" / "demo_outputs" / "cascade-demo.jsonl.gz").is_file(),
    reason="no shipped demo outputs",
)
def test_default_run_judges_the_demo_cascade_from_its_shipped_outputs(gate_project):
    result, results = run_gate(gate_project, "-k", "advisory", "--cache-dir", str(gate_project.path / "fresh"))
    assert {case["model"] for case in results["cases"]} == {"cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct"}
    assert len(results["cases"]) == 2 and all(case["check"] == "ntvd" for case in results["cases"])
    metadata = results["metadata"]
    assert metadata["model_calls"] == 0 and metadata["models_loaded"] == []
    assert metadata["bundled_outputs"][0]["entries"] > 0
    report = (gate_project.path / "report.html").read_text()
    assert "Shipped outputs" in report and "scripts/build_demo_outputs.py" in report
    assert "[transcript]" in report and "[voice] The speaker has a" in report


def test_release_example_gates_the_voice_aware_demo_against_the_voice_blind_release(gate_project):
    """The README's release-gating example, from shipped outputs only: the voice-aware default gated against the
    voice-blind cascade's shipped results.json. A case fails on a significant regression or a new failure (it
    fails its absolute threshold where the release did not, or was unmeasured there); an absolute failure the
    release shared, without a regression, is a known failure and passes."""
    for module in (REPO / "fairness_tests").glob("test_*.py"):
        shutil.copy(module, gate_project.path / module.name)
    shutil.copy(REPO / "thresholds.yaml", gate_project.path / "thresholds.yaml")  # every check: the full gate
    result = gate_project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--cache-dir",
        str(gate_project.path / "fresh"),
        f"--baseline={DEMO_RELEASE_RESULTS}",  # as one token: pytest would take a separate path for the rootdir
    )
    results = json.loads((gate_project.path / "results.json").read_text())
    metadata = results["metadata"]
    assert metadata["model_calls"] == 0 and metadata["models_loaded"] == []
    assert metadata["baseline"]["model"] == VOICE_BLIND_MODEL
    assert {case["model"] for case in results["cases"]} == {DEMO_MODEL}
    regressions = {case["id"] for case in results["cases"] if (case.get("baseline") or {}).get("regressed")}
    failed = {case["id"] for case in results["cases"] if case.get("status") != "unmeasured" and not case["passed"]}
    assert regressions <= failed
    releases = {case["id"]: case.get("release") for case in results["cases"] if case.get("status") != "unmeasured"}
    assert {releases[case_id] for case_id in failed} <= {"regression", "new failure"}
    known = {case["id"] for case in results["cases"] if case.get("absolute_passed") is False and case["passed"]}
    assert all(releases[case_id] == "known failure" for case_id in known)
    classification = next(
        c for c in results["cases"] if c["id"] == f"{DEMO_MODEL}-gender" and c["check"] == "classification"
    )
    # unmeasured by design in the voice-blind release (what it measured kept): paired, but too few speakers to
    # detect twice the margin, so a failing case is a new failure (issue 57)
    assert classification["baseline"]["status"] == "underpowered" and classification["release"] == "new failure"
    assert result.ret == pytest.ExitCode.TESTS_FAILED and results["verdict"] == "fail"
    assert_readme_quotes_the_release_example(results)


def assert_readme_quotes_the_counterfactual_cases(readme: str, results: dict) -> None:
    """The README's counterfactual sentence states the default model's arm nTVDs and their verdicts as this run
    measured them (the story case's, the largest and the smallest)."""
    vibe = [
        case
        for case in results["cases"]
        if case["check"] == "counterfactual" and case.get("status") != "unmeasured" and case["kind"] == "vibe"
    ]
    assert vibe, "the default gate measured no VIBE counterfactual case"
    failed = [case for case in vibe if not case["absolute_passed"]]
    assert f"fails {len(failed)} of its {len(vibe)} VIBE counterfactual cases" in readme
    for case in failed:
        assert f"{case['variant'].replace('_', ' ')} {case['value']:.1f}" in readme
    others = [case["value"] for case in vibe if case["absolute_passed"]]
    assert f"the other three {min(others):.1f} to {max(others):.1f}" in readme and len(others) == 3
    artifacts = [case["artifact"]["value"] for case in vibe]
    assert f"artifacts {min(artifacts):.1f} to {max(artifacts):.1f}" in readme
    release = {
        case["variant"]: case.get("measured") or case
        for case in json.loads(DEMO_RELEASE_RESULTS.read_text())["cases"]
        if case["check"] == "counterfactual" and (case.get("status") != "unmeasured" or case.get("measured"))
    }
    arms = release["asr"]["directions"]["male"]["arms"]
    assert f"(male -> female {arms['identity']:.1f}% -> {arms['swap']:.1f}%)" in readme


def assert_readme_quotes_the_first_commands_figures(readme: str, cases: list[dict]) -> None:
    """The quick start's figures of the first command: the failing nTVD gender cases' values and the gender
    classification case's accuracy, gap and interval (absolute verdicts, the same as the first command's)."""
    ntvd = [c for c in cases if c["check"] == "ntvd" and c["dimension"] == "gender" and not c["absolute_passed"]]
    assert f"nTVD for gender fails in {['no', 'one', 'two', 'three', 'four', 'five'][len(ntvd)]} of the five" in readme
    for case in ntvd:
        assert f"{case['variant'].replace('_', ' ')} {case['value']:.1f}" in readme
    classification = next(c for c in cases if c["check"] == "classification" and c["dimension"] == "gender")
    decision = classification["decision"]
    assert (
        f"mean per-label accuracy {classification['value']:.1f}, gap {decision['estimate']:.1f} points, 95% CI "
        f"{decision['ci_low']:.1f} to {decision['ci_high']:.0f}"
    ) in readme


def assert_readme_quotes_the_release_example(results: dict) -> None:
    """The README's release example states this run's counts, outcomes and figures."""
    readme = " ".join((REPO / "README.md").read_text().split())
    cases = [case for case in results["cases"] if case.get("status") != "unmeasured"]
    failed = [case for case in cases if not case["passed"]]
    summary = results["summary"]
    assert f"the default fails {summary['failed']} of its {summary['cases']} cases and exits 1" in readme
    assert_readme_quotes_the_counterfactual_cases(readme, results)
    assert_readme_quotes_the_first_commands_figures(readme, cases)
    words = dict(enumerate(["None", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]))

    def task(case: dict) -> str:
        return f"{case['variant'].replace('_', ' ')} gender"

    regressed = [case for case in failed if case["release"] == "regression"]
    assert f"{words[len(regressed)]} regressed (nTVD beyond chance, release -> candidate [absolute]):" in readme
    for case in (c for c in regressed if c["check"] == "ntvd"):
        # both checkpoints on the measure the release test compares (the excess over the group-exchange null), so
        # that the delta adds up, and the candidate's absolute nTVD beside them, labelled
        baseline = case["baseline"]
        assert baseline["measure"] == "nTVD on common values beyond group exchange"
        candidate_excess = baseline["baseline_value"] + baseline["delta"]
        assert (
            f"{task(case)} {'nTVD ' if case['variant'] == 'story' else ''}{baseline['baseline_value']:.1f} -> "
            f"{candidate_excess:.1f} [{case['value']:.1f}] (+{baseline['delta']:.1f}, adjusted p "
            f"{baseline['decision']['p_adjusted']:.2g})"
        ) in readme
    counterfactual = [c for c in regressed if c["check"] == "counterfactual"]
    if counterfactual:
        vibe_tasks = {c["variant"] for c in cases if c["check"] == "counterfactual" and c["kind"] == "vibe"}
        assert {c["variant"] for c in counterfactual} == vibe_tasks  # "the counterfactual nTVD of every VIBE task"
        for case in counterfactual:
            assert f"{case['variant'].replace('_', ' ')} +{case['baseline']['delta']:.1f}" in readme
        largest = max(case["baseline"]["decision"]["p_adjusted"] for case in counterfactual)
        assert f"adjusted p at most {largest:.2g}" in readme
    new = [case for case in failed if case["release"] == "new failure"]
    assert all(case["baseline"]["status"] == "underpowered" for case in new)
    sentence = readme[readme.index(f"{words[len(new)]} are new failures with an underpowered comparison:") :]
    sentence = sentence[: sentence.index(".")]
    for case in new:
        named = case["variant"] if case["check"] == "ntvd" else f"{case['dimension']} {case['check']}"
        assert named.replace("_", " ") in sentence, named
    assert f"The other {summary['unmeasured']} are unmeasured" in readme
    assert not any(case["release"] == "known failure" for case in cases)
