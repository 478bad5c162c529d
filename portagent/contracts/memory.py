"""Memory contracts (design source ch. 04): a governed record, the write request, retrieval weights.

A memory is a *fact with a source*, stored outside any model call and retrievable later — not the session
history (``runtime/sessions.py``), which is never promoted to memory automatically. Every record carries its
source, scope, owner, confidence and an explicit expiry (a date, or ``never`` said on purpose); a write
missing any of them is rejected (the ch. 04 ``memory_policy``: "memory without a source is never promoted").
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field, field_validator

from portagent.contracts._base import Contract

MemoryScope = Literal["user", "agent", "project"]
"""Whose memory: one user's (owner = the actor), one agent's (owner = the agent), or the project's."""
MemoryType = Literal["episodic", "semantic", "procedural", "artifact"]
"""The ch. 04 layers: events, stable facts, work rules, object references."""
MemoryStatus = Literal["active", "superseded", "retired"]
"""``superseded``: replaced by a newer record; ``retired``: forgotten by an agent (kept for audit)."""

EXPIRES_RE = re.compile(
    r"^(never|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?)$"
)
"""``never``, a date (``2027-01-31``, the end of that day UTC) or an ISO 8601 date-time."""
MEMORY_ID_RE = r"^mem_[0-9a-f]{16}$"


def parse_expiry(value: str) -> datetime | None:
    """``never`` → None; a date → the end of that day (UTC); a date-time → itself (UTC when naive)."""
    if not EXPIRES_RE.match(value):
        raise ValueError(f"expires_at must be 'never' or an ISO 8601 date or date-time, got {value!r}")
    if value == "never":
        return None
    if len(value) == 10:
        return datetime.fromisoformat(value + "T23:59:59.999").replace(tzinfo=UTC)
    dt = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def memory_id_for(scope: str, owner: str, statement: str, source: str) -> str:
    """Deterministic id: the same fact from the same source in the same scope is the same record."""
    text = "\x1f".join((scope, owner, " ".join(statement.split()), source.strip()))
    return "mem_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class MemoryWrite(Contract):
    """What a writer must state to store a memory; anything missing is a rejection, not a default."""

    statement: Annotated[str, Field(min_length=3, max_length=1000)]
    """One atomic statement."""
    source: Annotated[str, Field(min_length=3, max_length=500)]
    """Where it comes from: a file and line, a URL, a tool result (``tool:get_order@call_3``), a person."""
    scope: MemoryScope
    """Whose memory it is."""
    expires_at: str
    """``never`` (said on purpose) or an ISO 8601 date / date-time after which it is not retrieved."""
    confidence: Annotated[float, Field(ge=0, le=1)]
    """How sure the writer is, 0-1 (authority in the retrieval score)."""
    type: MemoryType = "semantic"
    """The memory layer."""
    supersedes: str | None = None
    """The id of the record this one replaces (it becomes ``superseded``)."""

    @field_validator("statement", "source")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()

    @field_validator("expires_at")
    @classmethod
    def _expiry_form(cls, v: str) -> str:
        parse_expiry(v)
        return v


class MemoryRecord(Contract):
    """A stored memory, with its provenance and retrieval history."""

    memory_id: Annotated[str, Field(pattern=MEMORY_ID_RE)]
    """``mem_`` + 16 hex (``memory_id_for``)."""
    statement: str
    """The atomic statement."""
    source: str
    """Where it comes from."""
    scope: MemoryScope
    """Whose memory."""
    type: MemoryType = "semantic"
    """The memory layer."""
    owner: Annotated[str, Field(min_length=1)]
    """Who owns it: the actor (user/project scope) or the agent (agent scope); required."""
    confidence: Annotated[float, Field(ge=0, le=1)]
    """Writer's confidence."""
    created_at: str
    """When it was written (ISO 8601 UTC)."""
    expires_at: str
    """``never`` or when it stops being retrievable."""
    supersedes: str | None = None
    """The record it replaced."""
    superseded_by: str | None = None
    """The record that replaced it."""
    status: MemoryStatus = "active"
    """active / superseded / retired."""
    retired_reason: str | None = None
    """Why it was forgotten."""
    written_by: str = ""
    """Who wrote it: ``run:<run_id>/<agent>`` for a memory tool, ``cli:<user>`` for ``memory add``."""
    updated_at: str | None = None
    """Last human edit."""
    last_retrieved: str | None = None
    """When a recall last returned it."""
    retrieval_count: int = 0
    """How many recalls returned it."""

    def expired(self, now: datetime) -> bool:
        when = parse_expiry(self.expires_at)
        return when is not None and when <= now


class RetrievalWeights(Contract):
    """``score = α·rel + β·vig + γ·authority − δ·noise − λ·cost`` (ch. 04), each part in [0, 1]."""

    alpha: Annotated[float, Field(ge=0)] = 0.5
    """Relevance: share of the query's terms found in the statement."""
    beta: Annotated[float, Field(ge=0)] = 0.3
    """Validity: 1 for an active, unexpired record; 0 for an expired, superseded or retired one."""
    gamma: Annotated[float, Field(ge=0)] = 0.15
    """Authority: the record's confidence."""
    delta: Annotated[float, Field(ge=0)] = 0.1
    """Noise: share of the statement's terms the query does not ask about (vaguely similar records)."""
    lam: Annotated[float, Field(ge=0)] = 0.05
    """Cost: the statement's estimated tokens / 250, capped at 1."""


class Recalled(Contract):
    """One retrieved memory with why it ranked where it did."""

    record: MemoryRecord
    """The record (``last_retrieved`` is this retrieval's time)."""
    score: float
    """Its score."""
    parts: dict[str, float]
    """rel, vig, authority, noise, cost."""
    explanation: str
    """The score in words: matched terms, validity, confidence."""
    previous_retrieval: str | None = None
    """When it was retrieved before this time."""
