"""A thread's turns, and how earlier turns are framed into a run's input (docs/sessions.md).

The framing is a contract: ``runtime/sessions.py`` writes it, and the context manifest
(``adapters/context_manifest.py``) reads it back to say which part of a model call was session history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from portagent.contracts._base import Contract

HISTORY_OPEN = '<conversation_history session="{session}" turns="{turns}"{omitted}>'
HISTORY_CLOSE = "</conversation_history>"
TURN_OPEN = '<turn role="{role}">'
TURN_CLOSE = "</turn>"
_FRAMED = re.compile(
    r'\A(<conversation_history session="(?P<session>[^"]+)" turns="(?P<turns>\d+)"'
    r'(?: omitted="(?P<omitted>\d+)")?>\n(?:.*?\n)?' + re.escape(HISTORY_CLOSE) + r")\n\n(?P<message>.*)\Z",
    re.DOTALL,
)


class Turn(Contract):
    """One turn of a thread, in portagent's portable form."""

    seq: int
    """Position in the thread, from 1."""
    role: Literal["user", "assistant"]
    """Who spoke."""
    content: str
    """What was said (secrets masked; a structured final output is its JSON)."""
    provider: str | None = None
    """The provider of the run that added the turn."""
    run_id: str | None = None
    """The run that added the turn."""
    agent: str | None = None
    """The agent of that run."""
    trace_path: str | None = None
    """That run's ``trace.jsonl`` (for ``sessions export --handoff``), when it was written to disk."""
    created_at: str
    """When the turn was stored (ISO 8601, UTC)."""


def frame_history(
    session_id: str, turns: Sequence[Turn], message: str, *, omitted: int = 0, compacted: str | None = None
) -> str:
    """The first user message of a run in a session: the earlier turns, oldest first, in one delimited
    block, then the new message. ``omitted``: older turns left out (the context budget); the block says so.
    ``compacted``: those turns compacted (``tracing.handoff.render_compacted``), placed before the kept turns.
    With no turns (and none omitted) the message is sent as it is."""
    if not turns and not omitted:
        return message
    extra = f' omitted="{omitted}"' if omitted else ""
    lines = [HISTORY_OPEN.format(session=session_id, turns=len(turns), omitted=extra)]
    if compacted:
        lines.append(compacted)
    for t in turns:
        lines += [TURN_OPEN.format(role=t.role), t.content, TURN_CLOSE]
    lines += [HISTORY_CLOSE, "", message]
    return "\n".join(lines)


@dataclass(frozen=True)
class Framed:
    """A framed first message, split back into its history block and the new message."""

    session_id: str
    history: str
    turns: int
    omitted: int
    message: str


def split_framed(text: str) -> Framed | None:
    """The history block and the message of a framed first message; None when ``text`` is not framed."""
    m = _FRAMED.match(text)
    if m is None:
        return None
    return Framed(
        session_id=m["session"],
        history=m.group(1),
        turns=int(m["turns"]),
        omitted=int(m["omitted"] or 0),
        message=m["message"],
    )
