"""Opening portagent's SQLite state files (``ledger.db``, ``approvals.db``) safely from many places.

Several threads or processes may open a fresh file at the same moment (parallel eval workers, racing
tool calls). Switching to WAL and creating the schema then compete for locks, and SQLite does not
always wait on its busy handler for those (it may answer "database is locked" at once), so both steps
are retried for a while. WAL is persistent: once set, later openers only read the mode.

Opening a WAL file costs about 0.25 ms (the first statement maps its shared-memory index), and an eval
opens two or three stores per run; so a closed connection is kept for the next opener of the same file
in the same process (``close_state_db``). A kept connection is handed out only while the file is the
one it opened (same device and inode: a deleted or replaced file gets a new connection), only to one
owner at a time, and never across a fork.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from portagent.contracts.errors import UsageError

OPEN_RETRY_S = 30.0


_Key = tuple[str, str, int]
_IDLE: dict[_Key, list[tuple[sqlite3.Connection, tuple[int, int]]]] = {}
_OPEN: dict[int, tuple[_Key, tuple[int, int]]] = {}
"""id of each connection handed out → the key it is kept under and the file it opened."""
_POOL_LOCK = threading.Lock()
_KEEP = 4
"""Idle connections kept per file (concurrent runs in one process each hold their own)."""


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def open_state_db(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """A WAL-mode autocommit connection with ``schema`` applied, shareable between threads. Give it back
    with ``close_state_db``."""
    key = (str(path), schema, os.getpid())
    file_id = _file_id(path)
    stale: list[sqlite3.Connection] = []
    with _POOL_LOCK:
        idle = _IDLE.get(key, [])
        while idle:
            db, opened = idle.pop()
            if opened == file_id:
                _OPEN[id(db)] = (key, opened)
                break
            stale.append(db)  # the file was deleted or replaced: this one would write where nobody reads
        else:
            db = None
    for old in stale:
        old.close()
    if db is not None:
        return db
    db = _open(path, schema, what)
    file_id = _file_id(path)
    if file_id is not None:
        with _POOL_LOCK:
            _OPEN[id(db)] = (key, file_id)
    return db


def close_state_db(db: sqlite3.Connection) -> None:
    """Done with a connection from ``open_state_db``: kept for the next opener of its file, or closed."""
    with _POOL_LOCK:
        entry = _OPEN.pop(id(db), None)
        if entry is not None and not db.in_transaction and entry[0][2] == os.getpid():
            idle = _IDLE.setdefault(entry[0], [])
            if len(idle) < _KEEP:
                idle.append((db, entry[1]))
                return
    db.close()


def _open(path: Path, schema: str, what: str) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    except (sqlite3.Error, OSError) as e:
        raise UsageError(f"cannot open the {what} at {str(path)!r}: {e}") from e
    deadline = time.monotonic() + OPEN_RETRY_S
    delay = 0.01
    while True:
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.executescript(schema)
            return db
        except sqlite3.OperationalError as e:
            if ("locked" not in str(e) and "busy" not in str(e)) or time.monotonic() > deadline:
                db.close()
                raise UsageError(f"cannot open the {what} at {str(path)!r}: {e}") from e
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        except sqlite3.Error as e:
            db.close()
            raise UsageError(f"cannot open the {what} at {str(path)!r}: {e}") from e


@dataclass(frozen=True)
class StoreDamage:
    """How a state store reports a damaged file: SQLite errors, a table of other columns and stored rows
    that no longer parse all become one ``UsageError`` naming the file and how to start over — never a
    traceback (the memory and session stores; the approvals store names a corrupt card itself)."""

    what: str
    """The store, as users know it: ``"memory store"``."""
    path: Path
    row: str
    """What one stored row is: ``"record"``, ``"turn"``."""
    lost: str = ""
    """What moving the file away loses, when worth saying."""

    def error(self, detail: str) -> UsageError:
        lost = f" ({self.lost})" if self.lost else ""
        return UsageError(
            f"the {self.what} {str(self.path)!r} is damaged ({detail}); move it away to start a new one{lost}"
        )

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Reads and writes of the store: what the file's state breaks is reported as its damage."""
        try:
            yield
        except sqlite3.Error as e:
            raise self.error(str(e)) from e
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            at = f" at {where}" if where else ""
            raise self.error(f"a stored {self.row} is invalid{at}: {first['msg']}") from e
        except json.JSONDecodeError as e:
            raise self.error(f"a stored {self.row} is invalid: {e}") from e

    def expect_columns(self, db: sqlite3.Connection, table: str, expected: Sequence[str]) -> None:
        """The store's main table has the columns this version writes; else ``db`` is closed and the file
        reported damaged (a file of another tool, or of a version with another layout)."""
        with self.guard():
            cols = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        if cols != list(expected):
            db.close()
            raise self.error(f"its {table!r} table has columns {cols}, expected {list(expected)}")
