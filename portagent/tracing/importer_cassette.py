"""Reading a foreign vcrpy cassette into plain interactions (for ``portagent trace import``).

A vcrpy cassette (format ``version: 1``) is ``{interactions: [{request: {method, uri, body, headers},
response: {status: {code, message}, headers, body: {string}}}], version: 1}``. Bodies come in
every form found in the wild:

- plain text (``body: '{"model": …}'``);
- bytes as ``!!binary`` (base64), gzip- or deflate-compressed when ``content-encoding`` says so
  (vcrpy stores what was on the wire unless ``decode_compressed_response`` was set; the gzip magic
  number is honoured even when the header was filtered out);
- pydantic-ai's serializer (``tests/json_body_serializer.py``): a JSON body moved to ``parsed_body``
  as YAML data, on the request *and* on the response (beside ``status``, no ``body``);
- vcrpy's ``json`` serializer (the same structure as JSON).

YAML is loaded with a *safe* loader: ``!!binary`` is standard; the Python-2-era ``!!python/unicode``
and ``!!python/str`` tags are read as strings, and any other tag is read as plain data (never as a
Python object). Problems raise :class:`RecordingError` naming the file (and the interaction).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from portagent.contracts.errors import RecordingError, UsageError

CASSETTE_VERSION = 1
"""The vcrpy cassette format version this reader understands (vcrpy ≥ 1.0 writes 1)."""


@dataclass(frozen=True)
class Interaction:
    """One recorded request/response pair with decoded bodies."""

    index: int
    """Position in the cassette, from 0."""
    method: str
    """HTTP method, upper case."""
    uri: str
    """Full request URI."""
    request_headers: Mapping[str, str]
    """Request headers, lower-case names, values joined with ``, ``."""
    request_body: Any
    """Decoded request body: text, already-parsed JSON (``parsed_body``), or None."""
    status: int
    """HTTP status code."""
    response_headers: Mapping[str, str]
    """Response headers, lower-case names."""
    response_body: Any
    """Decoded response body: text or already-parsed JSON."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Facts about the stored form (``gzip``, ``parsed_body``) for provider_details."""


def _as_str(loader: Any, node: yaml.Node) -> Any:
    return loader.construct_scalar(node)


def _plain(loader: Any, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


def _safe_loader() -> type[Any]:
    """A SafeLoader subclass (the C one when libyaml is there) reading stray tags as plain data."""
    base: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader: type[Any] = type("CassetteLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:python/unicode", _as_str)
    loader.add_constructor("tag:yaml.org,2002:python/str", _as_str)
    loader.add_constructor("tag:yaml.org,2002:python/bytes", yaml.SafeLoader.construct_yaml_binary)
    loader.add_constructor(None, _plain)  # any other tag: plain data, never a Python object
    return loader


_LOADER = _safe_loader()


def _headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        values = value if isinstance(value, list) else [value]
        out[str(name).lower()] = ", ".join(str(v) for v in values)
    return out


def _decode(raw: Any, headers: Mapping[str, str], where: str, extra: dict[str, Any]) -> Any:
    """Bytes → text, undoing gzip/deflate; text and parsed JSON pass through."""
    if raw is None or isinstance(raw, Mapping | list):
        return raw
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, bytes | bytearray):
        raise RecordingError(f"{where}: body of type {type(raw).__name__} is not text or bytes")
    data = bytes(raw)
    encoding = headers.get("content-encoding", "").lower()
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
            extra["body_encoding"] = "gzip"
        elif encoding == "deflate":
            data = zlib.decompress(data)
            extra["body_encoding"] = "deflate"
        elif encoding and encoding not in ("identity", "gzip"):
            raise RecordingError(
                f"{where}: body is {encoding}-encoded; only gzip and deflate are supported "
                "(re-record with vcrpy's decode_compressed_response=True)"
            )
    except (OSError, EOFError, zlib.error) as e:
        raise RecordingError(f"{where}: compressed body cannot be decompressed ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RecordingError(f"{where}: body is neither UTF-8 text nor gzip/deflate") from None


def _load(path: Path, text: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("{") or path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as e:
            if path.suffix.lower() == ".json":
                raise RecordingError(f"{path}: not a valid JSON cassette: {e}") from None
    try:
        return yaml.load(text, Loader=_LOADER)  # a SafeLoader subclass: never builds Python objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise RecordingError(f"{where}: not valid YAML ({e.problem}); is the cassette truncated?") from None
    except yaml.YAMLError as e:
        raise RecordingError(f"{path}: not valid YAML ({e})") from None


def read_cassette(path: str | Path) -> tuple[list[Interaction], bytes]:
    """The interactions of a vcrpy cassette, and the file's bytes (for a content hash)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such cassette file")
    if not p.is_file():
        raise UsageError(f"{path}: not a file")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RecordingError(f"{path}: not a cassette (not UTF-8 text)") from None
    data = _load(p, text)
    if isinstance(data, list) and data and isinstance(data[0], Mapping) and "request" in data[0]:
        raise RecordingError(
            f"{path}: a cassette in vcrpy's pre-1.0 format (a bare list); "
            "vcrpy itself refuses it — re-record or migrate it"
        )
    if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
        raise RecordingError(f"{path}: not a vcrpy cassette (expected a mapping with an 'interactions' list)")
    if "version" not in data:  # vcrpy writes it after the interactions: a file cut short lost it
        raise RecordingError(
            f"{path}: no 'version' (vcrpy writes version {CASSETTE_VERSION} at the end); is the cassette truncated?"
        )
    version = data["version"]
    if version != CASSETTE_VERSION:
        raise RecordingError(
            f"{path}: cassette format version {version!r} is not supported "
            f"(vcrpy writes version {CASSETTE_VERSION})"
        )
    out = [_interaction(p, i, entry) for i, entry in enumerate(data["interactions"])]
    return out, raw


def _interaction(path: Path, index: int, entry: Any) -> Interaction:
    where = f"{path}: interaction {index}"
    if (
        not isinstance(entry, Mapping)
        or not isinstance(entry.get("request"), Mapping)
        or not isinstance(entry.get("response"), Mapping)
    ):
        raise RecordingError(f"{where}: needs a 'request' and a 'response' mapping")
    req, resp = entry["request"], entry["response"]
    if not isinstance(req.get("uri"), str) or not req.get("uri"):
        raise RecordingError(f"{where}: request has no 'uri'")
    extra: dict[str, Any] = {}
    req_headers = _headers(req.get("headers"))
    if "parsed_body" in req:
        req_body: Any = req["parsed_body"]
        extra["parsed_body"] = True
    else:
        req_body = _decode(req.get("body"), req_headers, f"{where} request", {})
    resp_headers = _headers(resp.get("headers"))
    if "parsed_body" in resp:
        resp_body: Any = resp["parsed_body"]
        extra["parsed_body"] = True
    else:
        body = resp.get("body")
        if isinstance(body, Mapping) and "string" in body:
            body = body["string"]
        elif body is None and "content" in resp:  # vcrpy < 5 httpx stubs stored ``content``
            body = resp["content"]
        resp_body = _decode(body, resp_headers, f"{where} response", extra)
    status = resp.get("status", resp.get("status_code"))
    code = status.get("code") if isinstance(status, Mapping) else status
    if code is None:  # every recorder writes one: a response without it was cut off
        raise RecordingError(f"{where}: response has no status code; is the cassette truncated?")
    try:
        code = int(code)
    except (TypeError, ValueError):
        raise RecordingError(f"{where}: response status {code!r} is not a number") from None
    return Interaction(
        index,
        str(req.get("method") or "GET").upper(),
        req["uri"],
        req_headers,
        req_body,
        code,
        resp_headers,
        resp_body,
        extra,
    )
