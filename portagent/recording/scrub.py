"""Secret scrubbing for everything that touches disk (cassettes, traces, run records).

Two layers: known secret-bearing headers and query parameters are removed; then every string that
remains is scanned by the one secret scanner (``core/secrets.py``: the detect-secrets plugins,
portagent's own key patterns and the values of the current ``*_API_KEY``/``*_TOKEN`` variables).
A recording in which a secret survives is refused with the place it was found — nothing is written.
(``run`` and ``eval`` mask instead: the same scanner, ``secrets.mask_text``.)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from portagent.contracts.errors import RecordingError
from portagent.core import secrets

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

find_secret = secrets.find_secret
"""The location of the first secret in a value, or None (``core/secrets.py``)."""


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


def refuse_if_secret(value: Any, file: str, *, extra: list[str] | None = None) -> None:
    where = find_secret(value, extra=extra)
    if where is not None:
        raise RecordingError(
            f"refusing to write {file}: a secret survived scrubbing at {where}; nothing was written. "
            "Remove it from the tool output or request (or scrub its header)"
        )
