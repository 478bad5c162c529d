"""EffectLedger: never the same effect twice (DESIGN §3, ACCEPTANCE ch. 11, ADR 0003).

SQLite file ``<PORTAGENT_HOME>/ledger.db`` in WAL mode, one row per (scope, tool, key). For an
idempotent tool the gateway records the *intent* before the handler runs and the *outcome* after:

- ``begin`` inserts the intent under a UNIQUE constraint, so two racers (threads or processes)
  produce one intent; the loser reads the winner's row;
- a row with an outcome answers ``done``: the gateway returns the recorded outcome as a duplicate;
- a row without one is ``pending``: either in flight (its owner process is alive) or orphaned (the
  owner died between intent and outcome, or the gateway could not tell whether the effect happened).
  An orphan is never blindly re-executed: the gateway claims it and asks the tool's ``reconcile``.

``owner`` is ``host:pid@start`` of the process running the handler (the start identity tells a dead
owner from a later process that got its pid), or NULL for an orphan.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from portagent.core.clock import Clock, SystemClock, iso
from portagent.core.home import LEDGER_DB, state_file
from portagent.tools.sqlite_state import close_state_db, open_state_db

State = Literal["new", "done", "pending"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (
    scope        TEXT NOT NULL,
    tool         TEXT NOT NULL,
    key          TEXT NOT NULL,
    args_hash    TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    owner        TEXT,
    effect_id    TEXT,
    outcome      TEXT,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    completed_at TEXT,
    UNIQUE (scope, tool, key)
);
"""


def start_identity(pid: int) -> str | None:
    """When process ``pid`` started: the boot id and its start time in clock ticks since boot (Linux
    ``/proc``). A pid reused by a later process has another start identity; None where ``/proc`` is absent."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            ticks = f.read().rsplit(")", 1)[1].split()[19]
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip().replace("-", "")[:12]
    except (OSError, IndexError):
        return None
    return f"{boot}.{ticks}"


_OWN_TOKEN: dict[int, str] = {}


def owner_token() -> str:
    """``host:pid@start`` (``host:pid`` where the start identity cannot be read). Worked out once per
    process (a forked child has another pid, so it works out its own)."""
    pid = os.getpid()
    token = _OWN_TOKEN.get(pid)
    if token is None:
        start = start_identity(pid)
        token = _OWN_TOKEN[pid] = f"{socket.gethostname()}:{pid}" + (f"@{start}" if start else "")
    return token


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) is dead for our purposes
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def owner_alive(owner: str | None) -> bool | None:
    """True/False when it can be told, None for an owner on another host.

    The pid alone is not an identity: after a crash the kernel may give it to another process, which
    would keep an orphaned intent "in flight" forever. Tokens carry the owner's start identity
    (``host:pid@boot.ticks``); a live pid with another start identity is a different process, so the
    owner is dead. Tokens without one (older rows, systems without ``/proc``) fall back to the pid."""
    if owner is None:
        return False
    host, _, rest = owner.rpartition(":")
    pid, _, start = rest.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    if not pid_alive(int(pid)):
        return False
    if start:
        now = start_identity(int(pid))
        if now is not None and now != start:
            return False
    return True


@dataclass(frozen=True)
class LedgerEntry:
    """One row, as seen by ``begin`` or ``get``."""

    state: State
    scope: str
    tool: str
    key: str
    args_hash: str
    owner: str | None = None
    effect_id: str | None = None
    outcome: Any = None
    last_error: str | None = None
    created_at: str = ""
    completed_at: str | None = None


class EffectLedger:
    """The ledger. Safe to share between threads; each instance holds one SQLite connection."""

    def __init__(self, path: str | Path | None = None, *, clock: Clock | None = None) -> None:
        self.path = Path(path) if path is not None else state_file(LEDGER_DB)
        self.clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._closed = False
        self._db = open_state_db(self.path, _SCHEMA, "effect ledger")
        self.me = owner_token()

    def close(self) -> None:
        with self._lock:
            if not self._closed:  # (the connection may serve another store once given back)
                self._closed = True
                close_state_db(self._db)

    # -- reading -------------------------------------------------------------------------------------

    def _row(self, scope: str, tool: str, key: str) -> LedgerEntry | None:
        row = self._db.execute(
            "SELECT status, args_hash, owner, effect_id, outcome, last_error, created_at, completed_at "
            "FROM effects WHERE scope=? AND tool=? AND key=?",
            (scope, tool, key),
        ).fetchone()
        if row is None:
            return None
        status, ah, owner, eid, outcome, err, created, completed = row
        return LedgerEntry(
            "done" if status == "done" else "pending",
            scope,
            tool,
            key,
            ah,
            owner,
            eid,
            json.loads(outcome) if outcome is not None else None,
            err,
            created,
            completed,
        )

    def get(self, scope: str, tool: str, key: str) -> LedgerEntry | None:
        with self._lock:
            return self._row(scope, tool, key)

    def entries(self, scope: str | None = None) -> list[LedgerEntry]:
        with self._lock:
            sql = "SELECT scope, tool, key FROM effects"
            rows = (
                self._db.execute(sql + " WHERE scope=? ORDER BY rowid", (scope,))
                if scope is not None
                else self._db.execute(sql + " ORDER BY rowid")
            ).fetchall()
            return [e for r in rows if (e := self._row(*r)) is not None]

    # -- writing -------------------------------------------------------------------------------------

    def begin(self, scope: str, tool: str, key: str, args_hash: str) -> LedgerEntry:
        """Record the intent. ``new``: this caller owns it and must run the effect; ``done``: the
        recorded outcome; ``pending``: someone else's intent without an outcome."""
        now = iso(self.clock.now())
        with self._lock:
            cur = self._db.execute(
                "INSERT OR IGNORE INTO effects (scope, tool, key, args_hash, status, owner, created_at) "
                "VALUES (?, ?, ?, ?, 'pending', ?, ?)",
                (scope, tool, key, args_hash, self.me, now),
            )
            entry = self._row(scope, tool, key)
        assert entry is not None
        if cur.rowcount == 1:
            return LedgerEntry("new", scope, tool, key, args_hash, self.me, created_at=now)
        return entry

    def claim(self, entry: LedgerEntry) -> bool:
        """Take over an orphaned pending row (atomically: one claimer wins)."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE effects SET owner=? WHERE scope=? AND tool=? AND key=? AND status='pending' "
                "AND owner IS ?",
                (self.me, entry.scope, entry.tool, entry.key, entry.owner),
            )
            return cur.rowcount == 1

    def complete(self, scope: str, tool: str, key: str, outcome: Any, effect_id: str) -> None:
        """Record the outcome of the effect."""
        now = iso(self.clock.now())
        with self._lock:
            self._db.execute(
                "UPDATE effects SET status='done', owner=NULL, outcome=?, effect_id=?, completed_at=?, "
                "last_error=NULL WHERE scope=? AND tool=? AND key=?",
                (json.dumps(outcome, ensure_ascii=False, default=str), effect_id, now, scope, tool, key),
            )

    def abandon(self, scope: str, tool: str, key: str) -> None:
        """Drop an intent whose effect certainly did not happen (the handler refused), so a retry may run."""
        with self._lock:
            self._db.execute(
                "DELETE FROM effects WHERE scope=? AND tool=? AND key=? AND status='pending'",
                (scope, tool, key),
            )

    def orphan(self, scope: str, tool: str, key: str, error: str) -> None:
        """Leave the intent pending without an owner: whether the effect happened is unknown."""
        with self._lock:
            self._db.execute(
                "UPDATE effects SET owner=NULL, last_error=? WHERE scope=? AND tool=? AND key=? "
                "AND status='pending'",
                (error, scope, tool, key),
            )

    def clear_scope(self, scope: str) -> int:
        """Forget a namespace (a new eval repeat or demo starts clean). Returns rows removed."""
        with self._lock:
            return self._db.execute("DELETE FROM effects WHERE scope=?", (scope,)).rowcount
