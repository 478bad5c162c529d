"""ApprovalStore: lifecycle, persistence, expiry, edit re-validation."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest
from gateway_testkit import ManualClock

from portagent.contracts.errors import ApprovalError
from portagent.contracts.policy import ApprovalCard
from portagent.core.clock import iso
from portagent.tools import ApprovalStore, EditRefusedError

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "pattern": "^/workspace/"}},
    "required": ["path"],
    "additionalProperties": False,
}


def card(clock: ManualClock, n: int = 1, **kw) -> ApprovalCard:
    now = clock.now()
    fields = dict(
        approval_id=f"apr_{n}",
        run_id="run_1",
        call_id=f"call_{n}",
        tool="write_file",
        tool_version="1.0.0",
        args={"path": "/workspace/a"},
        args_hash="h1",
        reason="writes need review",
        effect="reversible_write",
        reversible=True,
        created_at=iso(now),
        expires_at=iso(now + timedelta(seconds=600)),
        scope="s1",
    )
    fields.update(kw)
    return ApprovalCard(**fields)


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def store(tmp_path, clock):
    return ApprovalStore(tmp_path / "approvals.db", clock=clock)


def test_default_location_is_portagent_home(tmp_path):
    s = ApprovalStore()
    assert s.path == tmp_path / "home" / "approvals.db" and s.path.exists()
    mode = sqlite3.connect(s.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_lifecycle_approve(store, clock):
    store.create(card(clock), input_schema=SCHEMA)
    assert [c.approval_id for c in store.list(status="pending")] == ["apr_1"]
    done = store.approve("apr_1", reviewer="ana", note="ok")
    assert (done.status, done.reviewer, done.note, done.effective_args) == (
        "approved",
        "ana",
        "ok",
        {"path": "/workspace/a"},
    )
    assert done.decided_at == iso(clock.now())
    assert store.list(status="pending") == [] and len(store.list(status="approved")) == 1
    with pytest.raises(ApprovalError, match="already approved by ana"):
        store.reject("apr_1", reviewer="bob")


@pytest.mark.parametrize("new", ["rejected", "superseded", "expired"])
def test_pending_to_every_final_state_and_no_way_back(store, clock, new):
    store.create(card(clock))
    {
        "rejected": lambda: store.reject("apr_1", "ana"),
        "superseded": lambda: store.supersede("apr_1"),
        "expired": lambda: store.expire("apr_1"),
    }[new]()
    assert store.get("apr_1").status == new
    for op in (
        lambda: store.approve("apr_1"),
        lambda: store.edit("apr_1", {"path": "/workspace/b"}),
        lambda: store.reject("apr_1"),
    ):
        with pytest.raises(ApprovalError, match=f"already {new}"):
            op()


def test_approved_and_edited_cards_may_still_expire_but_rejected_may_not(store, clock):
    store.create(card(clock, 1))
    store.create(card(clock, 2, args_hash="h2"))
    store.create(card(clock, 3, args_hash="h3"))
    store.approve("apr_1")
    store.edit("apr_2", {"path": "/workspace/b"})
    store.reject("apr_3")
    assert store.expire("apr_1").status == "expired"
    assert store.expire("apr_2").status == "expired"
    with pytest.raises(ApprovalError):
        store.expire("apr_3")


def test_edit_is_checked_against_the_stored_schema(store, clock):
    store.create(card(clock), input_schema=SCHEMA)
    with pytest.raises(EditRefusedError) as e:
        store.edit("apr_1", {"path": "/etc/passwd", "mode": "w"})
    assert e.value.exit_code == 1 and len(e.value.problems) == 2
    assert store.get("apr_1").status == "pending"  # a refused edit leaves the card decidable
    edited = store.edit("apr_1", {"path": "/workspace/b"}, reviewer="ana")
    assert (edited.status, edited.effective_args, edited.args) == (
        "edited",
        {"path": "/workspace/b"},
        {"path": "/workspace/a"},
    )
    with pytest.raises(EditRefusedError):
        store.create(card(clock, 2))
        store.edit("apr_2", ["not", "an", "object"])  # type: ignore[arg-type]


def test_unknown_id(store):
    for op in (store.get, store.approve, store.reject, store.expire):
        with pytest.raises(ApprovalError, match="unknown approval id 'apr_nope'"):
            op("apr_nope")


def test_a_card_past_its_expiry_cannot_be_decided(store, clock):
    store.create(card(clock))
    clock.advance(601)
    with pytest.raises(ApprovalError, match="expired"):
        store.approve("apr_1")
    assert store.get("apr_1").status == "expired"


def test_cards_survive_a_restart_and_find_is_per_scope_and_call(tmp_path, clock):
    s1 = ApprovalStore(tmp_path / "a.db", clock=clock)
    s1.create(card(clock, 1))
    s1.close()
    s2 = ApprovalStore(tmp_path / "a.db", clock=clock)
    assert s2.get("apr_1").status == "pending"
    assert s2.find("s1", "write_file", "h1").approval_id == "apr_1"
    assert s2.find("other-scope", "write_file", "h1") is None
    assert s2.find("s1", "write_file", "other-hash") is None
    s2.create(card(clock, 2))
    assert s2.find("s1", "write_file", "h1").approval_id == "apr_2"  # newest first
    s2.mark_consumed("apr_2", "call_9")
    s2.supersede("apr_1")
    assert s2.find("s1", "write_file", "h1") is None
    assert s2.consumed_by("apr_2") == "call_9"
    assert s2.clear_scope("s1") == 2 and s2.list() == []


def test_duplicate_ids_and_non_pending_creation_are_refused(store, clock):
    store.create(card(clock))
    with pytest.raises(ApprovalError, match="already exists"):
        store.create(card(clock))
    with pytest.raises(ApprovalError, match="must be pending"):
        store.create(card(clock, 5, status="approved"))


def test_list_filters_by_scope(store, clock):
    store.create(card(clock, 1))
    store.create(card(clock, 2, scope="s2"))
    assert [c.approval_id for c in store.list(scope="s2")] == ["apr_2"]
    assert store.input_schema("apr_1") is None
