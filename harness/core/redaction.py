"""Secrets never reach an output: API keys and bearer tokens in any text are replaced before it is written or shown."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

REDACTED = "[REDACTED]"


_SECRET_PATTERNS = (
    # "Authorization: Bearer <token>", "'Authorization': 'Basic <token>'", JSON or header form
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?[^\s\"',;}]+"),
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]+"),
    # api-key / api_key / x-api-key headers and fields
    re.compile(r"(?i)((?:x-)?api[-_ ]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"),
    # OpenAI-style secret keys: sk-..., sk-proj-..., sess-...
    re.compile(r"\b((?:sk|sess|rk|pk)-)[A-Za-z0-9_\-]{8,}"),
)


def redact(text: Any, secrets: Sequence[str | None] = ()) -> str:
    """``str(text)`` with credentials replaced by ``[REDACTED]``: every non-empty value of ``secrets`` (e.g. the
    API key itself, however the server echoed it, and its first 6+ characters at the very end, where a body was cut
    short), then ``Authorization: <scheme> <token>``, ``Bearer <token>``,
    ``api-key``/``x-api-key``/``api_key`` headers or fields, and ``sk-``/``sess-``-like tokens (8+ characters
    after the prefix). Redacting twice changes nothing."""
    out = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(secret, REDACTED)
        for k in range(len(secret) - 1, 5, -1):  # a body cut short inside the key: its leading 6+ characters
            if out.endswith(secret[:k]):
                out = out[:-k] + REDACTED
                break
    for pattern in _SECRET_PATTERNS:
        out = pattern.sub(_redaction, out)
    return out


def _redaction(match: re.Match) -> str:
    prefix = match.group(1) or ""
    scheme = match.group(2) if (match.re.groups >= 2 and match.group(2)) else ""
    token = match.group(0)[len(prefix) :]
    if token.strip() == REDACTED or token.endswith(REDACTED):
        return match.group(0)
    return f"{prefix}{scheme + ' ' if scheme else ''}{REDACTED}"
