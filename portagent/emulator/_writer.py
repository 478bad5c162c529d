"""Writing response bodies on the socket, with the body faults (stall, truncate).

JSON bodies go out with ``Content-Length``; streams (SSE and Gemini's JSON array) with
``Transfer-Encoding: chunked``, one chunk per event, so a client sees each event when it is sent and
a truncated stream is a real incomplete chunked body (the client's HTTP layer reports it, as it
would for a dropped vendor connection).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler

from portagent.contracts.emulator_script import StallFault, TruncateFault

BodyFault = StallFault | TruncateFault | None


class ClientGone(Exception):
    """The client closed the connection while we were writing."""


def _send_head(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str]) -> None:
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()


def _drop(handler: BaseHTTPRequestHandler) -> None:
    """Close the connection now, mid-body."""
    handler.close_connection = True
    try:
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _write(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    try:
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as e:
        handler.close_connection = True
        raise ClientGone from e


def write_body(
    handler: BaseHTTPRequestHandler,
    status: int,
    headers: dict[str, str],
    body: bytes,
    fault: BodyFault = None,
) -> None:
    """A complete body with Content-Length; a fault cuts it in half (stall or truncate)."""
    _send_head(handler, status, {**headers, "Content-Length": str(len(body))})
    if fault is None:
        _write(handler, body)
        return
    half = len(body) // 2
    _write(handler, body[:half])
    if isinstance(fault, StallFault):
        time.sleep(fault.stall_ms / 1000)
        if fault.then == "close":
            _drop(handler)
            return
        _write(handler, body[half:])
        return
    _drop(handler)  # truncate: the declared length is never reached


def write_chunked(
    handler: BaseHTTPRequestHandler,
    status: int,
    headers: dict[str, str],
    events: Iterable[bytes],
    fault: BodyFault = None,
) -> None:
    """A chunked stream, one chunk per event, with the stall/truncate fault applied by event count."""
    _send_head(handler, status, {**headers, "Transfer-Encoding": "chunked"})
    for n, event in enumerate(events):
        if fault is not None and n == fault.after_events:
            if isinstance(fault, StallFault):
                time.sleep(fault.stall_ms / 1000)
                if fault.then == "close":
                    _drop(handler)
                    return
            else:
                if fault.clean_end:
                    _write(handler, b"0\r\n\r\n")
                else:
                    _drop(handler)
                return
        _write(handler, b"%x\r\n%s\r\n" % (len(event), event))
    _write(handler, b"0\r\n\r\n")
