"""The governed memory store (issue 16 part 2; design source ch. 04 "Tropiezos → tests").

Memory tools run through the gateway inside real SDK runs against the emulator: the policy decides
(a denied write is never stored), the tool's schema refuses a write without source, scope or expiry
before the handler runs, and what ``recall`` sends back to the model (read from the emulator's request
log) carries each memory's explanation and ``last_retrieved``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.bundle import load_agent
from portagent.contracts.memory import MemoryWrite, RetrievalWeights
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tools.memory_store import MemoryStore, MemoryWriteRefused

DATA = Path(__file__).resolve().parent / "data"
SCRIPT = DATA / "script.yaml"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Clock(FixedClock):
    def __init__(self, now: datetime = NOW) -> None:
        super().__init__()
        self._now = now

    def now(self) -> datetime:
        return self._now


def store(now: datetime = NOW) -> MemoryStore:
    return MemoryStore(clock=Clock(now))


def fact(statement: str, **kw: Any) -> MemoryWrite:
    base: dict[str, Any] = {
        "statement": statement,
        "source": "docs/rules.md:1",
        "scope": "project",
        "expires_at": "never",
        "confidence": 0.9,
    }
    return MemoryWrite(**{**base, **kw})


# --- the store: governed writes --------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["source", "scope", "expires_at", "confidence"])
def test_write_without_source_scope_expiry_or_confidence_is_rejected(missing):
    data = {
        "statement": "Refunds need the order id",
        "source": "docs/r.md:1",
        "scope": "project",
        "expires_at": "never",
        "confidence": 0.9,
    }
    del data[missing]
    with pytest.raises(ValueError, match=missing):
        MemoryWrite(**data)


@pytest.mark.parametrize(
    "bad",
    [{"source": "   "}, {"confidence": 1.5}, {"expires_at": "soon"}, {"scope": "team"}, {"type": "rumour"}],
)
def test_write_with_bad_values_is_rejected(bad):
    with pytest.raises(ValueError):
        fact("Refunds need the order id", **bad)


def test_past_expiry_paused_store_and_unknown_supersedes_refused():
    s = store()
    with pytest.raises(MemoryWriteRefused, match="already past"):
        s.write(fact("Old rule here", expires_at="2026-05-01"), owner="ana", written_by="t")
    with pytest.raises(MemoryWriteRefused, match="supersedes"):
        s.write(fact("New rule here", supersedes="mem_0000000000000000"), owner="ana", written_by="t")
    with pytest.raises(MemoryWriteRefused, match="owner"):
        s.write(fact("Ownerless rule"), owner=" ", written_by="t")
    s.set_paused(True)
    with pytest.raises(MemoryWriteRefused, match="paused"):
        s.write(fact("Any rule here"), owner="ana", written_by="t")
    s.set_paused(False)
    assert s.records() == []
    r = s.write(fact("Any rule here"), owner="ana", written_by="t")
    assert r.owner == "ana" and r.created_at.startswith("2026-06-01") and s.records() == [r]
    # the same fact from the same source is one record
    assert s.write(fact("Any  rule here"), owner="ana", written_by="t").memory_id == r.memory_id
    s.close()


def test_remembering_an_expired_fact_again_refreshes_it_so_it_is_recalled():
    """The same fact from the same source is one record: written again after it expired, it takes the new
    write's expiry (and confidence, type) — a writer told "stored" must find it on recall."""
    early = store(NOW - timedelta(days=30))
    old = early.write(
        fact("Refund deadline is 14 days", expires_at="2026-05-15", confidence=0.5),
        owner="ana",
        written_by="t",
    )
    early.close()
    s = store()
    assert s.search("refund deadline") == []
    again = s.write(fact("Refund deadline is 14 days", confidence=0.8), owner="ana", written_by="t2")
    assert again.memory_id == old.memory_id and again.expires_at == "never" and again.confidence == 0.8
    assert again.created_at == old.created_at and again.written_by == "t"  # the record's history stays
    assert [f.record.memory_id for f in s.search("refund deadline")] == [old.memory_id]
    assert len(s.records()) == 1
    s.close()


def test_remembering_a_superseded_or_forgotten_fact_again_is_refused_not_reported_stored():
    s = store()
    old = s.write(fact("Support answers within 48 hours"), owner="ana", written_by="t")
    new = s.write(
        fact("Support answers within 24 hours", source="docs/sla.md:4", supersedes=old.memory_id),
        owner="ana",
        written_by="t",
    )
    with pytest.raises(MemoryWriteRefused, match=f"superseded by {new.memory_id}.*nothing stored"):
        s.write(fact("Support answers within 48 hours"), owner="ana", written_by="t")
    s.retire(new.memory_id, "the user said so", owners={"project": "ana"})
    before = s.records()
    with pytest.raises(MemoryWriteRefused, match=r"forgotten \(the user said so\)"):
        s.write(fact("Support answers within 24 hours", source="docs/sla.md:4"), owner="ana", written_by="t")
    # a write that supersedes while hitting a stale record is rolled back whole
    with pytest.raises(MemoryWriteRefused, match="superseded"):
        s.write(
            fact("Support answers within 48 hours", supersedes=new.memory_id), owner="ana", written_by="t"
        )
    assert s.records() == before and s.search("support answers hours") == []
    s.close()


# --- retrieval ----------------------------------------------------------------------------------------


def test_expired_memory_is_not_retrieved_and_loses_to_a_valid_one():
    early = store(NOW - timedelta(days=30))
    stale = early.write(
        fact("Refund deadline is 14 days", expires_at="2026-05-15"), owner="ana", written_by="t"
    )
    early.close()
    s = store()
    valid = s.write(fact("Refund deadline is 30 days", confidence=0.6), owner="ana", written_by="t")
    found = s.search("refund deadline")
    assert [f.record.memory_id for f in found] == [valid.memory_id]
    everything = s.search("refund deadline", include_stale=True, touch=False)
    assert [f.record.memory_id for f in everything] == [valid.memory_id, stale.memory_id]
    assert "expired 2026-05-15" in everything[1].explanation and everything[1].parts["vig"] == 0
    # even weights that favour confidence over validity keep a stale record below a valid one
    tilted = RetrievalWeights(alpha=0.1, beta=0.0, gamma=1.0)
    early = store(NOW - timedelta(days=30))
    early.write(
        fact("Refund deadline is 14 days, said the director", confidence=1.0, expires_at="2026-06-01T11:00Z"),
        owner="ana",
        written_by="t",
    )
    early.close()
    order = s.search("refund deadline", include_stale=True, weights=tilted, touch=False)
    assert order[0].record.memory_id == valid.memory_id
    s.close()


def test_superseded_memory_loses_to_its_replacement():
    s = store()
    old = s.write(fact("Support answers within 48 hours"), owner="ana", written_by="t")
    new = s.write(
        fact("Support answers within 24 hours", source="docs/sla.md:4", supersedes=old.memory_id),
        owner="ana",
        written_by="t",
    )
    assert s.get(old.memory_id).status == "superseded" and s.get(old.memory_id).superseded_by == new.memory_id
    assert [f.record.memory_id for f in s.search("support answers hours")] == [new.memory_id]
    both = s.search("support answers hours", include_stale=True, touch=False)
    assert [f.record.memory_id for f in both] == [new.memory_id, old.memory_id]
    assert f"superseded by {new.memory_id}" in both[1].explanation
    s.close()


def test_ranking_explains_itself_and_records_last_retrieved():
    s = store()
    precise = s.write(fact("Refunds need the order id"), owner="ana", written_by="t")
    vague = s.write(
        fact("Orders ship from Madrid with tracking numbers and insurance"), owner="ana", written_by="t"
    )
    first = s.search("refund order id")
    assert [f.record.memory_id for f in first] == [precise.memory_id, vague.memory_id]
    top = first[0]
    assert top.parts["rel"] == 1.0 and top.score > first[1].score
    assert (
        "matched 3/3 query terms (refund, order, id)" in top.explanation
        and "docs/rules.md:1" in top.explanation
    )
    assert top.record.last_retrieved == "2026-06-01T12:00:00.000Z" and top.previous_retrieval is None
    s.close()
    later = store(NOW + timedelta(hours=1))
    again = later.search("refund order id", k=1)
    assert again[0].previous_retrieval == "2026-06-01T12:00:00.000Z"
    assert later.get(precise.memory_id).retrieval_count == 2
    assert later.search("weather in Paris") == []  # nothing relevant: nothing returned
    later.close()


def test_scope_separation():
    s = store()
    s.write(fact("Ana prefers email", scope="user"), owner="ana", written_by="t")
    s.write(fact("Ben prefers phone", scope="user"), owner="ben", written_by="t")
    s.write(fact("The billing agent rounds prefers cents", scope="agent"), owner="billing", written_by="t")
    seen = s.search("prefers", owners={"user": "ana", "agent": "desk"}, touch=False)
    assert [f.record.statement for f in seen] == ["Ana prefers email"]
    s.close()


# --- the memory tools in real runs, under the policy ---------------------------------------------------


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(SCRIPT)) as running:
        yield running


def run_agent(
    emu: Any, tmp: Path, provider: str, text: str, agent: str = "keeper.yaml", actor: str = "ana"
) -> Any:
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        ids=IdFactory("memory"),
        options=RunOptions(workdir=tmp / "work", extra={"context_manifest": True}),
    )
    request = RunRequest(input=text, provider=provider, actor=actor)
    return asyncio.run(asyncio.wait_for(arun_full(load_agent(DATA / agent), request, config), 120))


def tool_results(out: Any) -> list[Any]:
    return [e for e in out.events if e.type == "tool.result"]


def records() -> list[Any]:
    s = MemoryStore()
    try:
        return s.records()
    finally:
        s.close()


def test_policy_denied_write_is_never_stored(emu, tmp_path):
    out = run_agent(emu, tmp_path, "openai", "I prefer email.", agent="keeper_denied.yaml")
    decision = next(e for e in out.events if e.type == "permission.decision")
    assert decision.decision == "deny" and decision.rule == "no-memory-writes"
    assert tool_results(out)[0].error == "permission_denied"
    assert out.result.final_output == "permission_denied"
    assert not [e for e in out.events if e.type.startswith("memory.")]
    assert records() == []


def test_write_needing_approval_rejected_is_never_stored(emu, tmp_path):
    """Project memories have no allow rule: the effect-class default (approval) applies, auto-deny rejects."""
    out = run_agent(emu, tmp_path, "openai", "Remember the refund rule.")
    decision = next(e for e in out.events if e.type == "permission.decision")
    assert decision.decision == "approval_required" and decision.rule == "default:reversible_write"
    assert tool_results(out)[0].error == "approval_rejected" and records() == []


def test_write_without_source_is_refused_by_the_tool_schema(emu, tmp_path):
    out = run_agent(emu, tmp_path, "adk", "Remember this without a source.")
    result = tool_results(out)[0]
    assert result.error == "validation_error" and "source" in json.dumps(result.output)
    assert records() == []


def test_allowed_write_is_stored_and_recalled_on_another_provider(emu, tmp_path):
    out = run_agent(emu, tmp_path, "openai", "I prefer email.")
    [stored] = records()
    assert out.result.final_output == stored.memory_id
    write = next(e for e in out.events if e.type == "memory.write")
    assert (write.operation, write.memory_id, write.scope, write.owner) == (
        "remember",
        stored.memory_id,
        "user",
        "ana",
    )
    assert stored.scope == "user" and stored.owner == "ana" and stored.source == "user message in session"
    assert stored.written_by == f"run:{out.result.run_id}/keeper"

    before = len(emu.requests())
    out = run_agent(emu, tmp_path, "claude", "How should you contact me?")
    assert out.result.final_output == "The user prefers email over phone"
    # what the model was given back: the memory with its explanation and last_retrieved
    sent = json.dumps([r["body"] for r in emu.requests()[before:]])
    assert "matched" in sent and "last_retrieved" in sent and stored.memory_id in sent
    assert records()[0].retrieval_count == 1
    read = next(e for e in out.events if e.type == "memory.read")
    assert read.memory_ids == [stored.memory_id] and read.query == "contact preference email phone"
    # the context manifest of the call after recall names the retrieved memory as a memory part
    manifests = [e for e in out.events if e.type == "context.manifest"]
    assert [p.type for p in manifests[-1].parts][-1] == "memory"
    assert stored.memory_id in manifests[-1].parts[-1].source
    assert [p.type for p in manifests[0].parts] == ["instruction", "tools", "input"]

    # another user sees nothing of ana's
    out = run_agent(emu, tmp_path, "openai", "How should you contact me?", actor="ben")
    assert out.result.final_output == "nothing remembered"


def test_paused_store_refuses_the_tool(emu, tmp_path):
    code, _, _ = run_cli("memory", "pause")
    assert code == 0
    out = run_agent(emu, tmp_path, "openai", "I prefer email.")
    result = tool_results(out)[0]
    assert result.error == "permission_denied" and "paused" in json.dumps(result.output)
    assert records() == []


def test_session_history_is_never_promoted_to_memory(tmp_path):
    """A thread of several runs (tests/sessions) leaves the memory store untouched: no file is even made."""
    from portagent.runtime.session_store import SqliteSessionStore

    sessions = SqliteSessionStore()
    sessions.append(
        "t",
        [("user", "I prefer email."), ("assistant", "Noted.")],
        provider="openai",
        run_id="run_1",
        agent="keeper",
    )
    sessions.close()
    home = Path(os.environ["PORTAGENT_HOME"])
    assert (home / "sessions.db").exists() and not (home / "memory.db").exists()


# --- the CLI: human controls ---------------------------------------------------------------------------


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def add(*extra: str) -> tuple[int, str, str]:
    return run_cli(
        "memory",
        "add",
        "--statement",
        "Refunds need the order id",
        "--source",
        "docs/refunds.md:12",
        "--scope",
        "project",
        "--expires",
        "never",
        "--confidence",
        "0.9",
        *extra,
    )


def test_cli_list_show_edit_search_delete_pause():
    code, out, err = add()
    assert code == 0, err
    memory_id = out.split()[1]
    code, out, _ = run_cli("memory", "list")
    assert code == 0 and memory_id in out and "Refunds need the order id" in out
    code, out, _ = run_cli("memory", "show", memory_id, "--json")
    assert json.loads(out)["source"] == "docs/refunds.md:12" and json.loads(out)["last_retrieved"] is None
    code, out, _ = run_cli(
        "memory", "edit", memory_id, "--statement", "Refunds need the order id and a reason"
    )
    assert code == 0 and "(now mem_" in out  # a new statement: the id of the new content
    memory_id = out.split("(now ")[1].split(":")[0]
    code, out, _ = run_cli("memory", "search", "refund reason")
    assert code == 0 and "matched 2/2 query terms" in out and "last retrieved never" in out
    code, out, _ = run_cli("memory", "search", "refund reason", "--json")
    assert json.loads(out)[0]["record"]["statement"] == "Refunds need the order id and a reason"
    code, out, _ = run_cli("memory", "pause")
    assert code == 0
    code, _, err = add("--supersedes", memory_id)
    assert code == 2 and "paused" in one_line(err)
    code, out, _ = run_cli("memory", "list")
    assert "paused" in out
    run_cli("memory", "resume")
    code, out, _ = run_cli("memory", "delete", memory_id)
    assert code == 0 and "deleted" in out
    code, out, _ = run_cli("memory", "list", "--json")
    assert json.loads(out) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--source", ""), "--source"),
        (("--expires", "next week"), "--expires"),
        (("--confidence", "2"), "--confidence"),
        (("--expires", "2001-01-01"), "already past"),
        (("--supersedes", "mem_0000000000000000"), "supersedes"),
    ],
)
def test_cli_add_bad_record(argv, message):
    code, _, err = add(*argv)
    assert code == 2 and message in one_line(err)
    code, out, _ = run_cli("memory", "list", "--json")
    assert code == 0 and json.loads(out) == []


def test_cli_add_without_source_is_a_usage_error():
    code, _, err = run_cli(
        "memory", "add", "--statement", "x y z", "--scope", "user", "--expires", "never", "--confidence", "1"
    )
    assert code == 2 and "--source" in err


@pytest.mark.parametrize("action", ["show", "edit", "delete"])
def test_cli_unknown_memory_id(action):
    add()
    extra = ("--confidence", "0.5") if action == "edit" else ()
    code, _, err = run_cli("memory", action, "mem_ffffffffffffffff", *extra)
    assert code == 2 and "no memory 'mem_ffffffffffffffff'" in one_line(err)


def test_cli_edit_is_revalidated():
    _, out, _ = add()
    memory_id = out.split()[1]
    code, _, err = run_cli("memory", "edit", memory_id, "--confidence", "-1")
    assert code == 2 and "--confidence" in one_line(err)
    code, _, err = run_cli("memory", "edit", memory_id)
    assert code == 2 and "nothing to change" in one_line(err)


def test_cli_edit_refuses_a_past_expiry_as_add_does():
    _, out, _ = add()
    memory_id = out.split()[1]
    code, _, err = run_cli("memory", "edit", memory_id, "--expires", "2001-01-01")
    assert code == 2 and "already past" in one_line(err)
    code, out, _ = run_cli("memory", "show", memory_id, "--json")
    assert json.loads(out)["expires_at"] == "never" and json.loads(out)["updated_at"] is None
    code, _, err = run_cli("memory", "edit", memory_id, "--expires", "2999-01-01")
    assert code == 0, err


def test_cli_corrupt_store():
    home = Path(os.environ["PORTAGENT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "memory.db").write_bytes(b"garbage" * 200)
    code, _, err = run_cli("memory", "list")
    assert code == 2 and "memory store" in one_line(err)
    (home / "memory.db").unlink()
    con = sqlite3.connect(home / "memory.db")
    con.execute("CREATE TABLE memories (memory_id TEXT)")
    con.commit()
    con.close()
    code, _, err = run_cli("memory", "list")
    assert code == 2 and "damaged" in one_line(err)


def test_cli_store_with_a_record_that_no_longer_parses_is_damaged():
    """A row whose stored record is not JSON, or not a record, is named as the store's damage (one line,
    exit 2), as the session store names its own (``tools.sqlite_state.StoreDamage``)."""
    from portagent.tools.memory_store import MemoryStore

    home = Path(os.environ["PORTAGENT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    MemoryStore(home / "memory.db").close()  # the store's own schema
    con = sqlite3.connect(home / "memory.db")
    con.execute("INSERT INTO memories VALUES ('m1', 'user', 'ana', 'active', '{not json')")
    con.commit()
    code, _, err = run_cli("memory", "list")
    assert code == 2 and "is damaged (a stored record is invalid" in one_line(err) and "Traceback" not in err
    con.execute("UPDATE memories SET record = '{\"statement\": 3}' WHERE memory_id = 'm1'")
    con.commit()
    con.close()
    code, _, err = run_cli("memory", "list")
    assert code == 2 and "is damaged (a stored record is invalid at " in one_line(err)


def test_cli_restore_undoes_an_agents_forget():
    """``forget`` is declared reversible: ``memory restore`` makes a forgotten record recalled again. A
    superseded record is not "forgotten" (its replacement is recalled), and an active one has no forget
    to undo: both are refused with why, nothing changed."""
    _, out, _ = add()
    memory_id = out.split()[1]
    s = MemoryStore()
    try:
        s.retire(memory_id, "outdated", owners={})
    finally:
        s.close()
    code, out, _ = run_cli("memory", "search", "refund order", "--json")
    assert code == 0 and json.loads(out) == []
    code, out, err = run_cli("memory", "restore", memory_id)
    assert code == 0 and f"restored {memory_id}" in out, err
    code, out, _ = run_cli("memory", "search", "refund order", "--json")
    assert [f["record"]["memory_id"] for f in json.loads(out)] == [memory_id]
    code, out, _ = run_cli("memory", "show", memory_id, "--json")
    shown = json.loads(out)
    assert shown["status"] == "active" and shown["retired_reason"] is None and shown["updated_at"]
    code, _, err = run_cli("memory", "restore", memory_id)
    assert code == 2 and "is active" in one_line(err)
    code, out, _ = add("--statement", "Refunds need the order id and a photo", "--supersedes", memory_id)
    newer = out.split()[1]
    code, _, err = run_cli("memory", "restore", memory_id)
    assert code == 2 and f"superseded by {newer}" in one_line(err)
    code, out, _ = run_cli("memory", "show", memory_id, "--json")
    assert json.loads(out)["status"] == "superseded"


def test_cli_restore_of_an_unknown_memory_is_a_usage_error():
    code, _, err = run_cli("memory", "restore", "mem_ffffffffffffffff")
    assert code == 2 and "no memory 'mem_ffffffffffffffff'" in one_line(err)


def test_cli_listings_show_escape_sequences_instead_of_obeying_them():
    """A statement is what an agent or a note wrote: printed raw, an escape sequence could erase or rewrite
    the lines a person reads (and a bidi override reorder them). Text output shows them escaped, one record
    per line; --json keeps the stored text exactly."""
    hostile = "Refunds \x1b[2K\x1b[1Aneed\u202e the id\nmem_0000000000000000  project:x  active  fake"
    code, out, err = add("--statement", hostile)
    assert code == 0, err
    memory_id = out.split()[1]
    for argv in (("list",), ("show", memory_id), ("search", "refunds"), ("delete", memory_id)):
        code, out, err = run_cli("memory", *argv)
        assert code == 0, err
        assert "\x1b" not in out and "\u202e" not in out, argv
        assert "\\x1b[2K" in out and "\\u202e" in out and "\\x0a" in out, (argv, out)
        assert "mem_0000000000000000" not in out.splitlines()[0][:20], argv
    _, out, _ = add("--statement", hostile)
    code, out, _ = run_cli("memory", "list", "--json")
    assert json.loads(out)[0]["statement"] == hostile
