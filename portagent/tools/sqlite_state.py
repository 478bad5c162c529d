"""Opening portagent's SQLite state files (``ledger.db``, ``approvals.db``) safely from many places.

Several threads or processes may open a fresh file at the same moment (parallel eval workers, racing
tool calls). Switching to WAL and creating the schema then compete for locks, and SQLite does not
always wait on its busy handler for those (it may answer "database is locked" at once), so both steps
are retried for a while. WAL is persistent: once set, later openers only read the mode.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from portagent.contracts.errors import UsageError

OPEN_RETRY_S = 30.0


def open_state_db(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """A WAL-mode autocommit connection with ``schema`` applied, shareable between threads."""
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
