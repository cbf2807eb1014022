"""openai: backend against loopback HTTP servers (127.0.0.1) started by the tests.

The servers check each request body (input_audio WAV part, explicit sampling fields) and answer, or
inject 429 / 500 / slow responses. Every request loop is bounded (few requests, short timeouts).
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
import soundfile as sf

from harness.core.answers import ChoiceForm, FieldsForm
from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.models.openai_backend import OpenAIBackend, build_body, parse_target

from support.gate import LoopbackServer

SECRET = "sk-test-secret-value-123"


class Server:
    """A tiny chat-completions server; ``script`` yields the (status, headers, delay) per request."""

    def __init__(self, script=None, name="s"):
        self.name = name
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.script = list(script or [])
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with outer.lock:
                    outer.bodies.append(body)
                    outer.headers.append(dict(self.headers))
                    status, extra, delay = outer.script.pop(0) if outer.script else (200, {}, 0.0)
                if delay:
                    time.sleep(delay)
                if self.path != "/v1/chat/completions":
                    status = 404
                if status != 200:
                    payload = json.dumps({"error": {"message": f"injected {status}"}}).encode()
                else:
                    text = next(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
                    answer = f"{outer.name}:{text}"
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
                try:
                    self.send_response(status)
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.loopback = LoopbackServer(Handler)
        self.url = self.loopback.url

    def close(self):
        self.loopback.close()


@pytest.fixture
def servers():
    made = []

    def make(script=None, name="s"):
        server = Server(script, name)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def backend(urls, **options):
    target = ",".join(urls) + "#tiny-audio-lm"
    options.setdefault("backoff_s", 0.01)
    options.setdefault("backoff_max_s", 0.05)
    options.setdefault("timeout_s", 5)
    return OpenAIBackend(spec=f"openai:{target}", target=target, options=options)


def tone(seconds=0.25):
    t = np.arange(int(16000 * seconds)) / 16000
    return Audio((0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32))


def test_request_body_has_input_audio_and_explicit_sampling(servers, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = servers()
    model = backend([server.url]).load()
    reqs = [GenerationRequest("What is said?", tone(), system="Answer briefly."), GenerationRequest("Text only")]
    out = model.generate(reqs, DecodingParams(max_new_tokens=12, seed=3))
    assert out == ["s:What is said?", "s:Text only"]
    body = next(b for b in server.bodies if len(b["messages"]) == 2)
    assert body["model"] == "tiny-audio-lm"
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    audio_part, text_part = body["messages"][1]["content"]
    assert text_part == {"type": "text", "text": "What is said?"}
    assert audio_part["type"] == "input_audio" and audio_part["input_audio"]["format"] == "wav"
    samples, rate = sf.read(io.BytesIO(base64.b64decode(audio_part["input_audio"]["data"])), dtype="float32")
    assert rate == 16000 and len(samples) == 4000
    np.testing.assert_allclose(samples, tone().samples, atol=1e-3)
    # greedy, every sampling field explicit
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"], body["n"]) == (12, 0.0, 1.0, 3, 1)
    assert (body["top_k"], body["repetition_penalty"]) == (-1, 1.0)
    text_body = next(b for b in server.bodies if len(b["messages"]) == 1)
    assert text_body["messages"][0]["content"] == [{"type": "text", "text": "Text only"}]
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in server.headers)


def test_key_never_in_fingerprint_repr_or_errors(servers, monkeypatch):
    monkeypatch.setenv("MY_KEY", SECRET)
    server = servers(script=[(400, {}, 0.0)])
    b = backend([server.url], api_key_env="MY_KEY")
    assert SECRET not in b.fingerprint()
    model = b.load()
    assert SECRET not in repr(model) and SECRET not in repr(vars(b))
    with pytest.raises(ModelError) as err:
        model.generate([GenerationRequest("x")], DecodingParams())
    assert "HTTP 400" in str(err.value) and SECRET not in str(err.value)


def test_no_key_no_authorization_header(servers, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = servers()
    backend([server.url]).load().generate([GenerationRequest("x")], DecodingParams())
    assert "Authorization" not in server.headers[0]


def test_retries_429_and_500_with_backoff(servers):
    server = servers(script=[(429, {"Retry-After": "0"}, 0.0), (500, {}, 0.0), (503, {}, 0.0)])
    model = backend([server.url], concurrency=1).load()
    assert model.generate([GenerationRequest("hello")], DecodingParams()) == ["s:hello"]
    assert len(server.bodies) == 4


def test_gives_up_after_max_retries(servers):
    server = servers(script=[(500, {}, 0.0)] * 10)
    model = backend([server.url], max_retries=2).load()
    with pytest.raises(ModelError, match="after 3 attempts: HTTP 500"):
        model.generate([GenerationRequest("x")], DecodingParams())
    assert len(server.bodies) == 3


def test_slow_response_times_out_and_is_retried(servers):
    server = servers(script=[(200, {}, 1.0)])
    model = backend([server.url], timeout_s=0.2, concurrency=1).load()
    start = time.monotonic()
    assert model.generate([GenerationRequest("late")], DecodingParams()) == ["s:late"]
    assert time.monotonic() - start < 3.0 and len(server.bodies) == 2


def test_requests_spread_over_base_urls_in_order(servers):
    a, b = servers(name="a"), servers(name="b")
    model = backend([a.url, b.url], concurrency=4).load()
    reqs = [GenerationRequest(f"q{i}") for i in range(8)]
    out = model.generate(reqs, DecodingParams())
    assert [o.split(":", 1)[1] for o in out] == [f"q{i}" for i in range(8)]
    assert len(a.bodies) == 4 and len(b.bodies) == 4


def test_failover_to_the_other_url(servers):
    a, b = servers(script=[(503, {}, 0.0)] * 5, name="a"), servers(name="b")
    model = backend([a.url, b.url], concurrency=1).load()
    out = model.generate([GenerationRequest(f"q{i}") for i in range(3)], DecodingParams())
    assert all(o.startswith("b:") for o in out)


def test_bounded_concurrency(servers):
    server = servers(script=[(200, {}, 0.15)] * 8)
    active, peak, lock = [0], [0], threading.Lock()
    original = server.loopback.httpd.RequestHandlerClass.do_POST

    def counting(self):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            original(self)
        finally:
            with lock:
                active[0] -= 1

    server.loopback.httpd.RequestHandlerClass.do_POST = counting
    backend([server.url], concurrency=3).load().generate(
        [GenerationRequest(f"q{i}") for i in range(8)], DecodingParams()
    )
    # Counted on the server, a finished handler may not have left `counting` when the client, already
    # answered, sends its next request: one extra overlap is that handover, not a fourth client slot.
    # Unbounded, all 8 requests would be in flight at once.
    assert 2 <= peak[0] <= 4


def test_spec_parsing_and_options():
    assert parse_target("http://h:1/v1,https://g/v1/#m", {}) == (["http://h:1/v1", "https://g/v1"], "m")
    assert parse_target("http://h:1/v1", {"model": "m2"}) == (["http://h:1/v1"], "m2")
    with pytest.raises(ModelError, match="base_url"):
        parse_target("http://h:1/v1", {})
    with pytest.raises(ModelError, match="http"):
        parse_target("h:1#m", {})
    with pytest.raises(ModelError, match="unknown openai option"):
        OpenAIBackend(spec="openai:x", target="http://h/v1#m", options={"api_key": SECRET})
    fp1 = backend(["http://127.0.0.1:1/v1"]).fingerprint()
    assert fp1 == backend(["http://127.0.0.1:2/v1", "http://127.0.0.1:3/v1"]).fingerprint()
    assert fp1 != backend(["http://127.0.0.1:1/v1"], revision="2025-01").fingerprint()


def test_sampling_body_and_plain_openai_mode():
    params = DecodingParams(do_sample=True, temperature=0.8, top_p=0.9, top_k=40, repetition_penalty=1.1, seed=5)
    body = build_body("m", GenerationRequest("x"), params)
    assert (body["temperature"], body["top_p"], body["top_k"], body["repetition_penalty"], body["seed"]) == (
        0.8,
        0.9,
        40,
        1.1,
        5,
    )
    plain = build_body("m", GenerationRequest("x"), params, extended=False, extra={"max_completion_tokens": 9})
    assert "top_k" not in plain and "repetition_penalty" not in plain and plain["max_completion_tokens"] == 9


def test_a_declared_choice_goes_to_the_server_as_structured_outputs_only_when_asked():
    scores = GenerationRequest("Rate it 1-10.", answer_form=ChoiceForm(("1", "2", "10")))
    greedy = DecodingParams()
    assert "structured_outputs" not in build_body("m", scores, greedy)
    assert build_body("m", scores, greedy, structured_choice=True)["structured_outputs"] == {"choice": ["1", "2", "10"]}
    assert "structured_outputs" not in build_body("m", GenerationRequest("Tell me."), greedy, structured_choice=True)
    assert "structured_outputs" not in build_body(
        "m", GenerationRequest("x", answer_form=FieldsForm(())), greedy, structured_choice=True
    )
    url = ["http://127.0.0.1:1/v1"]
    assert (
        backend(url, structured_choice=True).fingerprint()
        != backend(url).fingerprint()
        == backend(url, structured_choice=False).fingerprint()
    )


def test_served_text_is_finished_as_transformers_and_offline_vllm_finish_it():
    from harness.models.base import finished_answer
    from harness.models.openai_backend import answer_text

    assert (
        answer_text({"choices": [{"message": {"content": " leading space kept by the server\n"}}]})
        == "leading space kept by the server"
    )
    assert finished_answer("cut at the token limit \ufffd\ufffd") == "cut at the token limit"
    assert finished_answer("an invalid byte \ufffd inside stays") == "an invalid byte \ufffd inside stays"
    assert answer_text({"choices": [{"message": {"content": [{"type": "text", "text": " parts \ufffd"}]}}]}) == "parts"


def test_the_extractors_json_form_goes_to_the_server_as_a_json_schema():
    from harness.extraction.llm import attribute_schema, extraction_form
    from harness.tasks import TASKS

    task = TASKS["candidate_review"]
    request = GenerationRequest("Extract.", answer_form=extraction_form(task))
    body = build_body("m", request, DecodingParams(), structured_choice=True)
    assert body["structured_outputs"] == {"json": attribute_schema(task)}
    assert body["structured_outputs"]["json"]["properties"]["competency"] == {
        "enum": ["Entry", "Mid", "Senior", "Refusal", None]
    }
    assert "structured_outputs" not in build_body("m", request, DecodingParams())
