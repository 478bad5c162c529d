"""``open_state_db`` keeps a closed connection for the next opener of the same file in the same process
(opening a WAL file costs about 0.25 ms; an eval opens two or three stores a run). What must hold."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from portagent.tools.approvals import ApprovalStore
from portagent.tools.ledger import EffectLedger
from portagent.tools.sqlite_state import close_state_db, open_state_db

SCHEMA = "CREATE TABLE IF NOT EXISTS t (x INTEGER);"


def test_a_given_back_connection_serves_the_next_opener_and_only_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a = open_state_db(path, SCHEMA, "test store")
    close_state_db(a)
    b = open_state_db(path, SCHEMA, "test store")
    c = open_state_db(path, SCHEMA, "test store")  # b is taken: c is a connection of its own
    assert b is a and c is not b
    b.execute("INSERT INTO t VALUES (1)")
    assert c.execute("SELECT count(*) FROM t").fetchone() == (1,)
    close_state_db(b)
    close_state_db(c)


def test_a_deleted_or_replaced_file_gets_a_new_connection(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a = open_state_db(path, SCHEMA, "test store")
    a.execute("INSERT INTO t VALUES (1)")
    close_state_db(a)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    b = open_state_db(path, SCHEMA, "test store")
    assert b is not a
    assert b.execute("SELECT count(*) FROM t").fetchone() == (0,)  # the new file, not the deleted one
    b.execute("INSERT INTO t VALUES (2)")
    close_state_db(b)
    assert open_state_db(path, SCHEMA, "test store").execute("SELECT x FROM t").fetchall() == [(2,)]


def test_a_connection_in_a_transaction_is_closed_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a = open_state_db(path, SCHEMA, "test store")
    a.execute("BEGIN IMMEDIATE")
    close_state_db(a)
    b = open_state_db(path, SCHEMA, "test store")
    assert b is not a and not b.in_transaction
    b.execute("INSERT INTO t VALUES (1)")  # the write lock was released with the closed connection
    close_state_db(b)


def _child_opens(path: str, parent_id: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    db = open_state_db(Path(path), SCHEMA, "test store")
    out.put(id(db) != parent_id and os.getpid())
    close_state_db(db)


def test_a_forked_child_never_gets_its_parents_connection(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a = open_state_db(path, SCHEMA, "test store")
    close_state_db(a)  # idle in the parent's pool when the child forks
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    child = ctx.Process(target=_child_opens, args=(str(path), id(a), out))
    child.start()
    child.join(30)
    assert out.get(timeout=5) == child.pid
    assert open_state_db(path, SCHEMA, "test store") is a


def test_stores_closed_twice_give_their_connection_back_once(tmp_path: Path) -> None:
    ledger = EffectLedger(tmp_path / "ledger.db")
    ledger.close()
    ledger.close()
    first, second = EffectLedger(tmp_path / "ledger.db"), EffectLedger(tmp_path / "ledger.db")
    assert first._db is not second._db
    first.close()
    second.close()
    store = ApprovalStore(tmp_path / "approvals.db")
    store.close()
    store.close()
    again, other = ApprovalStore(tmp_path / "approvals.db"), ApprovalStore(tmp_path / "approvals.db")
    assert again._db is not other._db
    again.clear_scope("run:x")
    again.close()
    other.close()
