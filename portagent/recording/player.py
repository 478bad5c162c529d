"""A transport-level player for vcrpy cassettes (replay only: openai, adk, anthropic, langgraph).

vcrpy, per replayed run, parses the YAML cassette, patches every HTTP library it knows (probing the
optional ones), and compares each request with every recorded one through its matcher chain. The
player answers the SDK's HTTP client *in process* instead, from its transport:

- the cassette file stays vcrpy's YAML (same loader, same persister errors); it is parsed once per
  process and file version (path, mtime, size);
- each recorded request is reduced once to a key (method, path, query and the normalized body: the
  same comparison as ``vcr_cassette``'s matchers), so a request is matched by one dict lookup;
- ordered, single-use playback, as ``make_vcr`` configures vcrpy (``allow_playback_repeats`` off);
- nothing else reaches the network while it plays (``offline.py``: vcrpy's patches used to guarantee
  that for every HTTP library, the player answers only the SDK's client);
- on a mismatch the player builds vcrpy's own cassette from the parsed interactions, with the same
  play counts, and raises vcrpy's ``CannotOverwriteExistingCassetteException``: the runner's drift
  report (``find_mismatch`` / ``describe_mismatch``) is the one vcrpy would have produced.

An adapter opts in by passing ``transport_kwargs(flavour)`` (``active_transport``'s transport, when there
is one) to its HTTP
client; the runner only uses the player for providers whose adapter does (``PLAYER_PROVIDERS``), and
uses vcrpy for everything else (recording, other providers).
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from portagent.contracts.errors import RecordingError
from portagent.recording.offline import offline
from portagent.recording.vcr_cassette import (
    CASSETTE_FILE,
    CassetteReport,
    _before_record_request,
    _normalized_text,
)

PLAYER_PROVIDERS = frozenset({"openai", "adk", "anthropic", "langgraph"})
"""Providers whose adapter builds its HTTP client with ``transport_kwargs`` (langgraph: for its OpenAI and
Anthropic chat models; a bundle with a Gemini one replays under vcrpy, ``replays_in_process``)."""

_ACTIVE: contextvars.ContextVar[CassettePlayer | None] = contextvars.ContextVar(
    "portagent_cassette_player", default=None
)
_CACHE: dict[str, tuple[tuple[int, ...], _Parsed]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 256

Key = tuple[str, str, Any, str | None]


class _Parsed:
    """One cassette file, parsed: vcrpy requests and responses, and each request's match key."""

    def __init__(self, requests: list[Any], responses: list[Any], match_body: bool) -> None:
        self.requests = requests
        self.responses = responses
        self.by_key: dict[Key, list[int]] = {}
        for i, r in enumerate(requests):
            self.by_key.setdefault(_key(r, match_body), []).append(i)


def _key(request: Any, match_body: bool) -> Key:
    body = request.body
    text = None if not match_body else ("\0none" if body is None else _normalized_text(body))
    return (request.method.upper(), request.path, tuple(request.query), text)


def _load(path: Path, match_body: bool) -> _Parsed:
    from vcr.persisters.filesystem import CassetteNotFoundError
    from vcr.serializers import yamlserializer

    from portagent.recording.vcr_cassette import _ScanningPersister

    try:
        st = path.stat()
    except OSError as e:
        raise RecordingError(f"{path}: cassette not found") from e
    version = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size)  # a rewrite in one tick too
    cache_key = f"{path.resolve()}|{int(match_body)}"
    with _CACHE_LOCK:
        hit = _CACHE.get(cache_key)
    if hit is not None and hit[0] == version:
        return hit[1]
    if not path.is_file():
        raise RecordingError(f"{path}: not a cassette file (a folder is in its place); re-record it")
    try:
        requests, responses, *_ = _ScanningPersister.load_cassette(str(path), yamlserializer)
    except CassetteNotFoundError as e:  # vcrpy reads an empty file as no cassette: it was emptied
        raise RecordingError(f"{path}: empty cassette (truncated or emptied by hand); re-record it") from e
    _check_version(path)
    _check_bodies(path, responses)
    parsed = _Parsed(list(requests), list(responses), match_body)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[cache_key] = (version, parsed)
    return parsed


_VERSION = re.compile(r"^version:[ \t]*['\"]?([^'\"\s#]+)", re.M)


def _check_version(path: Path) -> None:
    """vcrpy writes ``version: 1`` and reads any number without a word: a cassette of another format
    version would play as if it were this one. Refused, naming it (the top-level key of the file)."""
    found = _VERSION.findall(path.read_text(encoding="utf-8", errors="replace"))
    if found and found[-1] != "1":
        raise RecordingError(
            f"{path}: cassette format version {found[-1]} (this portagent reads vcrpy's version 1); "
            "re-record it"
        )


def _check_bodies(path: Path, responses: list[Any]) -> None:
    """Refuse a cassette whose recorded answer is not what its content type says: a JSON body, or an
    event stream's ``data:`` lines, that do not parse were cut or edited by hand. Played back, the SDK
    failed on it (``JSONDecodeError``, exit 3: a CI job retries what a broken file never mends, and an
    eval blamed the agent for the tools it then never called); a ``RecordingError`` names the file and
    the interaction (exit 1). Compressed or binary bodies are left to the SDK."""
    import json

    for n, response in enumerate(responses, 1):
        headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
        if _header(headers, "content-encoding") not in ("", "identity"):
            continue
        body = (response.get("body") or {}).get("string")
        if isinstance(body, bytes):
            try:
                body = body.decode("utf-8")
            except UnicodeDecodeError:
                continue
        if not isinstance(body, str) or not body.strip():
            continue
        kind = _header(headers, "content-type")
        if "json" in kind:
            payloads = [body]
        elif "event-stream" in kind:
            payloads = [
                line[5:].strip()
                for line in body.splitlines()
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
            ]
        else:
            continue
        for payload in payloads:
            try:
                json.loads(payload)
            except ValueError as e:
                raise RecordingError(
                    f"{path}: the response of interaction {n} is not valid JSON ({e}): the cassette "
                    "is damaged (a hand edit or a truncated copy); re-record it"
                ) from None


def _header(headers: dict[str, Any], name: str) -> str:
    """A recorded header's first value, lower-cased ('' when absent)."""
    value = headers.get(name)
    return str(value[0] if isinstance(value, list) and value else value or "").lower()


class CassettePlayer:
    """Plays one run's cassette: ordered, single-use, with vcrpy's drift errors."""

    def __init__(self, path: Path, match_body: bool) -> None:
        self.path = path
        self.match_body = match_body
        self.data = _load(path, match_body)
        self.play_counts = [0] * len(self.data.requests)
        self.used = False
        self._lock = threading.Lock()

    def respond(self, method: str, url: str, body: bytes, headers: Any) -> dict[str, Any]:
        """The recorded response for this request (marking it played), or vcrpy's mismatch error."""
        from vcr.request import Request as VcrRequest

        self.used = True
        request = VcrRequest(method, url, body, dict(headers))
        probe = _before_record_request(VcrRequest(method, url, body, dict(headers)))
        with self._lock:
            for index in self.data.by_key.get(_key(probe, self.match_body), ()):
                if self.play_counts[index] == 0:
                    self.play_counts[index] += 1
                    response: dict[str, Any] = self.data.responses[index]
                    return response
        raise self._mismatch(request)

    def _mismatch(self, request: Any) -> BaseException:
        import collections
        import inspect

        from vcr.cassette import Cassette
        from vcr.errors import CannotOverwriteExistingCassetteException

        from portagent.recording.vcr_cassette import make_vcr

        config = make_vcr("none", match_body=self.match_body).get_merged_config()
        config["path"] = str(self.path)
        accepted = inspect.signature(Cassette).parameters
        cassette = Cassette(**{k: v for k, v in config.items() if k in accepted})
        for req, resp in zip(self.data.requests, self.data.responses, strict=False):
            cassette.append(req, resp)
        cassette._loaded_count = len(cassette.data)
        cassette.dirty = False
        cassette.rewound = True
        cassette.play_counts = collections.Counter({i: n for i, n in enumerate(self.play_counts) if n})
        error: BaseException = CannotOverwriteExistingCassetteException(
            cassette=cassette, failed_request=request
        )
        return error

    def fill(self, report: CassetteReport) -> None:
        report.total = len(self.play_counts)
        report.played = sum(self.play_counts)
        report.unplayed = [
            f"{r.method} {r.path}"
            for r, n in zip(self.data.requests, self.play_counts, strict=False)
            if not n
        ]

    def transport(self, flavour: str) -> Any:
        """An async transport for ``httpx`` (google-genai) or ``httpx2`` (openai)."""
        if flavour == "httpx2":
            import httpx2 as module
        elif flavour == "httpx":
            import httpx as module  # type: ignore[no-redef]
        else:
            raise ValueError(f"unknown HTTP client flavour {flavour!r}")
        player = self

        class _Transport(module.AsyncBaseTransport):
            async def handle_async_request(self, request: Any) -> Any:
                body = await request.aread()
                recorded = player.respond(request.method, str(request.url), body, request.headers)
                return _response(module, recorded)

        return _Transport()


def _response(module: Any, recorded: dict[str, Any]) -> Any:
    if "status_code" in recorded:  # a cassette from an old vcrpy: let vcrpy rebuild it
        from vcr.stubs.httpx_stubs import _deserialize_response

        return _deserialize_response(recorded, module)
    message = recorded["status"].get("message")
    body = recorded["body"]["string"]
    if isinstance(body, str):
        body = body.encode("utf-8")
    return module.Response(
        recorded["status"]["code"],
        headers=[(n, v) for n, values in recorded["headers"].items() for v in values],
        stream=module.ByteStream(body),
        extensions={"reason_phrase": message.encode("ascii")} if message else None,
    )


def active_transport(flavour: str) -> Any:
    """The replay transport for the HTTP client being built, or None (build it as usual)."""
    player = _ACTIVE.get()
    return player.transport(flavour) if player is not None else None


def transport_kwargs(flavour: str) -> dict[str, Any]:
    """``{"transport": …}`` for the HTTP client being built when the player serves this replay, else
    nothing: what an adapter passes to its client's constructor."""
    replay = active_transport(flavour)
    return {"transport": replay} if replay is not None else {}


@contextmanager
def player_session(
    folder: Path, *, match_body: bool = True, offline_guard: bool = True
) -> Iterator[CassetteReport]:
    """Replay ``folder/cassette.yaml`` through the player; the report is filled like ``vcr_session``'s.
    ``offline_guard=False`` only for a replay that asks its MCP servers live (``offline.py``)."""
    path = folder / CASSETTE_FILE
    if not path.exists():
        raise RecordingError(f"{path}: cassette not found")
    player = CassettePlayer(path, match_body)
    report = CassetteReport()
    token = _ACTIVE.set(player)
    try:
        with offline(str(path)) if offline_guard else contextlib.nullcontext():
            yield report  # what the player does not answer must not reach the network either
    finally:
        _ACTIVE.reset(token)
        player.fill(report)
