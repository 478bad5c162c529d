"""Run records by idempotency key (SQLite in ``PORTAGENT_HOME/runs.db``).

A repeated key answers ``duplicate`` with the first run's id and result; a key whose run is
``waiting_approval`` is resumed by the runner (same ``run_id``, a new attempt).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portagent.core.home import state_file

RUNS_DB = "runs.db"

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


class RunStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_file(RUNS_DB)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(_SCHEMA)

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

    def claim(self, key: str, run_id: str, scope: str, trace_path: str | None) -> bool:
        """Insert a new ``running`` record; False when the key already exists (someone else owns it)."""
        with self._lock:
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO runs (idempotency_key, run_id, status, attempt, scope, trace_path) "
                "VALUES (?, ?, 'running', 1, ?, ?)",
                (key, run_id, scope, trace_path),
            )
            return cur.rowcount == 1

    def start_attempt(self, key: str, attempt: int) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE runs SET status='running', attempt=? WHERE idempotency_key=?", (attempt, key)
            )

    def finish(self, key: str, status: str, result: dict[str, Any], pending: list[str]) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE runs SET status=?, result_json=?, pending_json=? WHERE idempotency_key=?",
                (status, json.dumps(result, ensure_ascii=False), json.dumps(pending), key),
            )

    def close(self) -> None:
        self._conn.close()
