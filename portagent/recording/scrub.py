"""Secret scrubbing for everything that touches disk (cassettes, traces, run records).

Two layers: known secret-bearing headers and query parameters are removed; then every string that
remains is scanned for secret patterns (OpenAI/Anthropic/Google keys, bearer tokens, the values of
the current ``*_API_KEY`` variables). A recording in which a secret survives is refused with the
place it was found — nothing is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from portagent.contracts.errors import RecordingError

SECRET_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "proxy-authorization",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-goog-user-project",
    }
)
"""Headers dropped from every recorded request and response (compared lower-case)."""

SECRET_QUERY_PARAMS: frozenset[str] = frozenset({"key", "api_key", "apikey", "access_token", "token"})
"""Query parameters dropped from recorded URLs (Gemini accepts ``?key=``)."""

SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._\-]{16,}"),
    re.compile(r"ya29\.[0-9A-Za-z_\-]{20,}"),
)
"""Values that look like credentials wherever they appear."""

ALLOWED_DUMMIES: frozenset[str] = frozenset()


def env_secret_values() -> list[str]:
    """Values of the current ``*_API_KEY`` / ``*_TOKEN`` variables worth protecting (≥ 8 chars)."""
    out = []
    for name, value in os.environ.items():
        if (name.endswith("_API_KEY") or name.endswith("_TOKEN") or name.endswith("_SECRET")) and len(
            value
        ) >= 8:
            out.append(value)
    return out


def scrub_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    kept = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in SECRET_QUERY_PARAMS
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), parts.fragment))


def scrub_headers(headers: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in headers.items() if k.lower() not in SECRET_HEADERS}


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, bytes):
        yield path, value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(k, f"{path}.<key>") if isinstance(k, str) else iter(())
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}.{i}")


def find_secret(value: Any, *, extra: list[str] | None = None, where: str = "") -> str | None:
    """The location of the first secret in ``value`` (a path like ``interactions.0.request.body``), or None."""
    literal = [s for s in (extra or []) + env_secret_values() if s]
    for path, text in _walk(value, where):
        where = path.lstrip(".") or "<root>"
        for s in literal:
            if s in text:
                return f"{where} (value of an API-key variable)"
        for pat in SECRET_PATTERNS:
            m = pat.search(text)
            if m and m.group(0) not in ALLOWED_DUMMIES:
                return f"{where} (looks like an API key or bearer token: {m.group(0)[:6]}…)"
    return None


def refuse_if_secret(value: Any, file: str, *, extra: list[str] | None = None) -> None:
    where = find_secret(value, extra=extra)
    if where is not None:
        raise RecordingError(
            f"refusing to write {file}: a secret survived scrubbing at {where}; nothing was written. "
            "Remove it from the tool output or request, or add the header to the scrub list."
        )
