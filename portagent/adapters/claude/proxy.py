"""The Claude recording proxy (design (a) of SDK_NOTES §4.6): ``ANTHROPIC_BASE_URL`` → portagent → upstream.

The Claude Code CLI does its HTTP in its own process, out of vcrpy's reach. Pointed at this proxy, every
request it makes goes through portagent:

- **record** — forwarded to the upstream (the real API with ``--live``, or the emulator), the answer
  streamed back to the CLI chunk by chunk as it arrives (an SSE stream is never buffered, so the CLI
  sees the same timing as without the proxy), and each interaction kept in a vcrpy cassette written
  with vcrpy's own ``Request`` and serializer: ``vcr.use_cassette`` and ``portagent trace import`` read
  it. ``Accept-Encoding: identity`` is asked upstream so bodies are stored as text. Credentials
  (``x-api-key``, ``authorization``, cookies, org ids — ``scrub.SECRET_HEADERS``) are dropped before
  anything is written, and a cassette in which a secret survives is refused.
- **replay** — serves a cassette in recorded order, single use, matched on method (any case), path
  and query. The real CLI then runs the whole agent loop offline: this is how a new CLI version is
  checked against an old recording (an unexpected request is answered 400 and listed in
  ``unmatched``), and what the transport cassette's replay is measured against.

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
from typing import Any
from urllib.parse import urlsplit

from portagent.contracts.errors import RecordingError
from portagent.recording.scrub import SECRET_HEADERS, refuse_if_secret, scrub_url

HTTP_CASSETTE = "http.yaml"
"""The proxy's vcrpy cassette in a Claude run folder (beside ``transport.jsonl``)."""

DEFAULT_UPSTREAM = "https://api.anthropic.com"

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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: ClaudeProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        # A client or upstream that hangs up mid-stream (a cancelled run, a stopped CLI) is normal here.
        if isinstance(sys.exc_info()[1], OSError | http.client.HTTPException):
            return
        super().handle_error(request, client_address)


class ClaudeProxy:
    """A loopback reverse proxy that records (or replays) the Claude Code CLI's HTTP traffic.

    ``with ClaudeProxy(upstream=…, cassette=path) as url:`` — give the CLI ``ANTHROPIC_BASE_URL=url``;
    call :meth:`save` after the run (record mode).
    """

    def __init__(
        self,
        *,
        upstream: str | None = None,
        cassette: Path | None = None,
        mode: str = "record",
        api_key: str | None = None,
    ) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"mode must be 'record' or 'replay', not {mode!r}")
        self.mode = mode
        self.upstream = urlsplit((upstream or DEFAULT_UPSTREAM).rstrip("/"))
        self.cassette = Path(cassette) if cassette is not None else None
        self.api_key = api_key
        self.interactions: list[tuple[int, Any, dict[str, Any]]] = []
        """(order, vcr Request, vcr response dict) in record mode, or the loaded cassette in replay mode."""
        self.unmatched: list[str] = []
        self._played: set[int] = set()
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        if mode == "replay":
            self._load()

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
            name="portagent-claude-proxy",
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

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
        refuse_if_secret(self._plain(), str(self.cassette or HTTP_CASSETTE), extra=self._secrets(secrets))

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
    server_version = "portagent-claude-proxy"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # SSE frames leave at once

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        proxy = self.server.proxy
        body = self._read_body()
        try:
            if proxy.mode == "replay":
                self._replay(proxy)
            else:
                self._forward(proxy, body)
        except (OSError, http.client.HTTPException):  # the CLI hung up, or the upstream broke off mid-stream
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

    def _forward(self, proxy: ClaudeProxy, body: bytes) -> None:
        from vcr.request import Request

        seq = next(proxy._seq)
        up = proxy.upstream
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"  # text bodies in the cassette; SSE is not compressed anyway
        headers["Host"] = up.netloc
        conn_cls = http.client.HTTPSConnection if up.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(up.hostname or "", up.port, timeout=600)
        target = up.path + self.path
        try:
            conn.request(self.command, target, body=body or None, headers=headers)
            upstream = conn.getresponse()
        except OSError as e:
            conn.close()
            self._send_error(502, f"portagent proxy: upstream {up.scheme}://{up.netloc} unreachable: {e}")
            return
        try:
            received = self._relay(upstream)
        finally:
            conn.close()
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
        reply_headers = {
            k: [v]
            for k, v in upstream.getheaders()
            if k.lower() not in SECRET_HEADERS and k.lower() not in _HOP_BY_HOP
        }
        if (upstream.getheader("Content-Encoding") or "").lower() == "gzip":
            with contextlib.suppress(OSError, EOFError):
                received = gzip.decompress(received)
                reply_headers = {k: v for k, v in reply_headers.items() if k.lower() != "content-encoding"}
        proxy._record(
            seq,
            request,
            {
                "status": {"code": upstream.status, "message": upstream.reason},
                "headers": reply_headers,
                "body": {"string": received},
            },
        )

    def _relay(self, upstream: http.client.HTTPResponse) -> bytes:
        """Send the upstream answer on as it arrives; return the whole body."""
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
        if bodiless:
            return bytes(received)
        while True:
            data = upstream.read1(CHUNK)  # returns as soon as any bytes arrived: no buffering
            if not data:
                break
            received += data
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return bytes(received)

    # --- replay --------------------------------------------------------------------------------------

    def _replay(self, proxy: ClaudeProxy) -> None:
        url = urlsplit(self.path)
        path = proxy.upstream.path + url.path
        response = proxy._take(self.command, path, url.query)
        if response is None:
            self._send_error(400, f"portagent proxy: the cassette holds no further {self.command} {url.path}")
            return
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
