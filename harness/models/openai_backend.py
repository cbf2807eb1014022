"""``openai:<base_url>[,<base_url>...]#<model>``: any OpenAI-compatible chat-completions server.

Audio goes as an ``input_audio`` content part (base64 WAV), text as a ``text`` part; the system text,
if any, as a system message. Works with vLLM / SGLang ``serve`` and audio-capable hosted APIs.

Several base URLs (comma-separated) spread requests round-robin, and a retried request moves to the
next URL. Stdlib HTTP only (``urllib``); requests run in a bounded thread pool.

Options:

=======================  =======================================================================
``api_key_env``          environment variable holding the API key (default ``OPENAI_API_KEY``);
                         read at load time, sent only as the ``Authorization`` header, never
                         stored in the fingerprint, the cache, reports or error messages (server
                         error bodies and exception texts pass :func:`harness.core.redact`: the
                         key, ``Bearer``/``Authorization``/``api-key`` values and ``sk-`` tokens)
``concurrency``          requests in flight (default 8)
``timeout_s``            per-request timeout (default 120)
``max_retries``          retries on 429 / 5xx / connection errors / timeouts (default 5)
``backoff_s``            first backoff (default 1.0), doubled per retry, capped by ``backoff_max_s``
                         (default 30); a ``Retry-After`` header is honoured within the cap
``extended_sampling``    also send ``top_k`` and ``repetition_penalty`` (default true: vLLM and
                         SGLang accept them and would otherwise apply the model's own defaults;
                         set false for APIs that reject unknown fields)
``extra_body``           dict merged into every request body (server-specific fields)
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

from harness.core import Audio, DecodingParams, GenerationRequest, ModelError, redact
from harness.models.base import Backend, finished_answer, validated_options
from harness.models.fingerprint import model_fingerprint
from harness.models.progress import Progress

KNOWN_OPTIONS = {
    "api_key_env", "concurrency", "timeout_s", "max_retries", "backoff_s", "backoff_max_s",
    "extended_sampling", "extra_body", "revision", "model",
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
            raise ModelError(f"openai base URL {url!r} must start with http:// or https://")
    return urls, model


def wav_bytes(audio: Audio) -> bytes:
    """16-bit PCM WAV of the audio (the format every input_audio implementation accepts)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(audio.samples, dtype=np.float32), -1.0, 1.0), audio.sample_rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def build_body(model: str, request: GenerationRequest, params: DecodingParams, *, extended: bool = True,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
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

    def fingerprint(self) -> str:
        behaviour = {
            "model": self.model,
            "extended_sampling": bool(self.options.get("extended_sampling", True)),
            "extra_body": self.options.get("extra_body") or {},
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
        )


class OpenAIModel:
    def __init__(self, *, spec: str, urls: Sequence[str], model: str, api_key: str | None, concurrency: int = 8,
                 timeout_s: float = 120.0, max_retries: int = 5, backoff_s: float = 1.0, backoff_max_s: float = 30.0,
                 extended_sampling: bool = True, extra_body: Mapping[str, Any] | None = None,
                 sleep=time.sleep) -> None:  # fmt: skip
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
        self._sleep = sleep
        self._rr = itertools.count()
        self._lock = threading.Lock()

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
        for attempt in range(self.max_retries + 1):
            url = self.urls[(start + attempt) % len(self.urls)] + "/chat/completions"
            req = urllib.request.Request(url, data=data, headers=self._headers(), method="POST")
            retry_after = None
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                try:
                    return answer_text(payload)
                except ModelError as error:  # its excerpt of the payload may echo the key
                    message = redact(error, [self._api_key])
                del payload  # a traceback that shows locals (pytest -l) must not show the echoed key either
                raise ModelError(message) from None
            except urllib.error.HTTPError as exc:
                # redacted before it is cut short or kept in any variable (a traceback with locals shows them)
                detail = redact(exc.read(8192).decode("utf-8", "replace"), [self._api_key]) if exc.fp is not None else ""
                last_error = f"HTTP {exc.code} from {url}: {detail[:300]}"
                if exc.code not in RETRY_STATUS:
                    raise ModelError(f"{self.spec}: request {index} failed: {last_error}") from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last_error = redact(f"{type(exc).__name__} from {url}: {reason}", [self._api_key])
            except ValueError as exc:  # malformed JSON
                last_error = redact(f"bad response from {url}: {exc}", [self._api_key])
            if attempt < self.max_retries:
                self._sleep(self._delay(attempt, retry_after))
        raise ModelError(f"{self.spec}: request {index} failed after {self.max_retries + 1} attempts: {last_error}")

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        bodies = [
            build_body(self.model, r, params, extended=self.extended_sampling, extra=self.extra_body) for r in requests
        ]
        results: list[str] = [""] * len(bodies)
        with Progress(len(bodies), f"{self.spec} generate") as bar, ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._post, i, body): i for i, body in enumerate(bodies)}
            try:
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        return results
