"""Claude transport cassettes: the NDJSON stream between claude-agent-sdk and the Claude Code CLI,
recorded both ways and replayed without the CLI (design (b) of SDK_NOTES §4.6).

vcrpy cannot see the Claude Agent SDK's model calls: the bundled CLI does the HTTP in its own process.
What portagent can see is the control protocol on the CLI's stdin/stdout, so that is what is recorded:

    transport.jsonl   line 1: header {kind, version, provider, sdk_version, cli_version, options}
                      then one line per JSON message, tagged with its direction:
                        {"dir": "sdk->cli", "msg": {...}}      written by the SDK (our answers, prompts)
                        {"dir": "cli->sdk", "msg": {...}}      read from the CLI (stream, control requests)
                      and markers: {"dir": "cli->sdk", "event": "eof" | "error", ...},
                                   {"dir": "sdk->cli", "event": "end_input" | "abort"}

This module is the format and its vocabulary: reading and writing the file (:class:`TransportCassette`),
what is volatile (:func:`normalize`), labels for reports, :class:`TransportDrift` and the report. The
other parts:

- ``claude_record.RecordingTransport`` wraps the adapter's subprocess transport and keeps every line;
  the file is written after the run, and only if no secret is found in it (``scrub.py``);
- ``claude_replay.ReplayTransport`` plays the CLI's side back; the SDK side (portagent's in-process
  tools, ``can_use_tool``, hooks) really runs and its lines are compared with the recording after
  :func:`normalize`: a difference is :class:`TransportDrift`, which the runner reports as
  ``cassette_drift``;
- ``claude_session.ClaudeCassette`` is what the Claude adapter uses in ``record`` / ``replay`` mode: it
  picks the transport, starts the recording proxy (``claude_proxy``) when the HTTP side is recorded
  too, and fills ``session.cassette_report``.

The header's ``options`` are the ones the CLI was started with (model, system prompt, tools, permission
settings, subagents …, never the environment, paths or the key). With a custom transport the SDK
does not turn options into CLI flags (SDK_NOTES §4.6), so a replay compares them itself: a changed
system prompt or model is drift even though no CLI runs.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from vcr.errors import CannotOverwriteExistingCassetteException

from portagent.contracts.errors import RecordingError
from portagent.recording.scrub import refuse_if_secret
from portagent.recording.vcr_cassette import CassetteReport

TRANSPORT_FILE = "transport.jsonl"
KIND = "portagent-claude-transport"
VERSION = 1
SDK, CLI = "sdk->cli", "cli->sdk"

VOLATILE_KEYS: frozenset[str] = frozenset({"request_id", "uuid", "session_id", "timestamp"})
"""Keys removed (at any depth) before an SDK line is compared with its recording: the SDK's random
``req_<n>_<hex>`` ids, the CLI's session ids and message uuids. Inside strings, run-home paths, uuids,
SDK request ids and ISO-8601 times are replaced by placeholders."""

VOLATILE_OPTIONS: frozenset[str] = frozenset({"cwd", "max_turns", "max_budget_usd"})
"""Recorded CLI options that a replay does not compare: the run folder, and the budgets, which the CLI
only backs up (portagent enforces them itself, on replay too)."""

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_SDK_REQUEST_ID = re.compile(r"\breq_\d+_[0-9a-f]{8}\b")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
"""ISO-8601 times: an approval's ``expires_at`` in a deny message comes from the run's clock, which a
replay seeds from the recording but cannot make tick as the wall clock did."""
_RUN_HOME = re.compile(r"(?:/[^\s\"'/]+)*/portagent-claude-[A-Za-z0-9_]+")
"""The per-run home of ``transport.RunHome`` (a temp folder named ``portagent-claude-…``)."""


# --- normalization -----------------------------------------------------------------------------------


def _normalize_text(text: str) -> Any:
    text = _RUN_HOME.sub("<run_home>", text)
    text = _UUID.sub("<uuid>", text)
    text = _SDK_REQUEST_ID.sub("<request_id>", text)
    text = _TIMESTAMP.sub("<timestamp>", text)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        # Tool results and deny messages carry the gateway's observation as JSON text: compared (and
        # diffed) as parsed JSON, one field per line, rather than as one long string.
        with contextlib.suppress(ValueError):
            return normalize(json.loads(text))
    return text


def normalize(value: Any) -> Any:
    """A message without its volatile parts (see :data:`VOLATILE_KEYS`; run-home paths, uuids and SDK
    request ids inside strings are replaced by placeholders; the in-process MCP server's version, which
    is portagent's own, is dropped)."""
    if isinstance(value, dict):
        out = {k: normalize(v) for k, v in value.items() if k not in VOLATILE_KEYS}
        info = out.get("serverInfo")
        if isinstance(info, dict):
            out["serverInfo"] = {k: v for k, v in info.items() if k != "version"}
        return out
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        return _normalize_text(value)
    return value


def option_summary(options: ClaudeAgentOptions) -> dict[str, Any]:
    """What the CLI is started with, as recorded in the header: the options that change what the CLI
    sends or does, without callbacks, the environment's paths and key, or the CLI's path."""
    servers = options.mcp_servers if isinstance(options.mcp_servers, dict) else {}
    env = {
        k: v
        for k, v in sorted((options.env or {}).items())
        if k.startswith("CLAUDE_CODE_") and k != "CLAUDE_CODE_TMPDIR" and v
    }
    system = options.system_prompt
    return {
        "model": options.model,
        "system_prompt": system if isinstance(system, str | None) else dict(system),
        "tools": options.tools,
        "allowed_tools": list(options.allowed_tools),
        "disallowed_tools": list(options.disallowed_tools),
        "permission_mode": options.permission_mode,
        "permission_prompt_tool_name": options.permission_prompt_tool_name,
        "mcp_servers": {name: cfg.get("type") for name, cfg in servers.items()},
        "strict_mcp_config": options.strict_mcp_config,
        "setting_sources": options.setting_sources,
        "extra_args": dict(options.extra_args),
        "include_partial_messages": options.include_partial_messages,
        "forward_subagent_text": options.forward_subagent_text,
        "output_format": options.output_format,
        "agents": sorted(options.agents) if options.agents else None,
        "max_turns": options.max_turns,
        "max_budget_usd": options.max_budget_usd,
        "cwd": str(options.cwd) if options.cwd is not None else None,
        "env": env,
    }


def compared_options(options: dict[str, Any]) -> dict[str, Any]:
    """The recorded or live options as a replay compares them (see :data:`VOLATILE_OPTIONS`)."""
    out: dict[str, Any] = normalize({k: v for k, v in options.items() if k not in VOLATILE_OPTIONS})
    return out


# --- the file -----------------------------------------------------------------------------------------


@dataclass
class Entry:
    """One line of a transport cassette after the header."""

    dir: str
    """``sdk->cli`` or ``cli->sdk``."""
    msg: dict[str, Any] | None = None
    """The JSON message, or None for a marker."""
    event: str | None = None
    """Marker: ``eof`` / ``error`` (cli->sdk), ``end_input`` / ``abort`` (sdk->cli)."""
    error: dict[str, Any] | None = None
    """For ``error``: ``{type, message, exit_code, stderr}`` of what reading the CLI raised."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir}
        if self.msg is not None:
            out["msg"] = self.msg
        if self.event is not None:
            out["event"] = self.event
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class TransportCassette:
    """A loaded (or recorded) ``transport.jsonl``."""

    path: Path
    header: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(1 for e in self.entries if e.msg is not None)

    def lines(self) -> list[dict[str, Any]]:
        return [self.header, *(e.to_json() for e in self.entries)]

    def save(self, *, secrets: list[str] | None = None) -> None:
        """Write the file, refusing (nothing written) if a secret is found in any line."""
        lines = self.lines()
        for n, line in enumerate(lines, 1):
            refuse_if_secret(line, f"{self.path} (line {n})", extra=secrets)
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.path)

    @classmethod
    def load(cls, path: Path) -> TransportCassette:
        """Read and check a cassette; every problem is a ``RecordingError`` naming the file."""
        if not path.is_file():
            raise RecordingError(
                f"{path}: cassette not found (record it with 'portagent record … --providers claude')"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise RecordingError(
                f"{path}: not readable as a transport cassette ({type(e).__name__}: {e})"
            ) from None
        rows = text.splitlines()
        if not rows or not rows[0].strip():
            raise RecordingError(f"{path}: empty transport cassette (re-record it)")
        try:
            header = json.loads(rows[0])
        except ValueError:
            hint = (
                " — it looks like a vcrpy HTTP cassette (openai / adk), not a Claude transport cassette"
                if rows[0].startswith(("interactions:", "version:", "- request:"))
                else ""
            )
            raise RecordingError(f"{path}: line 1 is not a transport cassette header{hint}") from None
        if not isinstance(header, dict) or header.get("kind") != KIND:
            raise RecordingError(
                f"{path}: not a portagent Claude transport cassette (line 1 has no kind: {KIND!r})"
            )
        if header.get("provider") != "claude":
            raise RecordingError(f"{path}: a cassette of provider {header.get('provider')!r}, not 'claude'")
        if header.get("version") != VERSION:
            raise RecordingError(
                f"{path}: transport cassette version {header.get('version')!r}; this portagent "
                f"reads version {VERSION} (re-record it)"
            )
        cassette = cls(path, header)
        for n, row in enumerate(rows[1:], 2):
            if not row.strip():
                continue
            try:
                data = json.loads(row)
            except ValueError:
                raise RecordingError(
                    f"{path}: line {n} is not JSON (a truncated or corrupt transport cassette; re-record it)"
                ) from None
            cassette.entries.append(_entry(data, path, n))
        return cassette


def _entry(data: Any, path: Path, n: int) -> Entry:
    if not isinstance(data, dict) or data.get("dir") not in (SDK, CLI):
        raise RecordingError(f"{path}: line {n} has no direction ('dir': {SDK!r} or {CLI!r})")
    msg, event = data.get("msg"), data.get("event")
    if msg is not None and not isinstance(msg, dict):
        raise RecordingError(f"{path}: line {n}: 'msg' must be a JSON object")
    allowed = {CLI: ("eof", "error"), SDK: ("end_input", "abort")}[data["dir"]]
    if msg is None and event not in allowed:
        raise RecordingError(f"{path}: line {n}: neither a message nor a known marker ({', '.join(allowed)})")
    return Entry(data["dir"], msg, event if msg is None else None, data.get("error"))


def new_header(options: dict[str, Any]) -> dict[str, Any]:
    from claude_agent_sdk._cli_version import __cli_version__

    from portagent.adapters.base import package_version

    return {
        "kind": KIND,
        "version": VERSION,
        "provider": "claude",
        "sdk": "claude-agent-sdk",
        "sdk_version": package_version("claude-agent-sdk"),
        "cli_version": __cli_version__,
        "options": options,
    }


# --- describing lines (reports, diffs) ----------------------------------------------------------------


def describe(entry: Entry, requests: dict[str, dict[str, Any]] | None = None) -> str:
    """A short label: ``cli->sdk control_request can_use_tool mcp__portagent__send_email``."""
    if entry.msg is None:
        return f"{entry.dir} {entry.event}"
    return f"{entry.dir} {describe_message(entry.msg, requests)}"


def describe_message(msg: dict[str, Any], requests: dict[str, dict[str, Any]] | None = None) -> str:
    kind = str(msg.get("type"))
    if kind == "control_request":
        return f"control_request {_describe_request(msg.get('request') or {})}"
    if kind == "control_response":
        rid = (msg.get("response") or {}).get("request_id")
        asked = (requests or {}).get(str(rid))
        return "control_response" + (f" to {_describe_request(asked)}" if asked is not None else "")
    if kind == "stream_event":
        return f"stream_event {(msg.get('event') or {}).get('type')}"
    if kind in ("system", "result"):
        return f"{kind} {msg.get('subtype')}"
    return kind


def _describe_request(request: dict[str, Any]) -> str:
    subtype = str(request.get("subtype"))
    if subtype == "mcp_message":
        rpc = request.get("message") or {}
        name = (rpc.get("params") or {}).get("name") if rpc.get("method") == "tools/call" else None
        return " ".join(str(x) for x in (subtype, rpc.get("method"), name) if x)
    if subtype == "can_use_tool":
        return f"{subtype} {request.get('tool_name')}"
    if subtype == "hook_callback":
        data = request.get("input") or {}
        return " ".join(str(x) for x in (subtype, data.get("hook_event_name"), data.get("tool_name")) if x)
    return subtype


# --- drift ---------------------------------------------------------------------------------------------


class _Line:
    """A transport line in the shape ``vcr_cassette.describe_mismatch`` reads (method, path, body)."""

    def __init__(self, method: str, path: str, body: Any) -> None:
        self.method = method
        self.path = path
        self.body = json.dumps(body, ensure_ascii=False)


class TransportDrift(CannotOverwriteExistingCassetteException):  # type: ignore[misc]  # vcrpy is untyped
    """The SDK side of a replayed Claude run differs from its recording.

    A vcrpy ``CannotOverwriteExistingCassetteException`` on purpose: the runner already turns that
    into ``stop_reason: cassette_drift`` with ``describe_mismatch``'s readable diff, for every provider.
    """

    def __init__(
        self, what: str, reason: str, *, sent: Any = None, recorded: Any = None, aspect: str = "answer"
    ) -> None:
        self.cassette = None
        self.reason = reason
        self.failed_request = _Line(what.split(" ", 1)[0], what.split(" ", 1)[1] if " " in what else "", sent)
        self.similar_requests: list[tuple[_Line, list[str], list[tuple[str, str]]]] = (
            [(_Line("", "", recorded), [], [(aspect, reason)])] if recorded is not None else []
        )
        Exception.__init__(self, f"the SDK sent {what} ({reason})")


class TransportReport(CassetteReport):
    """``CassetteReport`` of a Claude transport cassette, plus what changed since the recording."""

    def __init__(self) -> None:
        super().__init__()
        self.version_changes: list[str] = []
        self.http: dict[str, Any] | None = None

    def as_details(self) -> dict[str, Any]:
        out = super().as_details()
        if self.version_changes:
            out["version_changes"] = self.version_changes
        if self.http is not None:
            out["http"] = self.http
        return out
