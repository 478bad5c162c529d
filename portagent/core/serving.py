"""Serving on a network safely, the one definition for ``mcp serve`` and ``a2a serve``: which host is
this machine only (``is_loopback``; the replay guard uses it too), refusing a bind that exposes a server
without a bearer token (``check_bind``), and checking the token a request presents (``bearer_ok``)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from portagent.contracts.errors import UsageError

MIN_TOKEN_LENGTH = 16

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
