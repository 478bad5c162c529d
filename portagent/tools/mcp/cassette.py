"""``mcp.json``: a run's MCP traffic, kept in its cassette folder beside ``trace.jsonl`` and ``run.json``.

It holds, per server, the tool listing the run used (so a replay declares the same ToolSpecs without
the server) and every ``tools/call`` with its arguments and raw result, in call order. A replay answers
each call from it — matched by server, tool and ``args_hash``, each recorded answer used once, in order
— so a replayed run needs no MCP server. Secrets are refused before anything is written, like every
other recording.

Drift: when a live answer can be compared with a recorded one (re-recording over a folder that has
``mcp.json``, or replaying with live MCP servers, docs/mcp.md), a different answer is reported as an
``McpDrift`` error event; the changed tool result then also reaches the model, so the vendor
cassette's body matching reports ``cassette_drift``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts._base import args_hash as compute_args_hash
from portagent.contracts._base import canonical_json
from portagent.contracts.errors import RecordingError
from portagent.core.files import write_text_atomic

MCP_CASSETTE = "mcp.json"
SCHEMA_VERSION = 1


@dataclass
class RecordedCall:
    server: str
    tool: str
    args: dict[str, Any]
    args_hash: str
    result: dict[str, Any]
    used: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "args": self.args,
            "args_hash": self.args_hash,
            "result": self.result,
        }


@dataclass
class McpCassette:
    """Listings and calls of one run (being recorded, or being replayed)."""

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per server name: ``server`` info, ``fingerprint``, ``tools`` (listed tools, wire form)."""
    calls: list[RecordedCall] = field(default_factory=list)

    # -- reading ---------------------------------------------------------------------------------------

    @classmethod
    def load(cls, folder: Path) -> McpCassette:
        path = folder / MCP_CASSETTE
        if not path.is_file():
            raise RecordingError(
                f"{path}: missing from the cassette folder; the agent uses MCP servers, so "
                "its recording must hold their answers (re-record it with 'portagent record')"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"unsupported schema_version {data.get('schema_version')!r}")
            calls = [
                RecordedCall(c["server"], c["tool"], c["args"], c["args_hash"], c["result"])
                for c in data["calls"]
            ]
            servers = dict(data["servers"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise RecordingError(f"{path}: corrupt MCP cassette ({type(e).__name__}: {e})") from None
        return cls(servers, calls)

    def take(self, server: str, tool: str, args: dict[str, Any]) -> RecordedCall | None:
        """The first unused recorded answer to this exact call, marked used; None when there is none."""
        key = compute_args_hash(args)
        for call in self.calls:
            if not call.used and call.server == server and call.tool == tool and call.args_hash == key:
                call.used = True
                return call
        return None

    def unplayed(self) -> list[str]:
        return [f"{c.server}.{c.tool} {c.args_hash}" for c in self.calls if not c.used]

    # -- writing ---------------------------------------------------------------------------------------

    def add(self, server: str, tool: str, args: dict[str, Any], result: dict[str, Any]) -> None:
        self.calls.append(RecordedCall(server, tool, args, compute_args_hash(args), result))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "servers": self.servers,
            "calls": [c.to_json() for c in self.calls],
        }

    def save(self, folder: Path) -> Path:
        from portagent.recording.scrub import refuse_if_secret

        path = folder / MCP_CASSETTE
        data = self.to_json()
        refuse_if_secret(data, str(path))
        return write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def answer_diff(recorded: dict[str, Any], live: dict[str, Any], limit: int = 20) -> str:
    """A short unified diff between two raw tool results."""
    a = json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(live, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(a, b, "recorded", "live", n=0, lineterm=""))
    return "\n".join(lines[:limit]) + (
        f"\n... ({len(lines) - limit} more lines)" if len(lines) > limit else ""
    )


def same_answer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return canonical_json(_stable(a)) == canonical_json(_stable(b))


def _stable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without ``_meta`` (servers stamp their identity or timing there)."""
    return {k: v for k, v in result.items() if k != "_meta"}
