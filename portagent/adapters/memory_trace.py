"""``memory.read`` / ``memory.write`` events for portagent's own memory tools (docs/memory.md).

The memory tools run through the gateway like any tool (``tool.call`` … ``tool.result``); after a successful
result, one more event says what the memory store returned or changed, so a trace reader (and compaction)
need not parse tool outputs. Only the shipped handlers (``portagent.tools.memory:*``) count: a user's tool that
happens to be called ``recall`` is not memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from portagent.adapters.port import RunSession
    from portagent.tools.gateway import PreparedCall
    from portagent.tools.observations import Observation

MEMORY_HANDLERS = "portagent.tools.memory:"


def emit_memory_event(session: RunSession, prepared: PreparedCall, obs: Observation) -> None:
    tool = prepared.tool
    if tool is None or not tool.handler.startswith(MEMORY_HANDLERS) or not obs.ok:
        return
    out: Any = obs.output if isinstance(obs.output, dict) else {}
    args: Any = prepared.effective_args if isinstance(prepared.effective_args, dict) else {}
    operation = tool.handler.removeprefix(MEMORY_HANDLERS)
    agent = session.current_agent
    if operation == "recall":
        found = [m for m in out.get("memories", []) if isinstance(m, dict)]
        session.recorder.emit(
            "memory.read",
            agent=agent,
            call_id=prepared.call_id,
            query=str(args.get("query", "")),
            memory_ids=[str(m.get("memory_id")) for m in found],
            scores=[float(m.get("score", 0.0)) for m in found],
        )
    elif operation in ("remember", "forget") and out.get("memory_id"):
        session.recorder.emit(
            "memory.write",
            agent=agent,
            call_id=prepared.call_id,
            operation=operation,
            memory_id=str(out["memory_id"]),
            scope=out.get("scope"),
            owner=out.get("owner"),
        )
