"""``openai:<base_url>[,<base_url>...]#<model>``: any OpenAI-compatible chat-completions server.

Audio goes as an ``input_audio`` content part (base64 WAV), text as a ``text`` part; the system text,
if any, as a system message. Works with vLLM / SGLang ``serve`` and audio-capable hosted APIs.

Several base URLs (comma-separated) spread requests round-robin, and a retried request moves to the
next URL. Stdlib HTTP only (``urllib``); requests run in a bounded thread pool. A batch runs every
request even when some fail: the answers it got travel with the error (:class:`~harness.core.errors.PartialGenerationError`),
so the caller can keep them.

Options:

=======================  =======================================================================
``api_key_env``          environment variable holding the API key (default ``OPENAI_API_KEY``);
                         read at load time, sent only as the ``Authorization`` header, never
                         stored in the fingerprint, the cache, reports or error messages (server
                         error bodies and exception texts pass :func:`harness.core.redaction.redact`: the
                         key, ``Bearer``/``Authorization``/``api-key`` values and ``sk-`` tokens)
``concurrency``          requests in flight (default 8)
``timeout_s``            timeout of the connection and of each read of a request (default 120)
``max_retries``          retries on 429 / 5xx / connection errors / timeouts / bad JSON (default 5)
``backoff_s``            first backoff (default 1.0), doubled per retry, capped by ``backoff_max_s``
                         (default 30); a ``Retry-After`` header is honoured within the cap
``breaker_failures``     circuit breaker: after this many consecutive failed attempts with no success
                         in between (default 12) ...
``breaker_s``            ... or after failed attempts for this many seconds with no success (default
                         120), the server is not called again in this session: every request still
                         waiting fails at once with the breaker's one message (see :class:`CircuitBreaker`)
``extended_sampling``    also send ``top_k`` and ``repetition_penalty`` (default true: vLLM and
                         SGLang accept them and would otherwise apply the model's own defaults;
                         set false for APIs that reject unknown fields)
``extra_body``           dict merged into every request body (server-specific fields)
``structured_choice``    send a request's declared choice form (:class:`~harness.core.answers.ChoiceForm`: a
                         score, a letter, a label) as vLLM's ``structured_outputs: {"choice": [...]}``,
                         so the server answers exactly one option, greedily, as the in-process
                         ``smollm2:`` backend's ``fields`` format does, and a declared JSON form (the VIBE
                         extractor's, :class:`~harness.core.answers.JsonForm`) as ``structured_outputs:
                         {"json": <its schema>}`` (default false: servers that do not know the field reject
                         it; other forms are always answered freely)
``revision``             a label for the served weights: the server is opaque, so the fingerprint
                         is the model name plus this (bump it when the server's model changes)
``model``                the model name when the spec has no ``#model`` part
=======================  =======================================================================
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np

from harness.core.answers import ChoiceForm, JsonForm
from harness.core.errors import ModelError, PartialGenerationError, ServerError
from harness.core.progress import Progress
from harness.core.redaction import redact
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.models.base import Backend, finished_answer, validated_options
from harness.models.fingerprint import model_fingerprint

KNOWN_OPTIONS = {
    "api_key_env", "concurrency", "timeout_s", "max_retries", "backoff_s", "backoff_max_s",
    "extended_sampling", "extra_body", "revision", "model", "breaker_failures", "breaker_s", "structured_choice", "checkpoint",
}  # fmt: skip
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def parse_target(target: str, options: Mapping[str, Any]) -> tuple[list[str], str]:
    """``url1,url2#model`` -> ([url1, url2], model)."""
    urls_part, sep, model = target.rpartition("#")
    if not sep:
        urls_part, model = target, str(options.get("model") or "")
    urls = [u.strip().rstrip("/") for u in urls_part.split(",") if u.strip()]
    if not urls or not model:
        raise ModelError(
            f"openai spec target {target!r} must be '<base_url>[,<base_url>...]#<model>' (or give `model:`)"
        )
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ModelError(f"openai base URL {url!r} must start with http:// or https://", source=url)
    return urls, model


class CircuitBreaker:
    """Stops calling a server that keeps failing.

    It opens when the current streak of failed attempts (no success since the streak began) reaches
    ``failures`` attempts, or when a failure that extends the streak comes ``seconds`` or more after both the
    last success and the sending of the streak's earliest attempt (a hanging server: every attempt ends in
    a timeout, and nothing succeeds meanwhile). A success ends the streak.
    Once open it stays open for the session, and :meth:`check` raises one :class:`ServerError` with the
    same message for every later request.
    """

    def __init__(
        self, spec: str, source: str, failures: int = 12, seconds: float = 120.0, clock=time.monotonic
    ) -> None:
        if failures < 1 or seconds <= 0:
            raise ModelError(f"{spec}: breaker_failures must be >= 1 and breaker_s > 0", source=spec)
        self.spec, self.source, self.failures, self.seconds, self._clock = spec, source, failures, seconds, clock
        self._lock = threading.Lock()
        self._streak = 0
        self._streak_since: float | None = None
        self._last_success = float("-inf")
        self.opened: str | None = None

    def check(self) -> None:
        if self.opened is not None:
            raise ServerError(self.opened, source=self.source)

    def success(self) -> None:
        with self._lock:
            self._streak, self._streak_since, self._last_success = 0, None, self._clock()

    def failure(self, attempt_started: float, error: str) -> None:
        with self._lock:
            self._streak += 1
            self._streak_since = (
                attempt_started if self._streak_since is None else min(self._streak_since, attempt_started)
            )
            failing_for = self._clock() - max(self._streak_since, self._last_success)
            if self.opened is None and (self._streak >= self.failures or failing_for >= self.seconds):
                self.opened = (
                    f"{self.spec}: server {self.source} not called again in this session after {self._streak} failed "
                    f"attempt(s) in {failing_for:.0f} s with no success; the last: {error}"
                )


def wav_bytes(audio: Audio) -> bytes:
    """16-bit PCM WAV of the audio (the format every input_audio implementation accepts)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(
        buf,
        np.clip(np.asarray(audio.samples, dtype=np.float32), -1.0, 1.0),
        audio.sample_rate,
        format="WAV",
        subtype="PCM_16",
    )
    return buf.getvalue()


def build_body(model: str, request: GenerationRequest, params: DecodingParams, *, extended: bool = True,
               extra: Mapping[str, Any] | None = None, structured_choice: bool = False) -> dict[str, Any]:  # fmt: skip
    messages: list[dict[str, Any]] = []
    if request.system is not None:
        messages.append({"role": "system", "content": request.system})
    content: list[dict[str, Any]] = []
    if request.audio is not None:
        data = base64.b64encode(wav_bytes(request.audio)).decode("ascii")
        content.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
    content.append({"type": "text", "text": request.prompt})
    messages.append({"role": "user", "content": content})
    sampling = bool(params.do_sample)
    if sampling and params.temperature <= 0:
        raise ModelError("do_sample=True needs temperature > 0 (temperature 0 means greedy)")
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": int(params.max_new_tokens),
        "temperature": float(params.temperature) if sampling else 0.0,
        "top_p": float(params.top_p) if sampling else 1.0,
        "seed": int(params.seed),
        "n": 1,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "stream": False,
    }
    if extended:
        body["top_k"] = int(params.top_k) if sampling and params.top_k > 0 else -1
        body["repetition_penalty"] = float(params.repetition_penalty)
    if structured_choice and isinstance(request.answer_form, ChoiceForm):
        body["structured_outputs"] = {"choice": list(request.answer_form.options)}
    elif structured_choice and isinstance(request.answer_form, JsonForm) and request.answer_form.schema:
        body["structured_outputs"] = {"json": json.loads(request.answer_form.schema)}
    body.update(dict(extra or {}))
    return body


def answer_text(payload: Mapping[str, Any]) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelError(f"openai: response has no choices[0].message.content ({redact(str(payload)[:200])})") from exc
    if content is None:
        return ""
    if isinstance(content, list):  # content parts
        return finished_answer("".join(p.get("text", "") for p in content if isinstance(p, Mapping)))
    return finished_answer(str(content))


class OpenAIBackend(Backend):
    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        self.options = validated_options(spec, "openai", options, KNOWN_OPTIONS)
        self.urls, self.model = parse_target(target, self.options)
        checkpoint = self.options.get("checkpoint")
        if checkpoint is not None and not os.path.isdir(os.path.expanduser(str(checkpoint))):
            raise ModelError(f"{spec}: option checkpoint {checkpoint} is not a folder", source=spec)
        for key, least in (("concurrency", 1), ("breaker_failures", 1), ("timeout_s", 1e-9), ("breaker_s", 1e-9)):
            value = self.options.get(key, least)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < least:
                raise ModelError(
                    f"{spec}: option {key} must be a number {'>= 1' if least == 1 else '> 0'}, got {value!r}",
                    source=spec,
                )

    def semantic_source(self) -> Backend | None:
        """The served model's own embeddings, through transformers, where its weights are a local folder: the
        ``checkpoint`` option, or a served model name that is one (vLLM serves a local path under its own name)."""
        path = os.path.expanduser(str(self.options.get("checkpoint") or self.model))
        from harness.models.hf import local_semantic_source

        return local_semantic_source(path, {}) if os.path.isdir(path) else None

    def fingerprint(self) -> str:
        behaviour = {
            "model": self.model,
            "extended_sampling": bool(self.options.get("extended_sampling", True)),
            "extra_body": self.options.get("extra_body") or {},
            **({"structured_choice": True} if self.options.get("structured_choice") else {}),
        }
        identity = {"kind": "remote", "model": self.model, "revision": self.options.get("revision")}
        return model_fingerprint("openai", self.model, options=behaviour, identity=identity)

    def load(self) -> OpenAIModel:
        env_name = str(self.options.get("api_key_env", "OPENAI_API_KEY"))
        return OpenAIModel(
            spec=self.spec,
            urls=self.urls,
            model=self.model,
            api_key=os.environ.get(env_name) or None,
            concurrency=int(self.options.get("concurrency", 8)),
            timeout_s=float(self.options.get("timeout_s", 120.0)),
            max_retries=int(self.options.get("max_retries", 5)),
            backoff_s=float(self.options.get("backoff_s", 1.0)),
            backoff_max_s=float(self.options.get("backoff_max_s", 30.0)),
            extended_sampling=bool(self.options.get("extended_sampling", True)),
            extra_body=self.options.get("extra_body") or {},
            structured_choice=bool(self.options.get("structured_choice", False)),
            breaker_failures=int(self.options.get("breaker_failures", 12)),
            breaker_s=float(self.options.get("breaker_s", 120.0)),
        )


class OpenAIModel:
    def __init__(self, *, spec: str, urls: Sequence[str], model: str, api_key: str | None, concurrency: int = 8,
                 timeout_s: float = 120.0, max_retries: int = 5, backoff_s: float = 1.0, backoff_max_s: float = 30.0,
                 extended_sampling: bool = True, extra_body: Mapping[str, Any] | None = None, structured_choice: bool = False,
                 breaker_failures: int = 12, breaker_s: float = 120.0, sleep=time.sleep) -> None:  # fmt: skip
        if concurrency < 1:
            raise ModelError(f"{spec}: concurrency must be >= 1")
        self.spec = spec
        self.urls = list(urls)
        self.model = model
        self._api_key = api_key  # never logged, never part of any message
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.extended_sampling = extended_sampling
        self.extra_body = dict(extra_body or {})
        self.structured_choice = structured_choice
        self._sleep = sleep
        self._rr = itertools.count()
        self._lock = threading.Lock()
        self.breaker = CircuitBreaker(spec, ",".join(self.urls), breaker_failures, breaker_s)

    def __repr__(self) -> str:  # no key in reprs
        return f"OpenAIModel(spec={self.spec!r}, urls={self.urls!r}, model={self.model!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.backoff_max_s, self.backoff_s * (2**attempt))
        if retry_after:
            try:
                delay = min(self.backoff_max_s, max(delay, float(retry_after)))
            except ValueError:
                pass
        return delay * (0.75 + 0.5 * random.random())

    def _post(self, index: int, body: Mapping[str, Any]) -> str:
        data = json.dumps(body).encode("utf-8")
        start = next(self._rr) if len(self.urls) > 1 else 0
        last_error = "no attempt"
        source = ",".join(self.urls)
        for attempt in range(self.max_retries + 1):
            self.breaker.check()
            url = self.urls[(start + attempt) % len(self.urls)] + "/chat/completions"
            req = urllib.request.Request(url, data=data, headers=self._headers(), method="POST")
            retry_after = None
            started = time.monotonic()
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                try:
                    answer = answer_text(payload)
                    self.breaker.success()
                    return answer
                except ModelError as error:  # its excerpt of the payload may echo the key
                    message = redact(error, [self._api_key])
                del payload  # a traceback that shows locals (pytest -l) must not show the echoed key either
                self.breaker.failure(started, message)
                raise ServerError(f"{message} (from {url})", source=source) from None
            except urllib.error.HTTPError as exc:
                # redacted before it is cut short or kept in any variable (a traceback with locals shows them)
                detail = (
                    redact(exc.read(8192).decode("utf-8", "replace"), [self._api_key]) if exc.fp is not None else ""
                )
                last_error = f"HTTP {exc.code} from {url}: {' '.join(detail[:300].split())}"
                self.breaker.failure(started, last_error)
                if exc.code not in RETRY_STATUS:
                    raise ServerError(f"{self.spec}: request {index} failed: {last_error}", source=source) from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last_error = redact(f"{type(exc).__name__} from {url}: {reason}", [self._api_key])
                self.breaker.failure(started, last_error)
            except ValueError as exc:  # malformed JSON
                last_error = redact(f"bad response from {url}: {exc}", [self._api_key])
                self.breaker.failure(started, last_error)
            if attempt < self.max_retries:
                self._sleep(self._delay(attempt, retry_after))
        raise ServerError(
            f"{self.spec}: request {index} failed after {self.max_retries + 1} attempts: {last_error}", source=source
        )

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        self.breaker.check()
        bodies = [
            build_body(
                self.model,
                r,
                params,
                extended=self.extended_sampling,
                extra=self.extra_body,
                structured_choice=self.structured_choice,
            )
            for r in requests
        ]
        results: dict[int, str] = {}
        errors: dict[int, ModelError] = {}
        with Progress(len(bodies), f"{self.spec} generate") as bar, ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._post, i, body): i for i, body in enumerate(bodies)}
            try:
                for future in as_completed(futures):
                    try:
                        results[futures[future]] = future.result()
                    except ModelError as error:
                        errors[futures[future]] = error
                    bar.update()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        if errors:
            first = errors[min(errors)]
            message = f"{first} ({len(errors)} of {len(bodies)} requests of the batch failed)"
            raise PartialGenerationError(self.breaker.opened or message, results, source=first.source)
        return [results[index] for index in range(len(bodies))]
