"""The HTTP side: a stdlib ``ThreadingHTTPServer`` speaking the three vendor wire protocols.

Routes (base URL ``http://host:port``):

============================================================  ============================
``POST /v1/responses``                                         OpenAI Responses
``POST /v1/chat/completions``                                  OpenAI Chat Completions
``POST /v1/messages`` (``?beta=true`` too)                     Anthropic Messages
``POST /v1/messages/count_tokens``                             Anthropic token count
``POST /v1beta/models/{model}:generateContent``                Gemini (``v1`` / ``v1alpha`` too)
``POST /v1beta/models/{model}:streamGenerateContent``          ``?alt=sse``: SSE; else JSON array
``POST /v1beta/models/{model}:countTokens``                    Gemini token count
``GET /_emulator/health`` · ``GET /_emulator/requests`` · ``POST /_emulator/reset``   control
============================================================  ============================

Stdlib only on purpose: installing aiohttp would switch google-genai's async transport (SDK_NOTES §1).
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from portagent.emulator import render_anthropic, render_gemini, render_openai
from portagent.emulator._writer import ClientGone, write_body, write_chunked
from portagent.emulator.engine import Engine
from portagent.emulator.errors import render_error, vendor_of_path
from portagent.emulator.plan import ErrorReply, Plan, estimate_tokens
from portagent.emulator.requestlog import RequestLog, credential, mask_headers, mask_query
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai
from portagent.wire.items import RequestView, WireFormatError
from portagent.wire.sse import encode_event, json_array_chunks

_GEMINI_PATH = re.compile(
    r"^/(v1beta|v1|v1alpha)/(?:models|tunedModels)/([^/:]+):"
    r"(generateContent|streamGenerateContent|countTokens)$"
)
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream; charset=utf-8"


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 50 concurrent requests must not overflow the accept backlog

    def __init__(
        self,
        address: tuple[str, int],
        engine: Engine,
        log: RequestLog,
        *,
        clock: Callable[[], float] = time.time,
        verbose: bool = False,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.engine = engine
        self.log = log
        self.clock = clock
        self.verbose = verbose
        self._seq = itertools.count(1)
        self._seq_lock = threading.Lock()

    def next_seq(self) -> int:
        with self._seq_lock:
            return next(self._seq)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (timeouts, cancelled streams, fault tests) is normal here.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "portagent-emulator"
    server: EmulatorHTTPServer

    def setup(self) -> None:
        super().setup()
        # Small SSE frames must leave at once, not wait for Nagle's algorithm.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write("emulator: " + (format % args) + "\n")

    def do_POST(self) -> None:
        self._dispatch()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    # -- request -----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            raw = bytes(data)
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return raw

    def _dispatch(self) -> None:
        self._started = time.perf_counter()
        seq = self.server.next_seq()
        self._request_id = f"req_emu_{seq:06d}"
        url = urlsplit(self.path)
        self._path, query = url.path, parse_qs(url.query, keep_blank_values=True)
        self._vendor = vendor_of_path(self._path)
        self._json_array = False
        self._entry: dict[str, Any] = {
            "seq": seq,
            "time": self.server.clock(),
            "method": self.command,
            "path": self._path,
            "query": mask_query(query),
            "headers": mask_headers(dict(self.headers.items())),
            "credential": credential(dict(self.headers.items()), query),
            "body": None,
        }
        try:
            raw = self._read_body()
        except (ValueError, OSError) as e:
            self._error(ErrorReply("bad_request", f"portagent emulator: unreadable request body: {e}"))
            return
        try:
            self._entry["body"] = json.loads(raw) if raw else None
        except ValueError as e:
            self._entry["body"] = {"_raw": raw[:10_000].decode("utf-8", "replace")}
            if self.command == "POST":
                self._error(
                    ErrorReply("bad_request", f"portagent emulator: request body is not valid JSON: {e}")
                )
                return
        try:
            self._route(query)
        except ClientGone:
            pass
        except Exception as e:
            # A bug in the emulator: say so in the vendor's shape rather than hang up on the client.
            traceback.print_exc(file=sys.stderr)
            if "status" not in self._entry:
                self._error(
                    ErrorReply("server_error", f"portagent emulator internal error: {type(e).__name__}: {e}")
                )
            else:
                self.close_connection = True

    def _route(self, query: dict[str, list[str]]) -> None:
        path, method, body = self._path, self.command, self._entry["body"]
        if path.startswith("/_emulator/"):
            self._control(path, method)
            return
        gm = _GEMINI_PATH.match(path)
        if method != "POST" or not (
            gm
            or path in ("/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens")
        ):
            self._error(ErrorReply("not_found", f"portagent emulator: no route for {method} {path}"))
            return
        try:
            if path == "/v1/responses":
                view = wire_openai.parse_responses_request(body)
            elif path == "/v1/chat/completions":
                view = wire_openai.parse_chat_request(body)
            elif path.startswith("/v1/messages"):
                view = wire_anthropic.parse_messages_request(body)
            else:
                assert gm is not None
                stream = gm.group(3) == "streamGenerateContent"
                self._json_array = stream and query.get("alt", [""])[0] != "sse"
                view = wire_gemini.parse_generate_content_request(body, model=gm.group(2), stream=stream)
        except WireFormatError as e:
            self._error(ErrorReply("bad_request", f"portagent emulator: malformed request body: {e}"))
            return
        self._entry["api"] = view.api
        if path.endswith("count_tokens") or (gm and gm.group(3) == "countTokens"):
            tokens = estimate_tokens(view.system + "".join(i.text for i in view.items))
            payload = (
                {"input_tokens": tokens} if view.api.startswith("anthropic") else {"totalTokens": tokens}
            )
            self._finish_log(200)
            write_body(self, 200, self._headers(JSON_TYPE), _dumps(payload))
            return
        decision = self.server.engine.respond(view, self._entry["headers"])
        if isinstance(decision, ErrorReply):
            self._error(decision)
        else:
            self._answer(view, decision)

    def _control(self, path: str, method: str) -> None:
        if path == "/_emulator/health":
            script = self.server.engine.script
            payload: Any = {
                "status": "ok",
                "script": script.name,
                "conversations": [c.name for c in script.conversations],
            }
        elif path == "/_emulator/requests":
            payload = self.server.log.entries()
        elif path == "/_emulator/reset" and method == "POST":
            self.server.engine.reset()
            payload = {"status": "reset"}
        else:
            self._error(ErrorReply("not_found", f"portagent emulator: no control route {method} {path}"))
            return
        write_body(self, 200, {"Content-Type": JSON_TYPE}, _dumps(payload))

    # -- response ----------------------------------------------------------------------------

    def _headers(self, content_type: str) -> dict[str, str]:
        h = {"Content-Type": content_type}
        if self._vendor == "anthropic":
            h["request-id"] = self._request_id
        elif self._vendor == "openai":
            h["x-request-id"] = self._request_id
        return h

    def _finish_log(self, status: int, **fields: Any) -> None:
        self._entry.update(fields)
        self._entry["status"] = status
        self._entry["handled_ms"] = round((time.perf_counter() - self._started) * 1000, 3)
        self.server.log.append(self._entry)

    def _error(self, err: ErrorReply) -> None:
        code, headers, body = render_error(
            self._vendor, err, request_id=self._request_id, json_array=self._json_array
        )
        self._finish_log(
            code,
            conversation=err.conversation,
            cursor=err.cursor,
            fault=err.fault,
            error=err.message or err.kind,
            notes=list(err.notes),
            refusal=err.refusal,
        )
        ctype = "application/json; charset=UTF-8" if self._vendor == "gemini" else JSON_TYPE
        write_body(self, code, {**self._headers(ctype), **headers}, _dumps(body))

    def _answer(self, view: RequestView, plan: Plan) -> None:
        reply = {
            "text": plan.text,
            "thinking": plan.thinking,
            "tool_calls": [{"name": c.name, "arguments": c.arguments_json} for c in plan.calls],
        }
        self._finish_log(
            200,
            conversation=plan.conversation,
            cursor=plan.cursor,
            fault=plan.fault,
            notes=list(plan.notes),
            stream=view.stream,
            reply=reply,
        )
        delay = plan.latency_ms + plan.slow_first_byte_ms
        if delay:
            time.sleep(delay / 1000)
        api = view.api
        if not view.stream:
            payload = {
                "openai.responses": render_openai.responses_json,
                "openai.chat": render_openai.chat_json,
                "anthropic.messages": render_anthropic.messages_json,
                "gemini.generate_content": render_gemini.generate_json,
            }[api](plan, view)
            ctype = plan.content_type or (
                "application/json; charset=UTF-8" if api.startswith("gemini") else JSON_TYPE
            )
            write_body(self, 200, self._headers(ctype), _dumps(payload), plan.body_fault)
            return
        if api == "gemini.generate_content":
            elements = render_gemini.stream_elements(plan, view)
            if self._json_array:
                frames = list(json_array_chunks(elements))
                ctype = plan.content_type or "application/json; charset=UTF-8"
            else:
                # Gemini's SSE uses CRLF line ends (pydantic-ai recording).
                frames = [encode_event(e, crlf=True) for e in elements]
                ctype = plan.content_type or "text/event-stream"
        else:
            frames = {
                "openai.responses": render_openai.responses_events,
                "openai.chat": render_openai.chat_events,
                "anthropic.messages": render_anthropic.messages_events,
            }[api](plan, view)
            ctype = plan.content_type or SSE_TYPE
        headers = self._headers(ctype)
        headers["Cache-Control"] = "no-cache"
        write_chunked(self, 200, headers, frames, plan.body_fault)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
