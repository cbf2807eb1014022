"""Secrets (issue 13, part 4): a server that echoes the API key in its error bodies never gets the key into
results.json, report.html, the junit XML or stdout. The servers run on 127.0.0.1 and are stopped by the test."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

from harness.core.redaction import REDACTED, redact

from support.gate import LoopbackServer
from support.gate import gate_project as make_gate_project

SECRET = "sk-echo-9f8e7d6c5b4a39281706"
pytest_plugins = ["pytester"]


class EchoServer:
    """Answers every POST with ``status`` and a body that repeats the request's credentials back: the
    Authorization header, an ``api-key`` header and the bare key (as some proxies do)."""

    def __init__(self, status: int, body: str = "error"):
        outer = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests += 1
                authorization = self.headers.get("Authorization", "")
                key = authorization.removeprefix("Bearer ")
                if body == "error":
                    payload = json.dumps({"error": {"message": f"invalid credentials; you sent Authorization: {authorization}",
                                                    "headers": {"Authorization": authorization, "api-key": key},
                                                    "key": key}})  # fmt: skip
                else:  # a 200 without choices whose body echoes the key
                    payload = json.dumps({"echo": f"Authorization: {authorization}", "raw": key})
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.loopback = LoopbackServer(Handler)
        self.url = self.loopback.url

    def close(self):
        self.loopback.close()


@pytest.fixture
def gate_project(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_gate_project(pytester, "test_vibe.py")


@pytest.mark.parametrize("status, body", [(401, "error"), (200, "no-choices")])
def test_a_server_echoing_the_key_never_gets_it_into_any_output(gate_project, monkeypatch, status, body):
    server = EchoServer(status, body)
    try:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        config = gate_project.path / "models.yaml"
        spec = f"openai:{server.url}#m"
        config.write_text(json.dumps({"models": {spec: {"max_retries": 0, "timeout_s": 10}}}))
        result = gate_project.runpytest_subprocess(
            "-p", "no:cacheprovider", "--permutations", "99", "--model", spec, "--model-config", str(config),
            "-k", "advisory", "--junitxml", "junit.xml", "-l", "--tb=long", "-rA",
        )  # fmt: skip
    finally:
        server.close()
    assert server.requests > 0
    outputs = {name: (gate_project.path / name).read_text() for name in ("results.json", "report.html", "junit.xml")}
    outputs["stdout"] = result.stdout.str()
    outputs["stderr"] = result.stderr.str()
    for name, text in outputs.items():
        assert SECRET not in text, name
        assert SECRET[:12] not in text, name
    # the cases were asked and reached the server: their records say why they were not measured, redacted
    results = json.loads(outputs["results.json"])
    assert len(results["cases"]) == 2 and not any(case["passed"] for case in results["cases"])
    assert all(case.get("status") == "unmeasured" and REDACTED in case["cause"]["message"] for case in results["cases"])
    assert REDACTED in outputs["junit.xml"] and REDACTED in outputs["stdout"]


@pytest.mark.parametrize("text, kept", [
    (f"Authorization: Bearer {SECRET}", "Authorization: Bearer "),
    (f'{{"Authorization": "Bearer {SECRET}"}}', '{"Authorization": "Bearer '),
    (f"'api-key': '{SECRET}'", "'api-key': '"),
    (f"x-api-key={SECRET}", "x-api-key="),
    (f"token {SECRET} rejected", "token "),
    (f"key was {SECRET[:10]}", "key was "),  # a body cut short inside the key
    ("Bearer abc.def-ghi", "Bearer "),
])  # fmt: skip
def test_redact_removes_the_key_and_credential_shapes(text, kept):
    redacted = redact(text, [SECRET])
    assert SECRET[:8] not in redacted and "abc.def" not in redacted
    assert redacted.startswith(kept) and REDACTED in redacted
    assert redact(redacted, [SECRET]) == redacted


def test_redact_leaves_ordinary_text_alone():
    text = "HTTP 404 from http://127.0.0.1:8000/v1/chat/completions: model 'm' not found (task-risk skill)"
    assert redact(text, [SECRET, None, ""]) == text
