"""Serving on a network safely, the one definition for ``mcp serve`` and ``a2a serve``: which host is
this machine only (``is_loopback``; the replay guard uses it too), refusing a bind that exposes a server
without a bearer token (``check_bind``), checking the token a request presents (``bearer_ok``), the
Host/Origin allowlist entries a user adds (``allowed_host``, ``allowed_origin``) and the allowlist a
server checks every request against (``allowlist``, ``Allowlist.refusal``)."""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from portagent.contracts.errors import UsageError

MIN_TOKEN_LENGTH = 16

_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:\[\]]*)(?::([0-9]{1,5}))?")
_NAME = re.compile(r"(?:[a-z0-9_-]+\.)*[a-z0-9_-]+")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PORTED = re.compile(r":[0-9]+\Z")
_PORT = re.compile(r"[0-9]{1,5}")

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback(host: Any) -> bool:
    """``localhost`` (and names under ``.localhost``), a loopback address, or an IPv4-mapped loopback
    address (``::ffff:127.0.0.1``, a dual-stack socket's view of it). Brackets and a zone are ignored.
    An unspecified address (``0.0.0.0``) is not loopback: bound to, it listens on every interface."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    bare = host.strip("[]").split("%", 1)[0].lower()
    if bare in _LOCAL_NAMES or bare.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def check_bind(host: str, tokens: Sequence[str], *, token_name: str, unauthenticated: str) -> None:
    """Refuse tokens that are easy to guess (``token_name`` names them in the message), and a bind that is
    not loopback without a token (``unauthenticated``: the message, naming what would be exposed and the
    setting that takes a token)."""
    for t in tokens:
        if len(t) < MIN_TOKEN_LENGTH or any(c.isspace() for c in t):
            raise UsageError(
                f"an {token_name} must be at least {MIN_TOKEN_LENGTH} characters without spaces "
                "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
    if not tokens and not is_loopback(host):
        raise UsageError(unauthenticated)


def bearer_ok(headers: Mapping[bytes, bytes], tokens: Sequence[bytes]) -> bool:
    """Whether ASGI request headers carry ``Authorization: Bearer <one of tokens>`` (constant-time compare)."""
    scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
    presented = value.strip()
    return scheme.lower() == b"bearer" and any(hmac.compare_digest(presented, t) for t in tokens)


def allowed_host(value: str) -> str:
    """A Host allowlist entry as clients send the header (``name[:port]``, lowercase): the allowlist
    compares exact strings, so anything else (a URL, a path, an empty name) would never match."""
    parts = _host_port(value)
    if parts is None:
        raise UsageError(
            f"--allow-host {value!r}: not a host name with an optional port; write NAME[:PORT], e.g. "
            "app.example or app.example:8000 (an IPv6 address in brackets, a non-ASCII name in its xn-- form)"
        )
    host, port = parts
    return host if port is None else f"{host}:{port}"


def allowed_origin(value: str) -> str:
    """An Origin allowlist entry as browsers send the header (``scheme://host[:port]``, lowercase, no
    default port; a copied URL's trailing ``/`` is dropped): any other form would never match. ``null``
    is refused: every sandboxed frame and local file sends it, so it would let any page through."""
    if value.strip().lower() == "null":
        raise UsageError(
            "--allow-origin null: browsers send `Origin: null` from any sandboxed frame, local file or "
            "redirect, so it would admit any web page; name the page's own origin"
        )
    scheme, sep, rest = value.partition("://")
    scheme = scheme.lower()
    parts = _host_port(rest.removesuffix("/")) if sep and _SCHEME.fullmatch(scheme) else None
    if parts is None:
        raise UsageError(
            f"--allow-origin {value!r}: not an origin; write scheme://host[:port], e.g. https://app.example "
            "or http://localhost:5173 (no path, query, fragment or user name)"
        )
    host, port = parts
    shown = "" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown}"


def add_allowlist_args(
    parser: Any, *, prefix: str = "", hosts_note: str = "loopback names always are"
) -> None:
    """``--allow-host`` and ``--allow-origin`` on a serving command's parser (``mcp serve``, ``a2a serve``);
    ``prefix`` starts each help text (the transport they apply to), ``hosts_note`` says what is always
    accepted."""
    parser.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help=f"{prefix}also accept this Host header (repeatable; {hosts_note})",
    )
    parser.add_argument(
        "--allow-origin",
        dest="allow_origins",
        action="append",
        default=[],
        metavar="ORIGIN",
        help=f"{prefix}also accept this Origin header, e.g. https://app.example (repeatable)",
    )


def names_a_port(entry: str) -> bool:
    """Whether an allowlist entry (a Host or an Origin) ends with a port: it then matches only that port;
    one without matches its name on any port."""
    return _PORTED.search(entry) is not None


@dataclass(frozen=True)
class Allowlist:
    """The Host and Origin headers a server answers (DNS-rebinding and cross-site protection), each entry
    as the header arrives (``allowed_host``/``allowed_origin`` forms). Built by ``allowlist``."""

    hosts: tuple[str, ...]
    origins: tuple[str, ...]

    def refusal(self, headers: Mapping[bytes, bytes]) -> tuple[int, bytes] | None:
        """How to refuse a request with these (ASGI) headers, else None. A missing or foreign Host is 421
        (Misdirected Request: a page on a rebound DNS name sends its own name), a foreign Origin 403 (a
        page of another site); no Origin (a non-browser client, a browser's same-origin GET) passes. The
        same answers as the MCP SDK's check that ``mcp serve`` uses."""
        if not _listed(headers.get(b"host", b"").decode("latin-1"), self.hosts):
            return 421, b"Invalid Host header"
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not _listed(origin, self.origins):
            return 403, b"Invalid Origin header"
        return None


def allowlist(host: str, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()) -> Allowlist:
    """The allowlist of a server bound to ``host``, on for every bind: the loopback names (and their
    ``http://`` origins), the bound address when it is a specific one, the machine's host name on a
    ``0.0.0.0``/``::`` bind, and what the user adds (``--allow-host``/``--allow-origin``; a malformed
    entry is a UsageError: it would never match, and the server would refuse its client)."""
    import socket

    names = ["127.0.0.1", "localhost", "[::1]"]
    bare = host.strip("[]")
    if bare not in ("0.0.0.0", "::", "127.0.0.1", "localhost", "::1"):
        names.append(f"[{bare}]" if ":" in bare else bare)
    if bare in ("0.0.0.0", "::"):
        names.append(socket.gethostname())
    names += [allowed_host(h) for h in allow_hosts]
    origins = [f"http://{n}" for n in names[:3]] + [allowed_origin(o) for o in allow_origins]
    return Allowlist(hosts=tuple(dict.fromkeys(names)), origins=tuple(dict.fromkeys(origins)))


def _listed(value: str, entries: Sequence[str]) -> bool:
    """``value`` is an entry, or an entry without a port followed by ``:PORT``."""
    for entry in entries:
        if value == entry:
            return True
        rest = value.removeprefix(entry + ":")
        if rest != value and not names_a_port(entry) and _PORT.fullmatch(rest):
            return True
    return False


def _host_port(text: str) -> tuple[str, int | None] | None:
    """``name``, ``name:port``, ``[ipv6]`` or ``[ipv6]:port``, the name lowercased; None for anything else."""
    m = _HOST_PORT.fullmatch(text)
    if m is None:
        return None
    host, port = m[1].lower(), (int(m[2]) if m[2] else None)
    if port is not None and not 0 < port <= 65535:
        return None
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    elif not _NAME.fullmatch(host):
        return None
    return host, port
