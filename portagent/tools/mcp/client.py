"""One connection to one MCP server (stdio or streamable HTTP), for the length of a run.

The MCP SDK's client opens anyio task groups that must be exited by the task that entered them, while
SDKs call tools from tasks of their own. So each connection is *owned* by a dedicated task that enters
``mcp.Client``, reports ready, and waits to be closed; calls are made from any task of the same loop.
Every step is bounded: start-up + initialize + listing by ``timeout_s``, each call by the caller's
timeout (the gateway's ``timeout_ms``), shutdown by the SDK's own bounded escalation.

A server that exits mid-run closes the connection: the call in flight and every later call fail with
``McpServerError`` naming the server and the tail of its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from portagent.contracts.agent import McpServerRef
from portagent.core import secrets
from portagent.tools.mcp.errors import McpConfigError, McpServerError

CONNECTION_CLOSED = -32000
"""JSON-RPC code the MCP SDK uses for a connection that closed under a request."""
MAX_PAGES = 100
"""Bound on ``tools/list`` pagination (a paginator that never ends cannot hang a run)."""
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def describe(ref: McpServerRef) -> str:
    """How a server is reached, for messages: ``stdio `python server.py``` or the URL."""
    if ref.command is not None:
        return f"stdio `{shlex.join(ref.command)}`"
    return str(ref.url)


def expand_env(ref: McpServerRef) -> dict[str, str]:
    """``env`` with ``${NAME}`` replaced from portagent's environment (a missing one is an error).

    Each variable put in is secret-named from then on (``secrets.protect_variable``), whatever it is called:
    ``${NAME}`` exists so that no secret is written in the spec, and a server that echoes it back (an
    error message, a ``whoami``) would otherwise put it in cassette.yaml, mcp.json and trace.jsonl."""
    out: dict[str, str] = {}
    for key, value in ref.env.items():
        missing = [m.group(1) for m in _VAR.finditer(value) if m.group(1) not in os.environ]
        if missing:
            raise McpConfigError(
                f"MCP server {ref.name!r}: env {key} refers to ${{{missing[0]}}}, which is "
                "not set in portagent's environment"
            )
        for m in _VAR.finditer(value):
            secrets.protect_variable(m.group(1))
        out[key] = _VAR.sub(lambda m: os.environ[m.group(1)], value)
    return out


def resolve_command(ref: McpServerRef, base_dir: Path) -> tuple[str, list[str], Path]:
    """The executable (found now, so a typo is a clear configuration error), its arguments, the cwd."""
    assert ref.command is not None
    cwd = (
        base_dir
        if ref.cwd is None
        else (base_dir / ref.cwd if not Path(ref.cwd).is_absolute() else Path(ref.cwd))
    )
    if not cwd.is_dir():
        raise McpConfigError(f"MCP server {ref.name!r}: cwd {str(cwd)!r} is not a folder")
    exe = ref.command[0]
    if exe == "python":  # the interpreter running portagent, whatever PATH says (docs/mcp.md)
        found: str | None = sys.executable
    elif os.sep in exe or (os.altsep and os.altsep in exe):
        path = Path(exe) if Path(exe).is_absolute() else cwd / exe
        found = str(path) if path.is_file() and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(exe)
    if found is None:
        raise McpConfigError(
            f"MCP server {ref.name!r}: command {exe!r} not found (searched "
            f"{'the folder ' + str(cwd) if os.sep in exe else 'PATH'}); "
            f"fix mcp_servers[{ref.name}].command"
        )
    return found, list(ref.command[1:]), cwd


class McpConnection:
    """A live connection to one server. ``await open()``, ``list_tools()``, ``call()``, ``aclose()``."""

    def __init__(self, ref: McpServerRef, base_dir: Path) -> None:
        self.ref = ref
        self.base_dir = base_dir
        self.client: Any = None
        self.closed_reason: str | None = None
        """Set once the server is known to be gone: every later call fails at once with it."""
        # The server's stderr, kept for error messages; closed in aclose().
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._http: Any = None

    @property
    def name(self) -> str:
        return self.ref.name

    # -- life cycle ------------------------------------------------------------------------------------

    def _transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.ref.command is not None:
            exe, args, cwd = resolve_command(self.ref, self.base_dir)
            params = StdioServerParameters(command=exe, args=args, env=expand_env(self.ref) or None, cwd=cwd)
            return stdio_client(params, errlog=self._stderr)
        from mcp.client.streamable_http import streamable_http_client

        self._http = _direct_http_client(self.ref.call_timeout_s)
        return streamable_http_client(str(self.ref.url), http_client=self._http)

    async def open(self) -> None:
        """Start (stdio) or reach (HTTP) the server and complete the initialize handshake."""
        transport = self._transport()  # configuration errors surface here, before anything starts
        self._task = asyncio.create_task(self._own(transport), name=f"mcp:{self.name}")
        waiter = asyncio.create_task(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {self._task, waiter}, timeout=self.ref.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
        if self._ready.is_set():
            return
        if self._task in done:
            exc = self._task.exception()
            verb = "start" if self.ref.command is not None else "connect"
            raise McpServerError(
                f"MCP server {self.name!r} ({describe(self.ref)}) failed to {verb}: "
                f"{_reason(exc)}{self._stderr_tail()}"
            ) from exc
        await self._stop()
        raise McpServerError(
            f"MCP server {self.name!r} ({describe(self.ref)}) did not complete initialize within "
            f"{self.ref.timeout_s:g} s (mcp_servers[{self.name}].timeout_s){self._stderr_tail()}",
            retryable=True,
        )

    async def _own(self, transport: Any) -> None:
        from mcp import Client, Implementation

        from portagent.core.versions import PORTAGENT_VERSION as __version__

        info = Implementation(name="portagent", version=__version__)
        async with contextlib.AsyncExitStack() as stack:
            if self._http is not None:  # a client we hand to the SDK is ours to close
                await stack.enter_async_context(self._http)
            client = await stack.enter_async_context(
                Client(transport, client_info=info, read_timeout_seconds=self.ref.call_timeout_s)
            )
            self.client = client
            self._ready.set()
            await self._closing.wait()

    async def _stop(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task})  # unlike `await task`, a cancellation of this task still propagates
        if not task.cancelled():
            task.exception()  # a broken connection's teardown noise: retrieved, not logged

    async def aclose(self) -> None:
        """Close the connection (stdio: the SDK closes stdin, then terminates, then kills; bounded)."""
        self._closing.set()
        task = self._task
        if task is not None and not task.done():
            try:
                async with asyncio.timeout(10.0):
                    await asyncio.shield(task)
            except BaseException:  # a broken connection's teardown noise, or a server that will not die
                await self._stop()
                if _being_cancelled():  # Ctrl-C or a caller's cancel: stopped, and passed on
                    raise
        self._stderr.close()

    # -- requests --------------------------------------------------------------------------------------

    async def list_tools(self) -> list[Any]:
        """Every listed tool (all pages), within ``timeout_s``."""
        tools: list[Any] = []
        cursor: str | None = None

        async def walk() -> None:
            nonlocal cursor
            for _ in range(MAX_PAGES):
                page = await self.client.list_tools(cursor=cursor, cache_mode="refresh")
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return
            raise McpServerError(f"MCP server {self.name!r} paginated tools/list beyond {MAX_PAGES} pages")

        try:
            async with asyncio.timeout(self.ref.timeout_s):
                await walk()
        except TimeoutError:
            raise McpServerError(
                f"MCP server {self.name!r} did not list its tools within {self.ref.timeout_s:g} s",
                retryable=True,
            ) from None
        except McpServerError:
            raise
        except Exception as e:
            raise McpServerError(
                f"MCP server {self.name!r} failed to list its tools: {_reason(e)}{self._stderr_tail()}"
            ) from e
        return tools

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        """``tools/call``; the raw ``CallToolResult``. A closed connection raises ``McpServerError``."""
        if self.closed_reason is not None:
            raise McpServerError(self.closed_reason)
        try:
            from portagent.tracing.propagation import HEADER, as_otel_parent, current_header

            parent = current_header()  # W3C trace context of the calling run (docs/a2a.md)
            with as_otel_parent(parent):  # the SDK re-injects _meta.traceparent from the OTel context
                return await self.client.call_tool(tool, args, meta={HEADER: parent} if parent else None)
        except Exception as e:
            if _is_closed(e) or (self._task is not None and self._task.done()):
                self.closed_reason = (
                    f"MCP server {self.name!r} ({describe(self.ref)}) closed the connection "
                    f"(it exited or crashed) while {tool!r} was running; later calls to it fail"
                    f"{self._stderr_tail()}"
                )
                raise McpServerError(self.closed_reason) from e
            raise McpServerError(f"MCP server {self.name!r} failed on {tool!r}: {_reason(e)}") from e

    @property
    def server_info(self) -> dict[str, Any]:
        info = getattr(self.client, "server_info", None)
        out: dict[str, Any] = {}
        if info is not None:
            out = {"name": info.name, "version": info.version}
        with contextlib.suppress(Exception):
            out["protocol_version"] = self.client.protocol_version
        return out

    def _stderr_tail(self, limit: int = 600) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().strip()
        except (OSError, ValueError):
            return ""
        if not text:
            return ""
        tail = text[-limit:]
        return f"; its stderr ends with: {tail}"


def _being_cancelled() -> bool:
    """Whether the running task has a cancellation pending (not one an ``asyncio.timeout`` took back)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _is_closed(e: BaseException) -> bool:
    import anyio
    from mcp.shared.exceptions import MCPError

    if isinstance(e, MCPError):
        return (
            getattr(e, "code", None) == CONNECTION_CLOSED
            or getattr(getattr(e, "error", None), "code", None) == CONNECTION_CLOSED
        )
    return isinstance(e, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | EOFError)


def _reason(e: BaseException | None) -> str:
    if e is None:
        return "unknown error"
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_reason(x) for x in e.exceptions)
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _direct_http_client(read_timeout_s: float) -> Any:
    """An httpx2 client whose requests bypass vcrpy.

    A run being recorded or replayed has vcrpy patched into ``httpx2.AsyncHTTPTransport``: MCP
    traffic would land in (or be looked up in) the *vendor* cassette, and a long-lived SSE stream
    would be buffered forever. MCP calls are recorded by portagent itself (``mcp.json``), so this
    transport calls the unpatched method — the one vcrpy saved when it was imported.
    """
    import httpx2

    class _Direct(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            patch = sys.modules.get("vcr.patch")
            original = (
                getattr(patch, "_Httpx2AsyncHttpTransport_handle_async_request", None) if patch else None
            )
            if original is None:
                return await super().handle_async_request(request)
            return await original(self, request)

    timeout = httpx2.Timeout(30.0, read=max(read_timeout_s, 30.0))
    return httpx2.AsyncClient(transport=_Direct(), timeout=timeout)
