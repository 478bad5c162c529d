"""EffectLedger: intent/outcome, duplicates, races between threads, crashes between intent and outcome."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gateway_testkit import CREATE_TICKET, ctx, run, tool

from portagent.contracts.policy import PermissionPolicy
from portagent.tools import EffectLedger, ToolGateway
from portagent.tools.ledger import owner_alive, owner_token

ALLOW_WRITES = PermissionPolicy(
    rules=[{"id": "writes-ok", "effect": ["reversible_write"], "decision": "allow"}]
)
HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


def gateway(t=CREATE_TICKET, scope="s1", ledger=None):
    c = ctx(scope=scope)
    return ToolGateway([t], c, policy=ALLOW_WRITES, ledger=ledger), c


# -- the ledger itself -------------------------------------------------------------------------------------


def test_begin_complete_and_repeat(tmp_path):
    led = EffectLedger(tmp_path / "l.db")
    assert sqlite3.connect(led.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    first = led.begin("s", "create_ticket", "k", "h")
    assert first.state == "new" and first.owner == owner_token()
    again = led.begin("s", "create_ticket", "k", "h")
    assert again.state == "pending"
    led.complete("s", "create_ticket", "k", {"ticket_id": "TCK-0001"}, "TCK-0001")
    done = led.begin("s", "create_ticket", "k", "h")
    assert (done.state, done.effect_id, done.outcome) == ("done", "TCK-0001", {"ticket_id": "TCK-0001"})
    assert led.begin("other-scope", "create_ticket", "k", "h").state == "new"  # namespaced per scope
    assert len(led.entries("s")) == 1 and len(led.entries()) == 2
    assert led.clear_scope("s") == 1 and led.get("s", "create_ticket", "k") is None


def test_default_location_is_portagent_home(tmp_path):
    assert EffectLedger().path == tmp_path / "home" / "ledger.db"


def test_many_threads_racing_one_key_record_one_intent(tmp_path):
    path = tmp_path / "race.db"
    EffectLedger(path).close()
    barrier = threading.Barrier(8)
    states: list[str] = []

    def racer():
        led = EffectLedger(path)  # its own connection: the database arbitrates
        barrier.wait(timeout=60)
        states.append(led.begin("s", "t", "same-key", "h").state)

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not any(th.is_alive() for th in threads)
    assert sorted(states) == ["new"] + ["pending"] * 7


def test_owner_liveness():
    assert owner_alive(owner_token()) is True
    assert owner_alive(None) is False
    assert owner_alive("some-other-host:123") is None
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=60)
    assert owner_alive(f"{owner_token().rpartition(':')[0]}:{p.pid}") is False


# -- through the gateway -------------------------------------------------------------------------------------


def test_a_repeated_key_returns_the_recorded_outcome_as_a_duplicate(spy):
    gw, c = gateway()
    first = run(
        gw.call(
            "create_ticket",
            {"request_key": "user-42:create-ticket:access-2026-06-10", "summary": "no puedo entrar"},
        )
    )
    second = run(
        gw.call(
            "create_ticket",
            {"request_key": "user-42:create-ticket:access-2026-06-10", "summary": "no puedo entrar"},
        )
    )
    assert first.ok and not first.duplicate and first.effect_id == "TCK-0001"
    assert second.ok and second.duplicate and second.effect_id == "TCK-0001"
    assert second.to_model() == {
        "ok": True,
        "ticket_id": "TCK-0001",
        "effect_id": "TCK-0001",
        "duplicate": True,
    }
    assert len(spy.calls("create_ticket")) == 1
    assert [(e.key, e.effect_id) for e in gw.ledger.entries("s1")] == [
        ("user-42:create-ticket:access-2026-06-10", "TCK-0001")
    ]
    result = c.recorder.of_type("tool.result")[1]
    assert result.duplicate and result.effect_id == "TCK-0001"


def test_the_same_key_with_other_arguments_is_a_conflict(spy):
    gw, _ = gateway()
    run(gw.call("create_ticket", {"request_key": "k", "summary": "a"}))
    obs = run(gw.call("create_ticket", {"request_key": "k", "summary": "b"}))
    assert obs.error == "conflict" and "different arguments" in obs.message
    assert len(spy.calls()) == 1


def test_key_templates_and_default_keys(spy):
    templated = tool(
        "create_ticket",
        effect="reversible_write",
        idempotency={"required": True, "key_template": "{request_key}/{summary}"},
        properties={"request_key": {"type": "string"}, "summary": {"type": "string"}},
    )
    gw, _ = gateway(templated)
    run(gw.call("create_ticket", {"request_key": "k", "summary": "a"}))
    run(gw.call("create_ticket", {"request_key": "k", "summary": "b"}))
    assert [e.key for e in gw.ledger.entries("s1")] == ["k/a", "k/b"]
    hashed = tool(
        "create_ticket",
        effect="reversible_write",
        idempotency={"required": True},
        properties={"request_key": {"type": "string"}, "summary": {"type": "string"}},
    )
    gw2, c2 = gateway(hashed, scope="s2")
    run(gw2.call("create_ticket", {"request_key": "k", "summary": "a"}))
    assert gw2.ledger.entries("s2")[0].key == f"create_ticket:{c2.recorder.of_type('tool.call')[0].args_hash}"
    missing = run(gw.call("create_ticket", {"request_key": "k"}))
    assert missing.error == "validation_error" and "cannot be filled" in missing.message


def test_a_refusal_leaves_no_intent_so_a_retry_may_run(spy):
    t = tool(
        "flaky",
        effect="reversible_write",
        idempotency={"required": True, "key_field": "name"},
        properties={
            "name": {"type": "string"},
            "fail_times": {"type": "integer"},
            "code": {"type": "string"},
        },
    )
    gw, _ = gateway(t)
    assert run(gw.call("flaky", {"name": "n1", "fail_times": 1, "code": "not_found"})).error == "not_found"
    assert gw.ledger.entries("s1") == []
    assert run(gw.call("flaky", {"name": "n1", "fail_times": 1, "code": "not_found"})).ok


def test_an_unknown_outcome_stays_pending_and_without_reconcile_answers_conflict(spy):
    t = tool("explodes", effect="reversible_write", idempotency={"required": True, "key_field": "case_id"})
    gw, _ = gateway(t)
    assert run(gw.call("explodes", {"case_id": "k"})).error == "handler_error"
    entry = gw.ledger.entries("s1")[0]
    assert (entry.state, entry.owner) == ("pending", None) and "backend exploded" in entry.last_error
    obs = run(gw.call("explodes", {"case_id": "k"}))
    assert (
        obs.error == "conflict"
        and "idempotency.reconcile" in obs.message
        and str(gw.ledger.path) in obs.message
    )
    assert len(spy.calls("explodes")) == 1  # never blindly re-executed


def test_an_intent_owned_by_a_live_process_is_in_progress(spy, tmp_path):
    led = EffectLedger(tmp_path / "l.db")
    led.begin("s1", "create_ticket", "k", "h")
    led._db.execute(
        "UPDATE effects SET owner=?", (f"{owner_token().rpartition(':')[0]}:1",)
    )  # pid 1 is alive
    gw, _ = gateway(ledger=led)
    from portagent.contracts._base import args_hash

    led._db.execute("UPDATE effects SET args_hash=?", (args_hash({"request_key": "k", "summary": "x"}),))
    obs = run(gw.call("create_ticket", {"request_key": "k", "summary": "x"}))
    assert obs.error == "conflict" and "in progress in another process" in obs.message
    assert spy.calls() == []


def test_two_threads_racing_the_same_key_produce_one_effect(spy, tmp_path):
    slow = CREATE_TICKET.model_copy(update={"handler": "acceptance_tools:slow_create_ticket"})
    path = tmp_path / "home" / "ledger.db"
    barrier = threading.Barrier(2)
    out = []

    def racer():
        gw, _ = gateway(slow, ledger=EffectLedger(path))  # both open the fresh file at once
        barrier.wait(timeout=60)
        out.append(asyncio.run(gw.call("create_ticket", {"request_key": "same", "summary": "x"})))

    threads = [threading.Thread(target=racer) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not any(th.is_alive() for th in threads)
    assert len(spy.calls("create_ticket")) == 1
    assert all(o.ok for o in out) and sorted(o.duplicate for o in out) == [False, True]
    assert out[0].effect_id == out[1].effect_id == "TCK-0001"


# -- a real crash between intent and outcome ---------------------------------------------------------------

CHILD = """
import asyncio, sys
sys.path[:0] = [{fixtures!r}, {tests!r}]
from gateway_testkit import ctx, tool
from portagent.contracts.policy import PermissionPolicy
from portagent.tools import ToolGateway
from test_effect_ledger import DURABLE, ALLOW_WRITES
gw = ToolGateway([DURABLE], ctx(scope="crash"), policy=ALLOW_WRITES)
asyncio.run(gw.call("create_ticket", {{"request_key": "user-42:ticket", "summary": "x"}}))
print("child finished without being killed", flush=True)
"""

DURABLE = tool(
    "create_ticket",
    handler="acceptance_tools:durable_ticket",
    effect="reversible_write",
    idempotency={
        "required": True,
        "key_field": "request_key",
        "reconcile": "acceptance_tools:find_durable_ticket",
    },
    properties={"request_key": {"type": "string"}, "summary": {"type": "string"}},
)


def _crash_child(tmp_path: Path, hang: str) -> int:
    env = {
        **os.environ,
        "PORTAGENT_TEST_BACKEND": str(tmp_path / "backend.jsonl"),
        "PORTAGENT_TEST_READY": str(tmp_path / "ready"),
        "PORTAGENT_TEST_HANG": hang,
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(fixtures=str(FIXTURES), tests=str(HERE))],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            raise AssertionError(f"child did not reach the handler: {child.communicate()}")
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)  # a real kill, between intent and outcome
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return child.pid


@pytest.mark.parametrize(("hang", "executes_again"), [("after-effect", False), ("before-effect", True)])
def test_a_sigkilled_run_leaves_a_pending_intent_that_a_retry_resolves(
    spy, tmp_path, monkeypatch, hang, executes_again
):
    import acceptance_tools

    pid = _crash_child(tmp_path, hang)
    monkeypatch.setenv("PORTAGENT_TEST_BACKEND", str(tmp_path / "backend.jsonl"))
    led = EffectLedger()
    entry = led.get("crash", "create_ticket", "user-42:ticket")
    assert entry is not None and entry.state == "pending" and entry.owner.split("@")[0].endswith(f":{pid}")
    assert len(acceptance_tools.backend_tickets()) == (1 if hang == "after-effect" else 0)

    gw, _ = gateway(DURABLE, scope="crash")
    obs = run(gw.call("create_ticket", {"request_key": "user-42:ticket", "summary": "x"}))
    assert obs.ok and obs.effect_id == "TCK-0001"
    assert obs.duplicate is (not executes_again)
    if not executes_again:
        assert obs.to_model()["reconciled"] is True
    assert [t["ticket_id"] for t in acceptance_tools.backend_tickets()] == ["TCK-0001"]  # one effect, ever
    assert led.get("crash", "create_ticket", "user-42:ticket").state == "done"

    again = run(gw.call("create_ticket", {"request_key": "user-42:ticket", "summary": "x"}))
    assert again.duplicate and len(acceptance_tools.backend_tickets()) == 1


def test_a_timed_out_effect_is_reconciled_before_any_retry(spy, tmp_path, monkeypatch):
    import acceptance_tools

    monkeypatch.setenv("PORTAGENT_TEST_BACKEND", str(tmp_path / "backend.jsonl"))
    late = DURABLE.model_copy(
        update={
            "handler": "acceptance_tools:late_durable_ticket",
            "budgets": DURABLE.budgets.model_copy(update={"timeout_ms": 100, "max_retries": 2}),
        }
    )
    gw, _ = gateway(late)
    obs = run(gw.call("create_ticket", {"request_key": "k-late", "summary": "x"}))
    assert obs.ok and obs.effect_id == "TCK-0001"
    assert len(spy.calls("late_durable_ticket")) == 1  # the status check found the effect: no retry
    assert len(acceptance_tools.backend_tickets()) == 1
    assert gw.ledger.get("s1", "create_ticket", "k-late").state == "done"


def test_a_failing_reconcile_keeps_the_intent_pending(spy, tmp_path):
    broken = DURABLE.model_copy(
        update={
            "idempotency": DURABLE.idempotency.model_copy(update={"reconcile": "acceptance_tools:explodes"})
        }
    )
    led = EffectLedger()
    led.begin("s1", "create_ticket", "k", "x")
    from portagent.contracts._base import args_hash

    args = {"request_key": "k", "summary": "x"}
    led._db.execute("UPDATE effects SET owner=NULL, args_hash=?", (args_hash(args),))
    gw, _ = gateway(broken, ledger=led)
    obs = run(gw.call("create_ticket", args))
    assert obs.error == "conflict" and "reconcile" in obs.message and "failed" in obs.message
    entry = led.get("s1", "create_ticket", "k")
    assert entry.state == "pending" and entry.owner is None and "reconcile failed" in entry.last_error


def test_a_budget_refusal_at_execution_leaves_no_intent(spy):
    from portagent.contracts.agent import Budget

    ticket = CREATE_TICKET.model_copy(update={"cost_usd": 0.05})
    c = ctx(scope="s1", budget=Budget(max_cost_usd=0.05))
    gw = ToolGateway([ticket], c, policy=ALLOW_WRITES)
    first = run(gw.prepare("create_ticket", {"request_key": "a", "summary": "x"}))
    second = run(gw.prepare("create_ticket", {"request_key": "b", "summary": "x"}))
    assert first.allowed and second.allowed  # each alone fits the budget
    assert run(gw.execute(first)).ok
    refused = run(gw.execute(second))  # together they would overspend: re-checked atomically at execution
    assert refused.error == "budget_exhausted" and c.budget.cost_usd == 0.05
    assert [e.key for e in gw.ledger.entries("s1")] == ["a"]
    assert [e.type for e in c.recorder.events][-2:] == ["budget.exceeded", "tool.result"]
    assert len(spy.calls("create_ticket")) == 1


def test_a_missing_key_field_is_a_validation_error(spy):
    loose = tool(
        "create_ticket",
        effect="reversible_write",
        idempotency={"required": True, "key_field": "request_key"},
        properties={"request_key": {"type": "string"}, "summary": {"type": "string"}},
    )
    gw, _ = gateway(loose)
    obs = run(gw.call("create_ticket", {"summary": "x"}))
    assert obs.error == "validation_error" and "request_key" in obs.message
    assert spy.calls() == []


def test_waiting_for_a_key_held_in_this_process_is_bounded(tmp_path):
    from portagent.tools.execution import GuardBusy, key_guard

    led = EffectLedger(tmp_path / "g.db")

    async def scenario():
        async with key_guard(led, "s", "t", "k", 1.0):
            with pytest.raises(GuardBusy, match="still in use"):
                async with key_guard(led, "s", "t", "k", 0.05):
                    pass
        async with key_guard(led, "s", "t", "k", 0.05):  # released: free again
            return True

    assert asyncio.run(scenario())


def test_many_threads_opening_a_fresh_state_file_at_once_all_succeed(tmp_path):
    """SQLite may answer 'database is locked' at once (without its busy handler) while a fresh file is
    switched to WAL; opening retries, so no opener fails (a failed opener once hung a race test)."""
    from portagent.tools import ApprovalStore

    for trial in range(10):
        barrier = threading.Barrier(8)
        errors: list[str] = []

        def opener(i, trial=trial, barrier=barrier, errors=errors):
            try:
                barrier.wait(timeout=30)
                cls, name = (EffectLedger, "l.db") if i % 2 else (ApprovalStore, "a.db")
                cls(tmp_path / f"t{trial}" / name).close()
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=opener, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert errors == []
