"""Run records by idempotency key (SQLite in ``PORTAGENT_HOME/runs.db``).

A repeated key answers ``duplicate`` with the first run's id and result; a key whose run is
``waiting_approval`` is resumed by the runner (same ``run_id``, a new attempt).

Crash consistency. A process that runs a key holds an exclusive ``flock`` on that key's lock file
(``runs.locks/<sha256 of the key>.lock``) from before it reads the record until the record is final.
The kernel releases the lock when the process dies, however it dies (``kill -9`` included), and a
lock cannot be inherited by an unrelated process that later gets the same pid — so "the owner is
alive" is exactly "the lock is held", without pids, start times or clocks. A record still
``running`` whose lock can be taken therefore belongs to a dead process: the run was *interrupted*,
and the runner reconciles it (resume, or report it — never ``duplicate``). Lock files are never
deleted (deleting a lock file races with a process about to lock it); they are empty and one per key.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portagent.contracts.errors import UsageError
from portagent.core.home import state_file

RUNS_DB = "runs.db"
LOCKS_DIR = "runs.locks"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    idempotency_key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    scope TEXT NOT NULL,
    trace_path TEXT,
    result_json TEXT,
    pending_json TEXT
)
"""


@dataclass
class StoredRun:
    idempotency_key: str
    run_id: str
    status: str
    attempt: int
    scope: str
    trace_path: str | None
    result: dict[str, Any] | None
    pending: list[str]


class KeyLock:
    """An exclusive, non-blocking ``flock`` on one key's lock file, held until ``release``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by exec'd children
        except OSError as e:
            raise UsageError(f"cannot open the run lock {str(self.path)!r}: {e.strerror}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None


class RunStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_file(RUNS_DB)
        self._lock = threading.Lock()
        self._locks: dict[str, KeyLock] = {}
        from portagent.tools.sqlite_state import open_state_db

        # a corrupt or unwritable runs.db is one message naming it, as for approvals.db and ledger.db
        self._conn = open_state_db(self.path, _SCHEMA, "run store")

    def lock_path(self, key: str) -> Path:
        return self.path.parent / LOCKS_DIR / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock")

    def lock(self, key: str) -> bool:
        """Become the live owner of ``key``; False when a live process already owns it."""
        if key in self._locks:
            return True
        lock = KeyLock(self.lock_path(key))
        if not lock.acquire():
            return False
        self._locks[key] = lock
        return True

    def unlock(self, key: str) -> None:
        lock = self._locks.pop(key, None)
        if lock is not None:
            lock.release()

    def get(self, key: str) -> StoredRun | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT idempotency_key, run_id, status, attempt, scope, trace_path, result_json, pending_json "
                "FROM runs WHERE idempotency_key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return StoredRun(
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            json.loads(row[6]) if row[6] else None,
            json.loads(row[7] or "[]"),
        )

    def by_run_id(self, run_id: str) -> StoredRun | None:
        """The record of the run with this id (``portagent resume RUN_ID``), or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT idempotency_key FROM runs WHERE run_id = ? ORDER BY rowid DESC LIMIT 1", (run_id,)
            ).fetchone()
        return self.get(row[0]) if row is not None else None

    def claim(self, key: str, run_id: str, scope: str, trace_path: str | None) -> bool:
        """Insert a new ``running`` record; False when the key already exists (someone else owns it)."""
        with self._lock:
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO runs (idempotency_key, run_id, status, attempt, scope, trace_path) "
                "VALUES (?, ?, 'running', 1, ?, ?)",
                (key, run_id, scope, trace_path),
            )
            return cur.rowcount == 1

    def start_attempt(self, key: str, attempt: int, trace_path: str | None = None) -> None:
        """A new attempt of ``key``; ``trace_path`` moves its trace (``run --out`` on a resume)."""
        with self._lock:
            self._conn.execute(
                "UPDATE runs SET status='running', attempt=?, trace_path=COALESCE(?, trace_path) "
                "WHERE idempotency_key=?",
                (attempt, trace_path, key),
            )

    def finish(self, key: str, status: str, result: dict[str, Any], pending: list[str]) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE runs SET status=?, result_json=?, pending_json=? WHERE idempotency_key=?",
                (status, json.dumps(result, ensure_ascii=False), json.dumps(pending), key),
            )

    def interrupt(self, key: str, result: dict[str, Any]) -> None:
        """Mark a ``running`` record ``interrupted`` (its attempt ended without a result)."""
        with self._lock:
            self._conn.execute(
                "UPDATE runs SET status='interrupted', result_json=? WHERE idempotency_key=? "
                "AND status IN ('running', 'interrupted')",
                (json.dumps(result, ensure_ascii=False), key),
            )

    def close(self) -> None:
        for key in list(self._locks):
            self.unlock(key)
        self._conn.close()
