"""How the Claude adapter reaches the Claude Code CLI: portagent's ``Transport`` wrapper, the
transport seam for cassettes, and the isolated run home.

The Claude Agent SDK drives the bundled Claude Code CLI over NDJSON on stdin/stdout. portagent
always talks to it through :class:`PortagentTransport`, a thin wrapper around whatever transport
the seam supplies (by default the SDK's own ``SubprocessCLITransport``):

    ClaudeSDKClient(options, transport=PortagentTransport(factory(first_user_message, cli_options)))

**The seam** — ``session.options.extra["claude_transport_factory"]``: a callable
``(prompt, cli_options: ClaudeAgentOptions) -> claude_agent_sdk.Transport``. A recording transport
wraps ``SubprocessCLITransport(prompt, cli_options)`` and writes every line both ways; a replay
transport ignores ``cli_options`` and plays the lines back without starting the CLI. Nothing else
changes: the in-process MCP tools, ``can_use_tool`` and the hooks run again on replay.

Two traps decide how ``cli_options`` is built (SDK_NOTES §4.6):

- with a custom transport the SDK does not turn ``options`` into CLI flags, so the inner
  transport must get them itself;
- the SDK adds ``permission_prompt_tool_name="stdio"`` when ``can_use_tool`` is set; without that
  flag the CLI never asks ``can_use_tool`` and silently denies every tool in ``default`` mode. The
  inner transport gets ``dataclasses.replace(options, permission_prompt_tool_name="stdio")`` while
  the client keeps the original options (setting it on both raises ``ValueError``).

The wrapper also reads the CLI's ``mcp_message`` ``tools/call`` requests as they pass: each carries
``_meta["claudecode/toolUseId"]``, the vendor id the SDK does not hand to an in-process tool
handler. The adapter uses it to find the call ``can_use_tool`` already decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections import defaultdict, deque
from collections.abc import AsyncIterable, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, Transport

from portagent.contracts._base import canonical_json

TransportFactory = Callable[[str | AsyncIterable[dict[str, Any]], ClaudeAgentOptions], Transport]
"""``(prompt, cli_options) -> Transport``: what ``session.options.extra["claude_transport_factory"]`` holds.
``prompt`` is the run's first user message (the client sends every message over ``write()``; a transport
needs it only to label a recording)."""

TRANSPORT_FACTORY_KEY = "claude_transport_factory"
"""The ``RunOptions.extra`` key of the transport seam."""

TOOL_USE_META = "claudecode/toolUseId"
"""Where Claude Code 2.1 puts the ``tool_use`` id in an MCP ``tools/call`` request."""


def subprocess_transport(
    prompt: str | AsyncIterable[dict[str, Any]], cli_options: ClaudeAgentOptions
) -> Transport:
    """The default: the SDK's own subprocess transport (starts the CLI)."""
    # Private module path in claude-agent-sdk 0.2.189; imported lazily so a replay needs no CLI.
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    return SubprocessCLITransport(prompt=prompt, options=cli_options)


class PortagentTransport(Transport):
    """Delegates to the inner transport; remembers ``tool_use`` ids of in-process tool calls."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self._tool_use_ids: dict[tuple[str, str, str], deque[str]] = defaultdict(deque)

    async def connect(self) -> None:
        await self.inner.connect()

    async def write(self, data: str) -> None:
        await self.inner.write(data)

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._read()

    async def _read(self) -> AsyncIterator[dict[str, Any]]:
        async for message in self.inner.read_messages():
            if message.get("type") == "control_request":
                self._note_tool_call(message.get("request") or {})
            yield message

    def _note_tool_call(self, request: dict[str, Any]) -> None:
        if request.get("subtype") != "mcp_message":
            return
        rpc = request.get("message") or {}
        if rpc.get("method") != "tools/call":
            return
        params = rpc.get("params") or {}
        tool_use_id = (params.get("_meta") or {}).get(TOOL_USE_META)
        if isinstance(tool_use_id, str):
            key = (
                str(request.get("server_name")),
                str(params.get("name")),
                canonical_json(params.get("arguments") or {}),
            )
            self._tool_use_ids[key].append(tool_use_id)

    def take_tool_use_id(self, server: str, tool: str, arguments: Any) -> str | None:
        """The vendor id of the ``tools/call`` that is about to run this tool with these arguments."""
        queue = self._tool_use_ids.get((server, tool, canonical_json(arguments or {})))
        return queue.popleft() if queue else None

    def _process(self) -> Any:
        """The CLI process of a ``SubprocessCLITransport`` (its private ``_process``), found through up to
        three wrappers that keep theirs in ``inner`` (a recording transport); None for a replay."""
        transport: Any = self.inner
        for _ in range(4):
            if transport is None:
                return None
            process = getattr(transport, "_process", None)
            if process is not None:
                return process
            transport = getattr(transport, "inner", None)
        return None

    def _chain(self) -> list[Any]:
        """The wrapped transports, outermost first (a recording transport keeps its own in ``inner``)."""
        chain: list[Any] = []
        transport: Any = self.inner
        while transport is not None and len(chain) < 4:
            chain.append(transport)
            transport = getattr(transport, "inner", None)
        return chain

    def abort(self) -> None:
        """Stop the CLI now (run cancelled or stopped): the SDK's ``close()`` first waits up to 5 s for
        the CLI to exit on its own, which would overshoot ``timeout_s``. Replay transports have no process.
        Wrappers with an ``on_abort()`` (cassette transports) are told first: a recording keeps nothing the
        dying CLI still prints, a replay stops playing."""
        for transport in self._chain():
            hook = getattr(transport, "on_abort", None)
            if callable(hook):
                hook()
        process = self._process()
        if process is not None and getattr(process, "returncode", 0) is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                process.terminate()

    async def close(self) -> None:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # Closing because the run was cancelled (timeout_s): the SDK's own close runs before any
            # adapter code sees the cancellation, so the CLI is stopped here.
            self.abort()
        process = self._process()
        await self.inner.close()
        # The SDK waits for the CLI to exit but leaves asyncio's subprocess transport open; it is then
        # closed by the garbage collector, often after asyncio.run() closed the loop ("Event loop is
        # closed" noise). Close it while the loop is alive.
        transport = getattr(process, "_transport", None)
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()

    def is_ready(self) -> bool:
        return self.inner.is_ready()

    async def end_input(self) -> None:
        await self.inner.end_input()


# --- isolation ---------------------------------------------------------------------------------------

# Variables of the user's own environment that would change what the CLI does (credentials, model
# overrides, Bedrock/Vertex routing, custom headers...). The SDK merges ``options.env`` over
# ``os.environ``, so an inherited one can only be neutralised by overriding it with "".
_INHERITED_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE")

_DEFAULT_BASE_URL = "https://api.anthropic.com"


class RunHome:
    """A throw-away home for one run: ``HOME``, ``CLAUDE_CONFIG_DIR``, temp and cache folders.

    Created under ``base`` (the run's workdir) or the system temp folder; ``remove()`` deletes it.
    The CLI's working directory is ``cwd`` when given, else ``<home>/work``.
    """

    def __init__(self, base: Path | None, cwd: Path | None = None) -> None:
        if base is not None:
            base.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="portagent-claude-", dir=base))
        self.home = self.root / "home"
        self.config = self.home / ".claude"
        self.tmp = self.root / "tmp"
        self.cwd = cwd if cwd is not None else self.root / "work"
        for d in (self.config, self.tmp, self.cwd):
            d.mkdir(parents=True, exist_ok=True)

    def env(
        self, *, base_url: str | None, api_key: str | None, extra: dict[str, str] | None = None
    ) -> dict[str, str]:
        """The CLI's environment overrides (merged by the SDK over ``os.environ``)."""
        env = {
            k: ""
            for k in os.environ
            if k.startswith(_INHERITED_PREFIXES) and not k.startswith("CLAUDE_AGENT_SDK_")
        }
        env.update(
            {
                "HOME": str(self.home),
                "CLAUDE_CONFIG_DIR": str(self.config),
                # Claude Code keeps task outputs under /tmp/claude-<uid>/ unless told otherwise.
                "CLAUDE_CODE_TMPDIR": str(self.tmp),
                "TMPDIR": str(self.tmp),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "XDG_CACHE_HOME": str(self.home / ".cache"),
                "XDG_DATA_HOME": str(self.home / ".local" / "share"),
                "XDG_STATE_HOME": str(self.home / ".local" / "state"),
                # The only switch that stops every call to api.anthropic.com other than the model calls
                # (bootstrap, telemetry, MCP registry) and the extra title-generation model call (§4.5).
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                # Claude Code 2.1 starts Agent-tool subagents in the background by default: the parent gets
                # "Async agent launched" at once and is woken later. Agent-as-tool means the coordinator
                # waits for the answer, so background tasks are turned off (verified: is_backgrounded false).
                "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
                "ANTHROPIC_BASE_URL": (base_url or _DEFAULT_BASE_URL).rstrip("/"),
                # "" rather than inheriting the caller's key: a run without a key fails "Not logged in".
                "ANTHROPIC_API_KEY": api_key or "",
            }
        )
        env.update(extra or {})
        return env

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)
