"""A loopback reverse proxy that keeps an SDK's HTTP traffic: portagent's one HTTP seam for model calls
made where vcrpy cannot see them (the Claude Code CLI's own process) or where they must be kept as they
happen (the run journal, ``recording/journal.py``).

Modes:

- **record** — forwarded to the upstream (the real API, a custom endpoint, or the emulator), the answer
  streamed back to the client chunk by chunk as it arrives (an SSE stream is never buffered, so the
  client sees the same timing as without the proxy), and each interaction kept for a vcrpy cassette
  written with vcrpy's own ``Request`` and serializer. ``Accept-Encoding: identity`` is asked upstream
  so bodies are stored as text. Credentials (``scrub.SECRET_HEADERS``) are dropped before anything is
  kept, and a cassette in which a secret survives is refused.
- **replay** — serves a cassette in recorded order, single use, matched on method (any case), path
  and query (an unexpected request is answered 400 and listed in ``unmatched``).
- **journal** — like record, but each interaction is handed to a journal as soon as it is complete
  (``RunJournal.append``: one durable line); and the interactions of an earlier attempt that the
  journal still holds to replay are served first, without reaching the upstream
  (``RunJournal.take``).

An answer the upstream breaks off — a body shorter than its ``Content-Length``, a chunked body without
its last chunk, a connection reset mid-body — is never kept (no cassette interaction; the journal notes
it ``failed``), and the client's connection is dropped before the end of the answer: its SDK sees the
dropped connection it would have seen without the proxy (a connection error it retries or maps), never
a complete-looking answer.

Loopback only, a free port, stdlib ``http.server``; one thread per connection.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import itertools
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import SplitResult, urlsplit

from portagent.contracts.errors import RecordingError
from portagent.recording.scrub import SECRET_HEADERS, refuse_if_secret, scrub_url

if TYPE_CHECKING:
    from portagent.recording.journal import RunJournal

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
CHUNK = 65536


class _BrokenOff(http.client.HTTPException):
    """The upstream's answer ended before its framing said it would (relayed so far, kept nowhere)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: HttpProxy | None = None
    routes: dict[str, HttpProxy] | None = None
    """A shared server (``ProxyHub``): proxies by route token, the first path segment after ``/p/``."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        # A client or upstream that hangs up mid-stream (a cancelled run, a stopped CLI) is normal here.
        if isinstance(sys.exc_info()[1], OSError | http.client.HTTPException):
            return
        super().handle_error(request, client_address)


class ForwardGate(Protocol):
    """An optional hook on requests forwarded upstream (``HttpProxy(gate=…)``; portagent's is
    ``runtime.request_limits.RequestGate``: per-request rate limits and Retry-After). Called on the
    connection's thread; replayed or journal-served answers never reach it."""

    def before_forward(self, body: bytes) -> None:
        """Block until the request may go upstream."""

    def on_response(self, status: int, headers: dict[str, str]) -> None:
        """The upstream's status and headers, before they are relayed to the client."""

    def on_complete(self, status: int, body: bytes) -> None:
        """The whole answer, once relayed."""


def _upstream(url: str) -> tuple[SplitResult, str, str | None]:
    """The upstream a base URL names, as the SDK's own HTTP client would call it without the proxy:
    where to connect (scheme, host, port and the server root's path — nothing that is a credential, so
    neither the Host header nor a message can show one), the query to add to every request, and the
    ``Authorization`` header its userinfo stands for.

    httpx (every vendor SDK's client) sends a URL's ``user:pass@`` as Basic auth, percent-decoded, in place
    of the client's own ``Authorization`` (``Client._build_request_auth``); the SDKs that take a base URL
    with a query keep that query on each request (google-genai). The path is read as a server root like
    ``adapters.port.endpoint_root`` reads a base URL (a room this one cannot import): ``…/v1?token=x`` kept
    its ``/v1`` there because the URL ends in its query, and each SDK adds ``/v1`` itself (``/v1/v1/…``)."""
    import base64
    from urllib.parse import unquote

    parts = urlsplit(url.strip().rstrip("/"))
    path = parts.path.rstrip("/")
    for suffix in ("/v1beta", "/v1alpha", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)].rstrip("/")
            break
    authorization = None
    if parts.username or parts.password:
        userpass = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(userpass.encode("utf-8")).decode("ascii")
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc, path=path, query="", fragment=""), parts.query, authorization


class HttpProxy:
    """A loopback reverse proxy that records (or replays) the Claude Code CLI's HTTP traffic.

    ``with HttpProxy(upstream=…, cassette=path) as url:`` — give the CLI ``ANTHROPIC_BASE_URL=url``;
    call :meth:`save` after the run (record mode).
    """

    def __init__(
        self,
        *,
        upstream: str | None = None,
        cassette: Path | None = None,
        mode: str = "record",
        api_key: str | None = None,
        default_upstream: str | None = None,
        journal: RunJournal | None = None,
        name: str = "portagent-proxy",
        gate: ForwardGate | None = None,
    ) -> None:
        if mode not in ("record", "replay", "journal"):
            raise ValueError(f"mode must be 'record', 'replay' or 'journal', not {mode!r}")
        if mode == "journal" and journal is None:
            raise ValueError("journal mode needs a journal")
        root = upstream or default_upstream
        if not root:
            raise ValueError("the proxy needs an upstream URL")
        self.mode = mode
        self.upstream, self.upstream_query, self.authorization = _upstream(root)
        self.cassette = Path(cassette) if cassette is not None else None
        self.api_key = api_key
        self.journal = journal
        self.name = name
        self.gate = gate
        self.interactions: list[tuple[int, Any, dict[str, Any]]] = []
        """(order, vcr Request, vcr response dict) in record mode, or the loaded cassette in replay mode."""
        self.unmatched: list[str] = []
        self._played: set[int] = set()
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._route: str | None = None
        if mode == "replay":
            self._load()

    def target(self, path: str) -> str:
        """Where a request the client sent to ``path`` (its own path and query) goes on the upstream: under
        the upstream's root path, with the upstream URL's query (``?token=…``) before the client's own."""
        own_path, _, own_query = path.partition("?")
        query = "&".join(q for q in (self.upstream_query, own_query) if q)
        return self.upstream.path + own_path + ("?" + query if query else "")

    def next_seq(self) -> int:
        """The arrival number of a request (0, 1, …): the order a journal keeps."""
        if self.journal is not None:
            return self.journal.next_seq()
        with self._lock:
            return next(self._seq)

    # --- lifecycle -----------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the proxy first"
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> str:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            name=self.name,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._route is not None:
            HUB.detach(self._route)
            self._route = None
            return
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def start_shared(self) -> str:
        """Serve through the process's shared server (``HUB``) instead of a server of its own: no server
        to start or stop per run. Returns the base URL (with its route) the client must use."""
        self._route = HUB.attach(self)
        return f"{HUB.base_url}/p/{self._route}"

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the cassette --------------------------------------------------------------------------------

    def _cassette_dict(self) -> dict[str, Any]:
        ordered = sorted(self.interactions, key=lambda x: x[0])
        return {"requests": [r for _, r, _ in ordered], "responses": [resp for _, _, resp in ordered]}

    def _plain(self) -> dict[str, Any]:
        from vcr.serializers import compat

        data = self._cassette_dict()
        return {
            "interactions": [
                {
                    "request": compat.convert_to_unicode(r._to_dict()),
                    "response": compat.convert_to_unicode(resp),
                }
                for r, resp in zip(data["requests"], data["responses"], strict=True)
            ]
        }

    def check(self, secrets: list[str] | None = None) -> None:
        """Refuse (``RecordingError``) a recording in which a secret survived scrubbing."""
        refuse_if_secret(self._plain(), str(self.cassette or "http.yaml"), extra=self._secrets(secrets))

    def save(self, secrets: list[str] | None = None) -> Path:
        """Write the recorded interactions as a vcrpy cassette (after :meth:`check`)."""
        from vcr.serialize import serialize
        from vcr.serializers import yamlserializer

        if self.mode != "record" or self.cassette is None:
            raise RecordingError("only a recording proxy with a cassette path can save")
        self.check(secrets)
        self.cassette.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cassette.with_name(self.cassette.name + ".tmp")
        tmp.write_text(serialize(self._cassette_dict(), yamlserializer), encoding="utf-8")
        tmp.replace(self.cassette)
        return self.cassette

    def _secrets(self, secrets: list[str] | None) -> list[str] | None:
        out = list(secrets or [])
        if self.api_key and len(self.api_key) >= 8:
            out.append(self.api_key)
        return out or None

    def _load(self) -> None:
        from vcr.persisters.filesystem import FilesystemPersister
        from vcr.serializers import yamlserializer

        if self.cassette is None or not self.cassette.is_file():
            raise RecordingError(f"{self.cassette}: HTTP cassette not found")
        try:
            requests, responses, *_ = FilesystemPersister.load_cassette(str(self.cassette), yamlserializer)
        except Exception as e:
            raise RecordingError(
                f"{self.cassette}: not a readable vcrpy cassette ({type(e).__name__}: {e})"
            ) from None
        self.interactions = [
            (i, r, resp) for i, (r, resp) in enumerate(zip(requests, responses, strict=True))
        ]

    # --- serving -------------------------------------------------------------------------------------

    def _record(self, seq: int, request: Any, response: dict[str, Any]) -> None:
        if self.journal is not None:
            self.journal.append(seq, request, response)
            return
        with self._lock:
            self.interactions.append((seq, request, response))

    def _take(self, method: str, path: str, query: str) -> dict[str, Any] | None:
        with self._lock:
            for i, request, response in self.interactions:
                if i in self._played:
                    continue
                parts = urlsplit(request.uri)
                if request.method.upper() == method.upper() and parts.path == path and parts.query == query:
                    self._played.add(i)
                    return response
            self.unmatched.append(f"{method} {path}{'?' + query if query else ''}")
            return None

    @property
    def unplayed(self) -> list[str]:
        return [
            f"{r.method} {urlsplit(r.uri).path}" for i, r, _ in self.interactions if i not in self._played
        ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "portagent-proxy"
    server: _Server
    _received: bytes = b""

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # SSE frames leave at once

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _proxy(self) -> HttpProxy | None:
        """The proxy this request is for: the server's own, or (a shared hub) the one its route names —
        the route prefix is then taken off ``self.path``."""
        if self.server.routes is None:
            return self.server.proxy
        parts = self.path.split("/", 3)  # "", "p", token, rest
        if len(parts) < 3 or parts[1] != "p":
            return None
        proxy = self.server.routes.get(parts[2])
        self.path = "/" + (parts[3] if len(parts) > 3 else "")
        return proxy

    def do_POST(self) -> None:
        body = self._read_body()
        proxy = self._proxy()
        if proxy is None:
            self._send_error(404, "portagent proxy: no run is using this route (it has ended)")
            return
        seq = proxy.next_seq()
        try:
            if proxy.mode == "replay":
                self._replay(proxy)
                return
            if proxy.journal is not None:
                url = urlsplit(proxy.target(self.path))
                kept = proxy.journal.take(self.command, url.path, url.query, body, seq)
                if kept is not None:  # an earlier attempt's answer, served as it was received
                    self._serve(kept)
                    return
            self._forward(proxy, body, seq)
        except (
            OSError,
            http.client.HTTPException,
        ):  # the client hung up, or the upstream broke off mid-stream
            self.close_connection = True

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_POST

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # --- record: forward and stream back --------------------------------------------------------------

    def _forward(self, proxy: HttpProxy, body: bytes, seq: int) -> None:
        from vcr.request import Request

        up = proxy.upstream
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"  # text bodies in the cassette; SSE is not compressed anyway
        headers["Host"] = up.netloc
        if proxy.authorization is not None:  # the base URL's user:pass@, sent as the SDK's client sends it
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = proxy.authorization
        conn_cls = http.client.HTTPSConnection if up.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(up.hostname or "", up.port, timeout=600)
        target = proxy.target(self.path)
        try:
            if proxy.gate is not None:
                proxy.gate.before_forward(body)
            conn.request(self.command, target, body=body or None, headers=headers)
            upstream = conn.getresponse()
            if proxy.gate is not None:
                proxy.gate.on_response(upstream.status, dict(upstream.getheaders()))
        except (OSError, http.client.HTTPException) as e:  # refused, reset, or no valid status line
            conn.close()
            if proxy.journal is not None:
                # The SDK must see what it would have seen without the journal in between: a connection
                # it cannot make (its own retry and error mapping apply), not an answer from portagent.
                proxy.journal.failed(seq, f"{up.scheme}://{up.netloc} unreachable: {e}")
                self._drop()
                return
            self._send_error(502, f"portagent proxy: upstream {up.scheme}://{up.netloc} unreachable: {e}")
            return
        request = Request(
            self.command,
            f"{up.scheme}://{up.netloc}{target}",
            body,
            {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP},
        )
        request.uri = scrub_url(request.uri)
        for name in list(request.headers):
            if name.lower() in SECRET_HEADERS:
                del request.headers[name]

        def keep(received: bytes) -> None:
            reply_headers = {
                k: [v]
                for k, v in upstream.getheaders()
                if k.lower() not in SECRET_HEADERS and k.lower() not in _HOP_BY_HOP
            }
            if (upstream.getheader("Content-Encoding") or "").lower() == "gzip":
                with contextlib.suppress(OSError, EOFError):
                    received = gzip.decompress(received)
                    reply_headers = {
                        k: v for k, v in reply_headers.items() if k.lower() != "content-encoding"
                    }
            proxy._record(
                seq,
                request,
                {
                    "status": {"code": upstream.status, "message": upstream.reason},
                    "headers": reply_headers,
                    "body": {"string": received},
                },
            )

        try:
            # A journal keeps the exchange before the answer's last chunk leaves: the client cannot act
            # on an answer (run a tool) that a crash would then lose from the journal.
            self._relay(upstream, keep if proxy.journal is not None else None)
        except _BrokenOff as e:
            # Kept nowhere, and the client's answer is left without its last chunk: its SDK raises the
            # connection error it would raise without the proxy (a retryable provider error), rather
            # than reading a whole-looking answer that a resume would then serve again as good.
            if proxy.journal is not None:
                proxy.journal.failed(seq, f"{up.scheme}://{up.netloc} broke off the answer: {e}")
            self._drop()
            return
        finally:
            conn.close()
        if proxy.gate is not None:
            proxy.gate.on_complete(upstream.status, self._received)
        if proxy.journal is None:
            keep(self._received)

    def _relay(self, upstream: http.client.HTTPResponse, before_end: Any = None) -> None:
        """Send the upstream answer on as it arrives; the whole body is left in ``_received``
        (and given to ``before_end`` before the last chunk is sent)."""
        self.send_response(upstream.status, upstream.reason)
        for k, v in upstream.getheaders():
            if k.lower() not in _HOP_BY_HOP:
                self.send_header(k, v)
        bodiless = self.command == "HEAD" or upstream.status in (204, 304) or upstream.status < 200
        if not bodiless:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        received = bytearray()
        self._received = b""
        if bodiless:
            if before_end is not None:
                before_end(b"")
            return
        expected = upstream.length  # the Content-Length; None when chunked or ended by closing
        while True:
            try:
                data = upstream.read1(CHUNK)  # returns as soon as any bytes arrived: no buffering
            except (OSError, http.client.HTTPException) as e:  # a chunked body cut off, a reset
                raise _BrokenOff(f"{type(e).__name__} after {len(received)} bytes") from e
            if not data:
                # http.client returns b"" at EOF even when fewer bytes came than Content-Length said
                if upstream.length:
                    raise _BrokenOff(f"{len(received)} of the {expected} bytes its Content-Length announced")
                break
            received += data
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self._received = bytes(received)
        if before_end is not None:
            before_end(self._received)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # --- replay --------------------------------------------------------------------------------------

    def _replay(self, proxy: HttpProxy) -> None:
        url = urlsplit(self.path)
        path = proxy.upstream.path + url.path
        response = proxy._take(self.command, path, url.query)
        if response is None:
            self._send_error(400, f"portagent proxy: the cassette holds no further {self.command} {url.path}")
            return
        self._serve(response)

    def _serve(self, response: dict[str, Any]) -> None:
        """Answer with a kept response (vcrpy's dict form), an SSE body one event per chunk."""
        status = response["status"]
        self.send_response(int(status["code"]), status.get("message") or "")
        body = response["body"]["string"]
        raw = body if isinstance(body, bytes) else str(body).encode("utf-8")
        for k, values in (response.get("headers") or {}).items():
            if k.lower() in _HOP_BY_HOP or k.lower() == "content-encoding":
                continue
            for v in values if isinstance(values, list) else [values]:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for part in _events(raw):  # an SSE body goes out one event per chunk, like the upstream sent it
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """End this connection without a further byte (an unfinished answer stays unfinished)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_error(self, status: int, message: str) -> None:
        import json

        body = json.dumps(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error" if status == 400 else "api_error",
                    "message": message,
                },
            }
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


def _events(raw: bytes) -> list[bytes]:
    if b"\n\n" not in raw:
        return [raw] if raw else []
    parts = raw.split(b"\n\n")
    out = [p + b"\n\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


class ProxyHub:
    """One loopback server per process for every proxy that asks for it (``start_shared``), each under
    a random route: a run's journal costs no server start or stop. Started on first use; a forked child
    (an eval worker) starts its own (threads do not survive ``fork``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._pid = 0
        self._routes: dict[str, HttpProxy] = {}

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def attach(self, proxy: HttpProxy) -> str:
        import os
        import secrets

        with self._lock:
            if self._server is None or self._pid != os.getpid():
                self._routes = {}
                server = _Server(("127.0.0.1", 0), _Handler)
                server.routes = self._routes
                threading.Thread(
                    target=server.serve_forever,
                    name="portagent-proxy-hub",
                    kwargs={"poll_interval": 0.5},
                    daemon=True,
                ).start()
                self._server, self._pid = server, os.getpid()
            token = secrets.token_hex(8)
            self._routes[token] = proxy
            return token

    def detach(self, token: str) -> None:
        with self._lock:
            self._routes.pop(token, None)


HUB = ProxyHub()
"""The process's shared proxy server."""
