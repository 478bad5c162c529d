"""A replay stays offline: while a cassette plays, nothing in the process reaches another host.

vcrpy, during a replay, patches every HTTP library it knows, so any request that is not in the cassette
fails, from the SDK or from a tool handler alike. The transport-level player (``player.py``) answers
only the SDK's own client; without this guard a handler's ``requests.get`` or an SDK side channel
(an auth token refresh, telemetry) would go out to the network during a "replay".

The guard is a ``sys.addaudithook`` hook on ``socket.connect`` and ``socket.getaddrinfo``, active while
at least one replay is playing in the process (like vcrpy's patches, it is process-wide: a replay
worker runs one run at a time). Loopback and local (Unix) sockets stay allowed: a handler's local
database or helper service is not the network. Anything else raises :class:`OfflineReplayError`, a
``RecordingError`` and not an ``OSError``, so no client treats it as a transient failure to retry.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from portagent.contracts.errors import RecordingError
from portagent.core.serving import is_loopback


class OfflineReplayError(RecordingError):
    """Something tried to reach the network while a cassette was playing."""


_active: list[str] = []
"""The cassettes playing now (a list, not a count: the message names one)."""
_lock = threading.Lock()
_hooked = False


def _is_local(host: Any) -> bool:
    """This machine: no host (a lookup of nothing), a loopback name or address (``core.serving``), or the
    unspecified address (connecting to ``0.0.0.0`` reaches this machine)."""
    if host is None or host in ("", b""):
        return True
    if not isinstance(host, str | bytes):
        return True  # not an address this guard understands (e.g. an AF_PACKET tuple): not HTTP
    if is_loopback(host):
        return True
    bare = (host.decode("ascii", "replace") if isinstance(host, bytes) else host).strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare).is_unspecified
    except ValueError:
        return False  # a host name other than localhost: resolving it is already network traffic


def _refuse(what: str) -> None:
    cassette = _active[-1] if _active else "a cassette"
    raise OfflineReplayError(
        f"a replay is offline, but {what} while {cassette} was playing; if the run now needs that host, "
        "record it again (portagent record), or keep the handler from calling out during replays"
    )


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _active:  # the fast path: every audited event of the process comes through here
        return
    if event == "socket.connect":
        address = args[1] if len(args) > 1 else None
        if isinstance(address, tuple) and address and not _is_local(address[0]):
            _refuse(f"something tried to reach {_where(address[0], address[1:2])}")
    elif event == "socket.getaddrinfo":
        host = args[0] if args else None
        if not _is_local(host):
            if _is_address(host):  # a literal address is "resolved" on the way to connecting to it
                _refuse(f"something tried to reach {_where(host, args[1:2])}")
            _refuse(f"something tried to look up the host {host!r}")


def _is_address(host: Any) -> bool:
    try:
        ipaddress.ip_address(str(host).strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _where(host: Any, port: tuple[Any, ...]) -> str:
    return f"{host}:{port[0]}" if port and port[0] is not None else str(host)


@contextmanager
def offline(cassette: str) -> Iterator[None]:
    """Refuse non-local connections and name lookups in this process for the duration of the block."""
    global _hooked
    with _lock:
        if not _hooked:
            sys.addaudithook(_audit)  # hooks cannot be removed: it stays, idle, once installed
            _hooked = True
        _active.append(cassette)
    try:
        yield
    finally:
        with _lock:
            _active.remove(cassette)
