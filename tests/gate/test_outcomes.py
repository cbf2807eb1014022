"""Outcomes, servers and cache damage (issue 13, parts 1, 2 and 5), through the real plugin where they meet the user.

* A case that cannot be measured is an *error* with its cause, never a fail; exit 0 pass, 1 a measured bias
  failure (it outranks unmeasured cases), 7 unmeasured cases and no failure, 4 a setup problem found before any case.
* A dead (always 500) or hanging server ends the gate fast through the per-model circuit breaker; a batch keeps
  the answers it got.
* A corrupt cache database is set aside and rebuilt; a cache folder that is a file is refused by name.

The servers listen on 127.0.0.1, run in this process and are stopped by the tests.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import xml.etree.ElementTree as ElementTree
from http.server import BaseHTTPRequestHandler

import pytest

from harness.cache import CacheError, OutputCache
from harness.core.errors import ModelError, PartialGenerationError, ServerError
from harness.core.requests import DecodingParams, GenerationRequest
from harness.gate.outcomes import (
    EXIT_BIAS_FAILURE,
    EXIT_PASS,
    EXIT_SPOT_CHECK,
    EXIT_UNMEASURED,
    EXIT_USAGE,
    cause_of,
)
from harness.generation.cached_model import CachedModel
from harness.models.openai_backend import CircuitBreaker, OpenAIBackend
from harness.records import Cause, UnmeasuredRecord
from harness.results import Summary
from harness.run_decision import decide_run

from support.gate import LoopbackServer
from support.gate import gate_project as make_gate_project
from support.records import ntvd_record

pytest_plugins = ["pytester"]


class ChatServer:
    """A chat-completions server on 127.0.0.1: ``mode`` is ``500`` (always), ``hang`` (never answers until
    closed) or ``ok``; with ``ok``, a prompt containing ``FAIL`` always gets a 500."""

    def __init__(self, mode: str):
        outer = self
        self.requests = 0
        self.lock = threading.Lock()
        self.released = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with outer.lock:
                    outer.requests += 1
                if mode == "hang":
                    outer.released.wait(60)
                    return
                prompt = next(part["text"] for part in body["messages"][-1]["content"] if part["type"] == "text")
                status = 500 if mode == "500" or "FAIL" in prompt else 200
                payload = (
                    {"error": "boom"}
                    if status == 500
                    else {"choices": [{"message": {"content": f"answer to {prompt}"}}]}
                )
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.loopback = LoopbackServer(Handler)
        self.url = self.loopback.url

    def close(self) -> None:
        self.released.set()
        self.loopback.close()


@pytest.fixture
def server():
    made: list[ChatServer] = []

    def make(mode: str) -> ChatServer:
        made.append(ChatServer(mode))
        return made[-1]

    yield make
    for each in made:
        each.close()


@pytest.fixture
def gate_project(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_gate_project(pytester, "test_vibe.py")


def run_gate(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, float]:
    start = time.monotonic()
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--permutations", "99", "--junitxml", "junit.xml",
                                          "--cache-dir", str(project.path / "cache"), *args)  # fmt: skip
    return result, time.monotonic() - start


def results_of(project: pytest.Pytester) -> dict:
    return json.loads((project.path / "results.json").read_text())


def junit_counts(project: pytest.Pytester) -> dict[str, int]:
    suite = ElementTree.parse(project.path / "junit.xml").getroot().find("testsuite")
    return {key: int(suite.get(key)) for key in ("tests", "failures", "errors")}


# ------------------------------------------------------------------------------------------------------
# Part 1: outcomes and exit statuses


def test_run_verdict_a_measured_failure_outranks_unmeasured_cases():
    measured_pass, measured_fail = ntvd_record(passed=True), ntvd_record(passed=False)
    unmeasured = UnmeasuredRecord(check="ntvd", id="m-story-gender", message="not measured (model): down")
    assert decide_run([measured_pass]).verdict == "pass"
    assert Summary.of([measured_pass]) == Summary(cases=1, passed=1, failed=0, unmeasured=0)
    assert decide_run([measured_pass, unmeasured]).verdict == "unmeasured"
    assert Summary.of([measured_pass, unmeasured]) == Summary(cases=2, passed=1, failed=0, unmeasured=1)
    assert decide_run([measured_fail, unmeasured]).verdict == "fail"
    assert (EXIT_PASS, EXIT_BIAS_FAILURE, EXIT_USAGE) == (
        pytest.ExitCode.OK,
        pytest.ExitCode.TESTS_FAILED,
        pytest.ExitCode.USAGE_ERROR,
    )
    assert EXIT_UNMEASURED not in {int(code) for code in pytest.ExitCode}


@pytest.mark.parametrize("error, kind, source", [
    (ServerError("HTTP 500", source="http://127.0.0.1:1/v1"), "server", "http://127.0.0.1:1/v1"),
    (ModelError("offline and missing"), "model", "sim:fair"),
    (CacheError("cache database x: disk I/O error", source="/c/outputs.sqlite"), "cache", "/c/outputs.sqlite"),
    (sqlite3.DatabaseError("malformed"), "cache", None),
    (KeyError("speaker"), "internal", None),
])  # fmt: skip
def test_cause_of_classifies_what_stopped_a_case(error, kind, source):
    cause = cause_of(error, "sim:fair")
    assert (cause.kind, cause.source) == (kind, source) and "\n" not in cause.message
    assert Cause(kind, source, "other words").key == cause.key or source is None


@pytest.mark.parametrize("args, config, named", [
    (["--model", "sim:nonexistent"], None, "unknown simulator preset 'nonexistent'"),
    (["--model", "openai:http://127.0.0.1:9/v1"], None, "must be '<base_url>[,<base_url>...]#<model>'"),
    (["--model", "openai:ftp://127.0.0.1/v1#m"], None, "openai base URL 'ftp://127.0.0.1/v1' must start with http://"),
    (["--model", "sim:fair"], "models:\n  sim:fair: {bogus: 1}\n", "models.yaml: model 'sim:fair': unknown option(s) ['bogus']"),
    (["--model", "sim:fair"], "models:\n  sim:fair: {chunk_size: 0}\n", "models.yaml: models.sim:fair.chunk_size: expected a whole number >= 1, got 0"),
])  # fmt: skip
def test_a_setup_problem_is_one_usage_error_line_before_any_case(gate_project, args, config, named):
    if config is not None:
        (gate_project.path / "models.yaml").write_text(config)
        args = [*args, "--model-config", str(gate_project.path / "models.yaml")]
    result, _ = run_gate(gate_project, *args)
    assert result.ret == EXIT_USAGE
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and named in errors[0], result.stderr.str()
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "_pytest" not in output and len(output.splitlines()) < 30
    assert not (gate_project.path / "results.json").exists()


def test_under_xdist_a_setup_problem_is_the_same_one_line_from_the_controller(gate_project):
    result, _ = run_gate(gate_project, "--model", "sim:nonexistent", "-n", "2")
    assert result.ret == EXIT_USAGE
    output = result.stdout.str() + result.stderr.str()
    assert output.count("ERROR: lalm-fairness: model spec 'sim:nonexistent': unknown simulator preset") == 1
    assert "INTERNALERROR" not in output and "Traceback" not in output


def test_unmeasured_cases_are_errors_with_their_cause_and_a_measured_failure_still_fails_the_run(gate_project, server):
    dead = server("500")
    spec = f"openai:{dead.url}#m"
    result, seconds = run_gate(
        gate_project, "--model", "sim:biased", "--model", spec, "-k", "advisory", "--extractor", "rules"
    )
    results = results_of(gate_project)
    assert result.ret == EXIT_BIAS_FAILURE and results["verdict"] == "spot-check"  # a -k run
    assert results["summary"] == {"cases": 4, "passed": 1, "failed": 1, "unmeasured": 2}
    unmeasured = [case for case in results["cases"] if case.get("status") == "unmeasured"]
    assert {case["model"] for case in unmeasured} == {spec} and {case["dimension"] for case in unmeasured} == {
        "gender",
        "accent",
    }
    assert all(case["cause"]["kind"] == "server" and case["cause"]["source"] == dead.url for case in unmeasured)
    first, second = sorted(unmeasured, key=lambda case: "same cause" in case["message"])
    assert "HTTP 500" in first["message"] and second["message"].endswith(f"same cause as case {first['id']}")
    result.assert_outcomes(passed=1, failed=1, errors=2)
    assert junit_counts(gate_project) == {"tests": 4, "failures": 1, "errors": 2}
    section = (
        (gate_project.path / "report.html").read_text().split('<section id="unmeasured">')[1].split("</section>")[0]
    )
    assert "Unmeasured cases" in section and all(case["id"] in section for case in unmeasured)
    before_pytest_summary = result.stdout.str().split("short test summary info")[0]
    assert before_pytest_summary.count("HTTP 500 from") == 2  # the first case's error section and the gate's summary


def test_only_unmeasured_cases_give_the_unmeasured_status_and_a_measured_pass_keeps_its_record(gate_project, server):
    dead = server("500")
    result, _ = run_gate(
        gate_project, "--model", "sim:fair", "--model", f"openai:{dead.url}#m", "-k", "advisory", "--extractor", "rules"
    )
    results = results_of(gate_project)
    assert result.ret == EXIT_UNMEASURED and results["verdict"] == "spot-check"  # a -k run
    assert results["summary"] == {"cases": 4, "passed": 2, "failed": 0, "unmeasured": 2}
    result.stdout.fnmatch_lines(["lalm-fairness: verdict spot-check: 4 cases, 2 passed, 0 failed, 2 unmeasured",
                                 f"  not measured (server, {dead.url}), 2 case(s): *"])  # fmt: skip


# ------------------------------------------------------------------------------------------------------
# Part 2: servers


@pytest.mark.parametrize("mode, options", [("500", None), ("hang", {"timeout_s": 2})])
def test_a_dead_or_hanging_server_ends_the_gate_fast_as_unmeasured(gate_project, server, mode, options):
    """Every case of test_vibe.py (10) against a server that always answers 500 (default options) or never
    answers (default options but a 2 s read timeout): the breaker stops the calls, the run ends unmeasured."""
    broken = server(mode)
    spec = f"openai:{broken.url}#m"
    args = ["--model", spec]
    if options:
        (gate_project.path / "models.yaml").write_text(json.dumps({"models": {spec: options}}))
        args += ["--model-config", str(gate_project.path / "models.yaml")]
    result, seconds = run_gate(gate_project, *args)
    results = results_of(gate_project)
    assert result.ret == EXIT_UNMEASURED and results["verdict"] == "unmeasured", result.stdout.str()[-3000:]
    assert seconds < 120
    assert results["summary"]["unmeasured"] == results["summary"]["cases"] == 10
    assert {case["cause"]["message"] for case in results["cases"]} == {results["cases"][0]["cause"]["message"]}
    assert "not called again in this session" in results["cases"][0]["cause"]["message"]
    assert broken.requests <= 32  # the breaker's 12 failures plus what was in flight, not 10 cases x retries
    assert "Traceback" not in result.stdout.str()


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_on_a_streak_of_failures_or_a_long_silence_and_a_success_resets_it():
    clock = FakeClock()
    breaker = CircuitBreaker("openai:u#m", "u", failures=3, seconds=100, clock=clock)
    breaker.failure(0.0, "HTTP 500")
    breaker.failure(0.0, "HTTP 500")
    breaker.success()
    breaker.failure(0.0, "HTTP 500")
    breaker.check()  # two, then a success, then one: closed
    breaker.failure(0.0, "HTTP 500")
    breaker.failure(0.0, "HTTP 500")
    with pytest.raises(ServerError, match="after 3 failed attempt"):
        breaker.check()

    hanging = CircuitBreaker("openai:u#m", "u", failures=12, seconds=100, clock=clock)
    clock.now = 50.0
    hanging.success()  # the last success at 50 s
    clock.now = 120.0
    hanging.failure(0.0, "timed out")  # a slow request sent at 0 s: the server answered others since
    hanging.check()
    clock.now = 150.0
    hanging.failure(20.0, "timed out")  # 100 s without a success
    with pytest.raises(ServerError, match="timed out"):
        hanging.check()


def test_a_failing_request_keeps_the_answers_of_its_batch_in_the_cache(tmp_path, server):
    healthy = server("ok")
    target = f"{healthy.url}#m"
    options = {"max_retries": 0, "backoff_s": 0.01, "breaker_failures": 50}
    cached = CachedModel(
        f"openai:{target}", OutputCache(tmp_path), DecodingParams(), options, chunk_size=4, progress=False
    )
    requests = [GenerationRequest(f"q{index}" + (" FAIL" if index == 2 else "")) for index in range(10)]
    with pytest.raises(PartialGenerationError, match="1 of 4 requests of the batch failed"):
        cached.generate(requests)
    kept = cached.cache.get_many(cached.keys(requests))
    assert len(kept) == 9 and cached.keys(requests)[2] not in kept  # every chunk ran, the good answers stayed
    before = healthy.requests
    with pytest.raises(PartialGenerationError):
        cached.generate(requests)
    assert healthy.requests - before == 1  # a re-run asks only the missing one


def test_breaker_options_are_checked_when_the_backend_is_built():
    for key, value in (("breaker_failures", 0), ("breaker_s", -1), ("timeout_s", "soon")):
        with pytest.raises(ModelError, match=f"option {key} must be a number"):
            OpenAIBackend(spec="openai:http://h/v1#m", target="http://h/v1#m", options={key: value})


# ------------------------------------------------------------------------------------------------------
# Part 5: cache damage


def damaged_database(folder, how: str):
    folder.mkdir()
    path = folder / "outputs.sqlite"
    if how == "garbage":
        path.write_bytes(b"this is not an SQLite database" * 2000)
        return path
    cache = OutputCache(folder)
    cache.put_many([(f"k{index}", "generate", "f", "x" * 3000, {}) for index in range(2000)])
    cache.close()
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    return path


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_a_corrupt_database_is_set_aside_and_the_cache_rebuilt(tmp_path, how):
    path = damaged_database(tmp_path / "cache", how)
    cache = OutputCache(tmp_path / "cache")
    assert cache.set_aside is not None and cache.set_aside.name.startswith("outputs.sqlite.corrupt-")
    assert cache.set_aside.is_file() and len(cache) == 0
    cache.put_many([("k", "generate", "f", "text", {})])
    assert cache.get_many(["k"]) == {"k": "text"} and path.is_file()


def test_the_gate_sets_a_corrupt_cache_aside_once_and_measures_every_case(gate_project):
    damaged_database(gate_project.path / "cache", "garbage")
    result, _ = run_gate(gate_project, "--model", "sim:fair", "-k", "advisory")
    assert result.ret == EXIT_SPOT_CHECK  # -k: a spot check, whose passing exit is not a release pass
    result.assert_outcomes(passed=2)
    set_aside = results_of(gate_project)["metadata"]["cache_set_aside"]
    assert set_aside.startswith(str(gate_project.path / "cache" / "outputs.sqlite.corrupt-"))
    result.stdout.fnmatch_lines(
        [f"lalm-fairness: the cache database was damaged; set aside as {set_aside} and rebuilt"]
    )


def test_a_cache_folder_that_is_a_file_is_refused_by_name_before_any_case(gate_project):
    (gate_project.path / "not-a-folder").write_text("x")
    result, _ = run_gate(gate_project, "--model", "sim:fair", "--cache-dir", str(gate_project.path / "not-a-folder"))
    assert result.ret == EXIT_USAGE
    result.stderr.fnmatch_lines(
        [f"ERROR: lalm-fairness: cache folder {gate_project.path / 'not-a-folder'} is a file, not a folder*"]
    )
    with pytest.raises(CacheError, match="is a file, not a folder"):
        OutputCache(gate_project.path / "not-a-folder")


def test_the_cache_command_names_a_damaged_database_and_a_folder_that_is_a_file(tmp_path, capsys):
    from harness.cache_cli import main

    damaged_database(tmp_path / "cache", "garbage")
    assert main(["stats", "--cache-dir", str(tmp_path / "cache")]) == 0
    captured = capsys.readouterr()
    assert "was damaged: set aside as" in captured.err and "outputs.sqlite: 0 entries" in captured.out
    (tmp_path / "file").write_text("x")
    assert main(["stats", "--cache-dir", str(tmp_path / "file")]) == 4
    assert capsys.readouterr().err.startswith(f"ERROR: lalm-fairness-cache: cache folder {tmp_path / 'file'} is a file")
