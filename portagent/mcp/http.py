"""``mcp serve --transport streamable-http``: the HTTP side of a served MCP session — the Host/Origin
allowlist, the bearer-token middleware, the listening socket and uvicorn (stopped without killing the
process, so the session's trace still ends). The session itself is ``server.GovernedServer``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from portagent.contracts.errors import UsageError
from portagent.core import serving

if TYPE_CHECKING:
    from portagent.mcp.server import GovernedServer


def transport_security(host: str, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()) -> Any:
    """The MCP SDK's settings for the Host/Origin allowlist of ``serving.allowlist`` (the one ``a2a serve``
    checks too); the SDK's transport enforces them. A malformed entry is a UsageError."""
    from mcp.server.transport_security import TransportSecuritySettings

    allowed = serving.allowlist(host, allow_hosts, allow_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({p for n in allowed.hosts for p in _any_port(n)}),
        allowed_origins=sorted({p for o in allowed.origins for p in _any_port(o)}),
    )


def _any_port(entry: str) -> list[str]:
    """An entry with its port is matched exactly; one without also as ``entry:*`` (the SDK's any-port form)."""
    return [entry] if serving.names_a_port(entry) else [entry, f"{entry}:*"]


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <one of the tokens>``."""

    def __init__(self, app: Any, tokens: Sequence[str]) -> None:
        self.app = app
        self.tokens = [t.encode() for t in tokens]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not serving.bearer_ok(dict(scope.get("headers") or []), self.tokens):
            body = b"missing or wrong bearer token"
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="portagent-mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


async def serve_http(
    governed: GovernedServer,
    server: Any,
    host: str,
    port: int,
    details: dict[str, Any],
    say: Any,
    security: Any = None,
) -> None:
    import socket

    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=security or transport_security(host))
    if governed.tokens:
        app = BearerAuth(app, list(governed.tokens.values()))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/mcp"
    governed.start("streamable-http", {**details, "url": url})
    say(
        f"serving {len(governed.target.tools)} tools of {governed.target.name} on {url}; trace {governed.trace_path}"
    )
    hosts = ", ".join(h for h in (security.allowed_hosts if security else []) if not h.endswith(":*"))
    say(
        ("bearer token required; " if governed.tokens else "")
        + f"Host allowlist: {hosts or 'loopback'} (add names with --allow-host)"
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        await _Uvicorn(config).serve(sockets=[sock])
    finally:
        governed.stop()
        sock.close()


def _uvicorn_server() -> Any:
    import contextlib
    import signal
    import threading

    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn re-raises a captured SIGTERM/SIGINT once it has shut down, which would kill the process
        before the session's ``run.completed`` is written; this one only asks the server to exit."""

        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return Server


def _Uvicorn(config: Any) -> Any:
    return _uvicorn_server()(config)
