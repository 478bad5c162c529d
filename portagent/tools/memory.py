"""The memory tools (``remember``, ``recall``, ``forget``): their handlers, over ``tools/memory_store.py``.

    agent ─► remember / recall / forget   (ToolSpecs in contracts/builtin/memory.yaml: tool_files: [portagent:memory])
          ─► ToolGateway: schema (source, scope, expiry, confidence required) → policy (effect classes:
             remember/forget are reversible_write, recall is read) → approval → ledger
          ─► these handlers ─► MemoryStore ($PORTAGENT_HOME/memory.db)

Writes are governed twice: the gateway (schema, policy, approval — a denied write never reaches a handler)
and the store (``MemoryWrite``: a record without source, scope, expiry or confidence is refused; a paused
store refuses every write). Retrieval ranks by the configurable ch. 04 score and excludes expired,
superseded and retired records (``include_stale`` shows them, ranked below every valid one); each result
carries its explanation and the store records ``last_retrieved``.

Scope separation: a recall sees the actor's ``user`` memories, the calling agent's ``agent`` memories and
every ``project`` memory — never another user's or another agent's.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from portagent.contracts.memory import MemoryWrite
from portagent.tools.memory_store import MemoryStore, MemoryWriteRefused
from portagent.tools.observations import ToolFailure
from portagent.tools.tool_context import ToolContext

# --- the memory tools' handlers (contracts/builtin/memory.yaml) ---------------------------------------


def _owners(ctx: ToolContext) -> dict[str, str]:
    return {"user": ctx.actor, "agent": ctx.agent}


def _owner(scope: str, ctx: ToolContext) -> str:
    return ctx.agent if scope == "agent" else ctx.actor


def _open() -> MemoryStore:
    return MemoryStore()


def remember(
    statement: str,
    source: str,
    scope: str,
    expires_at: str,
    confidence: float,
    ctx: ToolContext,
    type: str = "semantic",
    supersedes: str | None = None,
) -> dict[str, Any]:
    """``remember``: store one governed memory."""
    try:
        write = MemoryWrite(
            statement=statement,
            source=source,
            scope=scope,  # checked by MemoryWrite (and the tool's schema)
            expires_at=expires_at,
            confidence=confidence,
            type=type,
            supersedes=supersedes,
        )
    except ValidationError as e:
        first = e.errors()[0]
        raise ToolFailure("validation_error", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    store = _open()
    try:
        done = store.write_fact(write, owner=_owner(scope, ctx), written_by=f"run:{ctx.run_id}/{ctx.agent}")
    except MemoryWriteRefused as e:
        raise ToolFailure("permission_denied" if "paused" in str(e) else "validation_error", str(e)) from None
    finally:
        store.close()
    record = done.record
    result: dict[str, Any] = {
        "memory_id": record.memory_id,
        "scope": record.scope,
        "owner": record.owner,
        "stored": True,
        "outcome": done.outcome,
    }
    if done.changes:
        result["changes"] = {k: {"was": old, "now": new} for k, (old, new) in done.changes.items()}
    return result


def recall(query: str, ctx: ToolContext, k: int = 5) -> dict[str, Any]:
    """``recall``: the best valid memories for ``query``, each with why it was retrieved."""
    store = _open()
    try:
        found = store.search(query, owners=_owners(ctx), k=k)
    finally:
        store.close()
    return {
        "memories": [
            {
                "memory_id": r.record.memory_id,
                "statement": r.record.statement,
                "source": r.record.source,
                "scope": r.record.scope,
                "confidence": r.record.confidence,
                "expires_at": r.record.expires_at,
                "score": r.score,
                "explanation": r.explanation,
                "last_retrieved": r.record.last_retrieved,
            }
            for r in found
        ]
    }


def forget(memory_id: str, reason: str, ctx: ToolContext) -> dict[str, Any]:
    """``forget``: retire a memory the agent can see (kept for audit, never retrieved again)."""
    store = _open()
    try:
        record = store.retire(memory_id, reason, owners=_owners(ctx))
    except MemoryWriteRefused as e:
        raise ToolFailure("permission_denied", str(e)) from None
    finally:
        store.close()
    return {"memory_id": record.memory_id, "status": record.status}
