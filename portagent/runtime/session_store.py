"""Where session threads live: the ``SessionStore`` protocol and its SQLite default.

``$PORTAGENT_HOME/sessions.db`` holds each thread's portable turns (``contracts.session.Turn``); what a run
in a session does with them — framing, fitting the context budget, compaction — is ``runtime/sessions.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from portagent.contracts._base import Contract
from portagent.contracts.errors import UsageError
from portagent.contracts.session import Turn
from portagent.core.clock import Clock, SystemClock, iso

SESSIONS_DB = "sessions.db"
SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
"""A session id: letters, digits, ``_ . : -``, at most 128 characters (it appears in file names and logs)."""


class SessionInfo(Contract):
    """A thread, summarised."""

    session_id: str
    """The thread's id."""
    turns: int
    """Number of turns."""
    providers: list[str]
    """Providers that added turns, in the order they first did."""
    created_at: str
    """First turn stored."""
    updated_at: str
    """Last turn stored."""


class SessionStore(Protocol):
    """Where threads live. ``SqliteSessionStore`` is the default; a team may plug its own."""

    def turns(self, session_id: str) -> list[Turn]:
        """The thread's turns in order; empty for a thread that does not exist yet."""
        ...

    def append(
        self,
        session_id: str,
        turns: Sequence[tuple[str, str]],
        *,
        provider: str,
        run_id: str,
        agent: str,
        trace_path: str | None = None,
    ) -> list[Turn]:
        """Append ``(role, content)`` pairs after the last turn; returns the stored turns."""
        ...

    def sessions(self) -> list[SessionInfo]:
        """Every thread, most recently updated last."""
        ...

    def clear(self, session_id: str) -> int:
        """Delete a thread's turns; returns how many were deleted."""
        ...

    def close(self) -> None: ...


def check_session_id(session_id: str) -> str:
    """``session_id`` if well formed, else one UsageError saying what is allowed."""
    if not SESSION_ID_RE.fullmatch(session_id):
        raise UsageError(
            f"session id {session_id!r} is not valid: use 1-128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )
    return session_id


_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    provider TEXT,
    run_id TEXT,
    agent TEXT,
    trace_path TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""


class SqliteSessionStore:
    """Threads in one SQLite file (``$PORTAGENT_HOME/sessions.db`` unless ``path`` is given).

    A file that is not a SQLite database, or whose table is not the one written here, is reported as one
    UsageError naming the file (never a traceback); nothing is written to it.
    """

    def __init__(self, path: Path | None = None, *, clock: Clock | None = None, create: bool = True) -> None:
        from portagent.core.home import state_file

        self.path = path or state_file(SESSIONS_DB, create=create)
        self.clock = clock or SystemClock()
        from portagent.tools.sqlite_state import StoreDamage, open_state_db

        self._db = open_state_db(self.path, _SCHEMA, "session store")
        self._damage = StoreDamage("session store", self.path, "turn", "its threads are then lost")
        self._damage.expect_columns(
            self._db,
            "turns",
            [
                "session_id",
                "seq",
                "role",
                "content",
                "provider",
                "run_id",
                "agent",
                "trace_path",
                "created_at",
            ],
        )

    def _guard(self) -> AbstractContextManager[None]:
        return self._damage.guard()

    def turns(self, session_id: str) -> list[Turn]:
        with self._guard():
            rows = self._db.execute(
                "SELECT seq, role, content, provider, run_id, agent, trace_path, created_at FROM turns "
                "WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
            return [
                Turn(
                    seq=r[0],
                    role=r[1],
                    content=r[2],
                    provider=r[3],
                    run_id=r[4],
                    agent=r[5],
                    trace_path=r[6],
                    created_at=r[7],
                )
                for r in rows
            ]

    def append(
        self,
        session_id: str,
        turns: Sequence[tuple[str, str]],
        *,
        provider: str,
        run_id: str,
        agent: str,
        trace_path: str | None = None,
    ) -> list[Turn]:
        now = iso(self.clock.now())
        stored: list[Turn] = []
        with self._guard():
            # One write transaction: two runs finishing at once on one thread get consecutive seqs.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                last = self._db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM turns WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
                for i, (role, content) in enumerate(turns, start=int(last) + 1):
                    turn = Turn(
                        seq=i,
                        role=role,  # validated by the model
                        content=content,
                        provider=provider,
                        run_id=run_id,
                        agent=agent,
                        trace_path=trace_path,
                        created_at=now,
                    )
                    self._db.execute(
                        "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (session_id, i, turn.role, content, provider, run_id, agent, trace_path, now),
                    )
                    stored.append(turn)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return stored

    def sessions(self) -> list[SessionInfo]:
        with self._guard():
            rows = self._db.execute(
                "SELECT session_id, COUNT(*), MIN(created_at), MAX(created_at) FROM turns "
                "GROUP BY session_id ORDER BY MAX(created_at), session_id"
            ).fetchall()
            out = []
            for sid, count, first, last in rows:
                providers: list[str] = []
                for (p,) in self._db.execute(
                    "SELECT provider FROM turns WHERE session_id = ? ORDER BY seq", (sid,)
                ):
                    if p and p not in providers:
                        providers.append(p)
                out.append(
                    SessionInfo(
                        session_id=sid, turns=count, providers=providers, created_at=first, updated_at=last
                    )
                )
            return out

    def clear(self, session_id: str) -> int:
        with self._guard():
            return self._db.execute("DELETE FROM turns WHERE session_id = ?", (session_id,)).rowcount

    def close(self) -> None:
        self._db.close()


def open_session_store(*, create: bool = True) -> SqliteSessionStore:
    """The default store in ``$PORTAGENT_HOME``."""
    return SqliteSessionStore(create=create)
