"""The handoff package: what lets work continue without re-reading everything (design source ch. 04 §2-3).

Built by compaction from trace events (``tracing/handoff.py``), valid when ``O ∧ D ∧ P ∧ E ∧ N`` hold — a goal,
decisions with reasons, limits, evidence (artifacts or sources by reference), a next step — with ids and an
owner, and **checked against the trace**: every claim names the events behind it (``<run_id>#<seq>``), and a
claim whose event is absent, or says something else, fails. Only what a person may decide (when the work is
done, limits, decisions, pending work) may instead be ``stated:<who>``.

The book's gaps, fixed: decisions and limits are checked, ids and owner are required, the clock is injected,
sources are ``{title, ref}`` everywhere, several next steps are an error rather than "the last one wins".
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from portagent.contracts._base import Contract
from portagent.contracts.memory import MemoryWrite

HANDOFF_VERSION = "1.0"
EVIDENCE_RE = r"^([A-Za-z0-9_.:-]+#\d+|stated:.+)$"
"""``<run_id>#<seq>`` (a trace event) or ``stated:<who>`` (a person's statement)."""

Evidence = Annotated[str, Field(pattern=EVIDENCE_RE)]


class Claim(Contract):
    """One statement of the package and the events behind it."""

    text: Annotated[str, Field(min_length=1)]
    """The statement."""
    evidence: list[Evidence] = []
    """``<run_id>#<seq>`` of the events that show it, or ``stated:<who>``."""


class DecisionClaim(Contract):
    """A decision taken, with its reason."""

    decision: Annotated[str, Field(min_length=1)]
    """What was decided."""
    reason: Annotated[str, Field(min_length=1)]
    """Why."""
    evidence: list[Evidence] = []
    """The events (a policy decision, an approval, a handoff) or ``stated:<who>``."""


class ActionClaim(Contract):
    """A tool call that was made, and how it ended (``build executed`` ⇔ a ``tool.result`` exists)."""

    tool: str
    """The tool."""
    call_id: str
    """portagent's call id in that run."""
    run_id: str
    """The run."""
    outcome: str
    """``ok`` or the error code of its result."""
    evidence: list[Evidence] = []
    """The ``tool.call`` and ``tool.result`` events."""


class ArtifactRef(Contract):
    """An artifact by reference, never its content."""

    ref: str
    """``effect:<id>``, ``trace:<path>``, ``session:<id>``, a path or URL."""
    kind: str
    """``effect``, ``trace``, ``transcript``, ``file`` …"""
    hash: str | None = None
    """A content hash when known."""
    evidence: list[Evidence] = []
    """The event that produced or names it."""


class SourceRef(Contract):
    """A source to reopen, by title and reference."""

    title: str
    """What it is."""
    ref: str
    """Where to find it (URL, path, ``memory:<id>``)."""
    evidence: list[Evidence] = []
    """The event that consulted it."""


class MemoryCandidate(MemoryWrite):
    """A durable fact proposed for memory (never written automatically: ``remember`` or ``memory add``)."""

    owner: Annotated[str, Field(min_length=1)]
    """Who would own it."""


class HandoffPackage(Contract):
    """The continuity package (ch. 04 handoff YAML, typed)."""

    handoff_version: Literal["1.0"] = "1.0"
    """Format version."""
    handoff_id: Annotated[str, Field(pattern=r"^ho_[0-9a-f]{16}$")]
    """Deterministic id over the content."""
    owner: Annotated[str, Field(min_length=1)]
    """Who is responsible for the work handed over."""
    created_at: str
    """When it was built (the injected clock)."""
    runs: list[str]
    """The runs it compacts, in order."""
    goal: Claim | None = None
    """O: the current objective."""
    done_when: list[Claim] = []
    """Closing criteria."""
    limits: list[Claim] = []
    """P: permissions and limits that held."""
    decisions: list[DecisionClaim] = []
    """D: decisions with reasons."""
    actions: list[ActionClaim] = []
    """Tool calls made and how they ended."""
    artifacts: list[ArtifactRef] = []
    """E: artifacts by reference."""
    sources: list[SourceRef] = []
    """E: sources to reopen."""
    tried_errors: list[Claim] = []
    """What failed and was tried."""
    do_not_redo: list[Claim] = []
    """Paths not to take again."""
    pending: list[Claim] = []
    """Concrete open items."""
    next_step: Claim | None = None
    """N: the one next action."""
    memory_candidates: list[MemoryCandidate] = []
    """Durable facts proposed for memory."""
