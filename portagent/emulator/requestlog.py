"""The request log: every request the emulator received, parsed, with secrets masked.

Masking (DESIGN §6 lists the same secrets for cassettes): the values of ``authorization``,
``proxy-authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``, ``cookie``, the OpenAI
``openai-organization`` / ``openai-project`` headers (and their Anthropic/Google kin) and the query
parameters ``key`` / ``api_key`` / ``access_token`` are replaced by ``<masked>``; an auth scheme is
kept (``Bearer <masked>``), and an empty value stays empty. So a test can prove that a key was
sent, and in which header, without the log ever holding it. Then every other value of the entry
(other headers, the body) goes through the one secret scanner (``core/secrets.py``): a key-like
value anywhere reads ``[REDACTED:<kind>]``, in memory and in the JSONL file alike.

Entries are appended *before* the response is written, so a client that has its answer always finds
its request in the log.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from portagent.core.secrets import mask_data, mask_text

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-goog-user-project",
    }
)
SECRET_QUERY = frozenset({"key", "api_key", "access_token"})
MASK = "<masked>"


def mask_header(name: str, value: str) -> str:
    if name.lower() not in SECRET_HEADERS or not value:
        return value
    if name.lower() in ("authorization", "proxy-authorization"):
        scheme, sep, rest = value.partition(" ")
        if sep and rest:
            return f"{scheme} {MASK}"
    return MASK


def mask_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): mask_header(k, v) for k, v in headers.items()}


CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
"""Where the vendors' clients put their API key (OpenAI: ``Authorization: Bearer``; Anthropic: ``x-api-key``;
Gemini: ``x-goog-api-key`` or the ``key`` query parameter; Azure-style: ``api-key``)."""


def credential(headers: Mapping[str, str], query: Mapping[str, list[str]]) -> str | None:
    """A fingerprint of the API key a request carried (``sha256:`` + 12 hex digits of the key), so a test
    can tell which key reached which vendor without the log holding the key; None when it carried none."""
    import hashlib

    low = {k.lower(): v for k, v in headers.items()}
    for name in CREDENTIAL_HEADERS:
        value = low.get(name, "")
        if name == "authorization":
            scheme, _, value = value.partition(" ")
            value = value if scheme.lower() == "bearer" else ""
        if value:
            return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:12]
    keys = query.get("key") or []
    return "sha256:" + hashlib.sha256(keys[0].encode("utf-8")).hexdigest()[:12] if keys and keys[0] else None


def mask_query(query: Mapping[str, list[str]]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for key, values in query.items():
        shown = [MASK if key in SECRET_QUERY and v else v for v in values]
        out[key] = shown[0] if len(shown) == 1 else shown
    return out


class RequestLog:
    """In-memory list plus an optional JSONL file; thread-safe.

    ``keep`` bounds the in-memory list (the oldest entries are dropped; the JSONL file keeps all),
    so a long-running ``portagent emulate`` does not grow without limit.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, keep: int | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: deque[dict[str, Any]] = deque(maxlen=keep)
        self._path = Path(path) if path is not None else None
        self._file = self._path.open("a", encoding="utf-8") if self._path is not None else None

    @property
    def path(self) -> Path | None:
        return self._path

    def append(self, entry: dict[str, Any]) -> None:
        entry = mask_data(entry)
        line = json.dumps(entry, ensure_ascii=False, default=str) if self._file else None
        if line is not None:
            line = mask_text(line)  # values json turned into text (``default=str``), too
        with self._lock:
            self._entries.append(entry)
            if self._file is not None and line is not None:
                self._file.write(line + "\n")
                self._file.flush()

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a request log written by another process (complete lines only)."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # a line still being written
    return out
