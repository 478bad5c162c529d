"""Replays never trust recorded decisions to run a handler (issue 14, finding 7): every card of a replay is
decided now by the current approver and policy, and the recording's decisions are only compared. Approval
ids are namespaced by run scope, so a replay in the recording's own PORTAGENT_HOME does not collide.
The real OpenAI Agents SDK replays the demo's committed cassettes (no server, no key)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, require_path, run_cli

pytest.importorskip("agents")

AGENT = EXAMPLES / "support_desk" / "agent.yaml"
V1 = REPO / "cassettes" / "support-desk" / "support_desk@1.0.0"


@pytest.fixture(autouse=True)
def _fresh_tickets():
    """The demo's ticket handler numbers tickets in module state; each replay starts from none, like its
    recording did (a second replay in one process would otherwise open TCK-0002 and drift)."""
    import sys

    def reset() -> None:
        mod = sys.modules.get("support_desk_handlers")
        if mod is not None:
            mod._TICKETS.clear()

    reset()
    yield reset
    reset()


def _copy(case: str, tmp_path: Path) -> Path:
    src = require_path(V1 / case / "openai" / "r0", "the demo's committed cassettes")
    dst = tmp_path / "copy" / case / "openai" / "r0"
    shutil.copytree(src, dst)
    return dst


def _forge(folder: Path, decision: str) -> None:
    run_json = folder / "run.json"
    data = json.loads(run_json.read_text())
    for a in data["manifest"]["approvals"]:
        a["decision"] = decision
        a.pop("note", None)
    run_json.write_text(json.dumps(data, indent=2))


def _ticket_results(events: list) -> list:
    calls = {e.call_id for e in events if e.type == "tool.call" and e.tool == "create_ticket"}
    return [e for e in events if e.type == "tool.result" and e.call_id in calls]


def test_an_unforged_rejection_replays_cleanly(tmp_path: Path) -> None:
    folder = _copy("ticket-rejected", tmp_path)
    code, out, err = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(folder))
    assert code == 0, out + err
    assert "drift" not in out


def test_a_forged_approval_in_run_json_never_runs_the_write(tmp_path: Path) -> None:
    from portagent.runtime.replay import replay_folder

    folder = _copy("ticket-rejected", tmp_path)
    _forge(folder, "approve")
    out = asyncio.run(replay_folder(AGENT, folder))
    results = _ticket_results(out.events)
    assert results and all(not r.ok and r.error == "approval_rejected" for r in results)  # handler never ran
    assert any("the recording says approve" in n for n in out.notes)
    ledger = Path(tmp_path / ".portagent" / "ledger.db")
    if ledger.exists():
        rows = (
            sqlite3.connect(ledger)
            .execute("SELECT status FROM effects WHERE tool='create_ticket'")
            .fetchall()
        )
        assert ("done",) not in rows

    code, stdout, err = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(folder))
    assert code == 1, stdout + err
    assert "drift      approval differs from the recording: create_ticket" in stdout
    assert "Traceback" not in err


def test_a_recorded_approval_needs_the_replays_own_approver(tmp_path: Path) -> None:
    folder = _copy("ticket-approved", tmp_path)
    code, out, _ = run_cli("run", str(AGENT), "--provider", "openai", "--replay", str(folder))
    assert code == 1 and "the recording says approve, the replay decided reject" in out
    code, out, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--replay", str(folder), "--approver", "auto-approve"
    )
    assert code == 0, out + err
    assert "drift" not in out and "create_ticket  decision=approval_required  result=ok" in out


def test_a_replay_in_the_recordings_home_does_not_collide_with_its_cards(
    tmp_path: Path, _fresh_tickets
) -> None:
    """The recording's cards (seeded ids, its own scope) stay in the store; the replay makes the same ids
    in its scope without taking another id (which made every later seeded id differ, i.e. drift)."""
    from portagent.contracts.errors import ApprovalError
    from portagent.tools.approvals import ApprovalStore

    folder = _copy("ticket-approved", tmp_path)
    argv = ["run", str(AGENT), "--provider", "openai", "--replay", str(folder), "--approver", "auto-approve"]
    assert run_cli(*argv)[0] == 0
    store = ApprovalStore()
    cards = store.list()
    assert len(cards) == 1
    # plant the recording's card under its own scope with the very same id, as a record in this home leaves it
    planted = cards[0].model_copy(update={"scope": "eval:support-desk:planted", "status": "pending"})
    store.clear_scope(cards[0].scope)
    store.create(planted)
    store.close()
    _fresh_tickets()
    code, out, err = run_cli(*argv)
    assert code == 0, out + err
    assert "drift" not in out
    store = ApprovalStore()
    ids = sorted((c.scope, c.approval_id) for c in store.list())
    assert [i for _, i in ids] == [planted.approval_id] * 2  # one id, two scopes
    # a bare id naming two runs' cards is refused with the qualified names; ID@SCOPE names one
    with pytest.raises(ApprovalError, match="names cards of 2 runs") as e:
        store.get(planted.approval_id)
    assert f"{planted.approval_id}@{planted.scope}" in str(e.value)
    assert store.get(f"{planted.approval_id}@{planted.scope}").status == "pending"
    code, out, err = run_cli("approvals", "show", planted.approval_id)
    assert code == 2 and "names cards of 2 runs" in err and "Traceback" not in err
    code, out, err = run_cli("approvals", "show", f"{planted.approval_id}@{planted.scope}")
    assert code == 0 and f"scope {planted.scope}" in out, out + err


def test_an_old_store_is_migrated_to_namespaced_ids(tmp_path: Path) -> None:
    from portagent.tools.approvals import ApprovalStore

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE approval_cards (approval_id TEXT PRIMARY KEY, scope TEXT NOT NULL, run_id TEXT NOT NULL, "
        "call_id TEXT NOT NULL, tool TEXT NOT NULL, args_hash TEXT NOT NULL, status TEXT NOT NULL, card TEXT NOT "
        "NULL, input_schema TEXT, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, decided_at TEXT, "
        "consumed_by TEXT);"
    )
    db.execute(
        "INSERT INTO approval_cards VALUES ('apr_1', 's', 'r', 'c', 't', 'h', 'pending', '{}', NULL, 'x', 'y', "
        "NULL, NULL)"
    )
    db.commit()
    db.close()
    ApprovalStore(path).close()
    db = sqlite3.connect(path)
    pk = [r[1] for r in db.execute("PRAGMA table_info(approval_cards)") if r[5]]
    assert sorted(pk) == ["approval_id", "scope"]
    assert db.execute("SELECT approval_id, scope FROM approval_cards").fetchall() == [("apr_1", "s")]
