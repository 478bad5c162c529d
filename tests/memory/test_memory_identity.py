"""A memory's identity follows its content (QA: ``memory edit`` kept the id of the old statement).

The store's promise (docs/memory.md): the same fact from the same source is one record, and a write that
says "stored" leaves a record recall returns, as the write described it. These tests drive the real SQLite
store, the CLI and the real ``remember``/``recall`` handlers (``PORTAGENT_HOME`` is the test's own folder,
tests/conftest.py).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.contracts.memory import MemoryWrite, memory_id_for
from portagent.core.home import portagent_home
from portagent.tools.memory import recall, remember
from portagent.tools.memory_store import MemoryStore, MemoryWriteRefused
from portagent.tools.tool_context import ToolContext

NFC_NAME = "José handles refunds"
NFD_NAME = unicodedata.normalize("NFD", NFC_NAME)


def fact(statement: str, **kw: Any) -> MemoryWrite:
    base: dict[str, Any] = {
        "statement": statement,
        "source": "docs/r.md:1",
        "scope": "project",
        "expires_at": "never",
        "confidence": 0.9,
    }
    return MemoryWrite(**{**base, **kw})


def add(statement: str, *extra: str, expires: str = "never", confidence: str = "0.9") -> tuple[int, str, str]:
    return run_cli(
        "memory", "add", "--statement", statement, "--source", "docs/r.md:1", "--scope", "project",
        "--expires", expires, "--confidence", confidence, "--owner", "team", *extra,
    )  # fmt: skip


def listed() -> list[dict[str, Any]]:
    code, out, err = run_cli("memory", "list", "--json")
    assert code == 0, err
    return list(json.loads(out))


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def ctx(tool: str) -> ToolContext:
    return ToolContext(run_id="run_id", agent="desk", call_id="call_1", provider="local", tool=tool)


# --- 1. edit: the id follows the content ------------------------------------------------------------------


def test_remembering_the_original_fact_after_an_edit_stores_it():
    """QA repro: add, edit the statement, add the original again — it said "stored" and stored nothing."""
    code, out, err = add("Refunds take 14 days")
    assert code == 0, err
    first = out.split()[1]
    code, out, err = run_cli("memory", "edit", first, "--statement", "Refunds take 30 days")
    assert code == 0, err
    code, out, err = add("Refunds take 14 days")
    assert code == 0 and out.startswith("stored "), (out, err)
    stored = out.split()[1]
    by_id = {r["memory_id"]: r for r in listed()}
    assert by_id[stored]["statement"] == "Refunds take 14 days"
    assert sorted(r["statement"] for r in by_id.values()) == ["Refunds take 14 days", "Refunds take 30 days"]
    for r in by_id.values():  # every id is its content's id
        assert r["memory_id"] == memory_id_for(r["scope"], r["owner"], r["statement"], r["source"])
    code, out, _ = run_cli("memory", "search", "14 days", "--json")
    assert json.loads(out)[0]["record"]["statement"] == "Refunds take 14 days"


def test_editing_a_record_into_a_fact_already_stored_is_refused():
    """QA variant: add "30 days", edit another record to "30 days" — two active records of one fact."""
    add("Refunds take 30 days")
    code, out, _ = add("Refunds take 14 days")
    other = out.split()[1]
    before = listed()
    code, _, err = run_cli("memory", "edit", other, "--statement", "Refunds take 30 days")
    assert code == 2 and "already memory" in one_line(err)
    assert listed() == before
    statements = [(r["statement"], r["source"]) for r in listed() if r["status"] == "active"]
    assert len(statements) == len(set(statements)) == 2


def test_the_agents_remember_after_an_edit_is_stored_and_recalled():
    remember("Refunds take 14 days", "docs/r.md:1", "project", "never", 0.9, ctx("remember"))
    store = MemoryStore()
    try:
        (record,) = store.records()
        edited = store.edit(record.memory_id, statement="Refunds take 30 days")
    finally:
        store.close()
    assert edited.memory_id != record.memory_id
    result = remember("Refunds take 14 days", "docs/r.md:1", "project", "never", 0.9, ctx("remember"))
    assert result["stored"] is True and result["outcome"] == "stored"
    found = recall("refunds 14 days", ctx("recall"))["memories"]
    assert [m["memory_id"] for m in found][:1] == [result["memory_id"]]
    assert found[0]["statement"] == "Refunds take 14 days"


def test_an_edit_moves_the_supersession_links_to_the_new_id():
    store = MemoryStore()
    try:
        old = store.write(fact("Refunds take 7 days"), owner="team", written_by="test")
        new = store.write(
            fact("Refunds take 14 days", supersedes=old.memory_id), owner="team", written_by="t"
        )
        edited = store.edit(new.memory_id, statement="Refunds take 30 days")
        assert store.get(new.memory_id) is None
        again = store.get(old.memory_id)
        assert again is not None and again.superseded_by == edited.memory_id
        assert edited.supersedes == old.memory_id
    finally:
        store.close()


def test_a_record_edited_by_an_older_version_is_rekeyed_on_the_next_write(tmp_path: Path):
    """A store edited before ids followed content: its record still has the old statement's id."""
    store = MemoryStore()
    try:
        record = store.write(fact("Refunds take 14 days"), owner="team", written_by="test")
        stale = record.model_copy(update={"statement": "Refunds take 30 days"})
        store._put(stale)  # what the old ``edit`` left behind
        done = store.write_fact(fact("Refunds take 14 days"), owner="team", written_by="test")
        assert done.outcome == "stored" and done.record.statement == "Refunds take 14 days"
        statements = sorted(r.statement for r in store.records())
        assert statements == ["Refunds take 14 days", "Refunds take 30 days"]
    finally:
        store.close()


# --- 2. the same fact again: its new expiry and confidence are not dropped ----------------------------------


def test_adding_a_stored_fact_with_new_confidence_and_expiry_updates_it():
    code, out, _ = add("Refunds take 14 days")
    memory_id = out.split()[1]
    code, out, err = add("Refunds take 14 days", expires="2999-01-01", confidence="0.4")
    assert code == 0, err
    assert out.startswith(f"updated {memory_id}") and "confidence 0.9 -> 0.4" in out, out
    (record,) = listed()
    assert (record["confidence"], record["expires_at"]) == (0.4, "2999-01-01")
    code, out, _ = add("Refunds take 14 days", expires="2999-01-01", confidence="0.4")
    assert out.startswith(f"unchanged {memory_id}"), out


def test_remember_of_a_stored_fact_reports_what_it_changed():
    first = remember("Refunds take 14 days", "docs/r.md:1", "project", "never", 0.9, ctx("remember"))
    again = remember("Refunds take 14 days", "docs/r.md:1", "project", "2999-01-01", 0.5, ctx("remember"))
    assert again["memory_id"] == first["memory_id"] and again["outcome"] == "updated"
    assert again["changes"]["confidence"] == {"was": 0.9, "now": 0.5}
    (m,) = recall("refunds 14 days", ctx("recall"))["memories"]
    assert (m["confidence"], m["expires_at"]) == (0.5, "2999-01-01")


# --- 3. one Unicode form ------------------------------------------------------------------------------------


def test_nfc_and_nfd_are_one_record_and_recall_finds_it():
    assert NFC_NAME != NFD_NAME
    code, out, err = add(NFD_NAME)
    assert code == 0, err
    code, out, err = add(NFC_NAME)
    assert code == 0 and out.startswith("unchanged "), (out, err)
    (record,) = listed()
    assert record["statement"] == NFC_NAME
    found = recall("José", ctx("recall"))["memories"]  # the gateway hands tools NFC text
    assert [m["statement"] for m in found] == [NFC_NAME]
    code, out, _ = run_cli("memory", "search", unicodedata.normalize("NFD", "José"), "--json")
    assert [f["record"]["statement"] for f in json.loads(out)] == [NFC_NAME]


def test_an_nfd_note_is_imported_in_nfc(tmp_path: Path):
    vault = tmp_path / "vault"
    vault.mkdir()
    note = f"---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: {NFD_NAME}\n---\n{NFD_NAME}\n"
    (vault / "jose.md").write_text(note, encoding="utf-8")
    code, _, err = run_cli(
        "memory", "import", str(vault), "--scope", "project", "--expires", "never", "--confidence", "0.8"
    )
    assert code == 0, err
    (record,) = listed()
    assert record["statement"] == NFC_NAME and record["source"].startswith(NFC_NAME)
    assert [m["statement"] for m in recall("José", ctx("recall"))["memories"]] == [NFC_NAME]
    code, out, err = run_cli(
        "memory", "import", str(vault), "--scope", "project", "--expires", "never", "--confidence", "0.8"
    )
    assert code == 0 and "1 unchanged" in out, (out, err)


# --- 4. numbers that no date can hold -----------------------------------------------------------------------


@pytest.mark.parametrize("days", ["3000000", "99999999999"])
def test_import_ttl_past_the_last_date_is_one_message(tmp_path: Path, days: str):
    vault = tmp_path / "vault"
    vault.mkdir()
    note = "---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: docs/r.md:1\n---\nRefunds take 14 days\n"
    (vault / "r.md").write_text(note, encoding="utf-8")
    code, _, err = run_cli(
        "memory", "import", str(vault), "--scope", "project", "--ttl-days", days, "--confidence", "0.8"
    )
    assert code == 2 and f"--ttl-days {days} reaches past the year 9999" in one_line(err)
    assert not (portagent_home(None) / "memory.db").exists()


def test_a_refused_edit_names_the_record_and_writes_nothing():
    store = MemoryStore()
    try:
        a = store.write(fact("Refunds take 14 days"), owner="team", written_by="test")
        b = store.write(fact("Refunds take 30 days"), owner="team", written_by="test")
        with pytest.raises(MemoryWriteRefused, match=b.memory_id):
            store.edit(a.memory_id, statement="Refunds take 30 days")
        assert store.get(a.memory_id) == a and store.get(b.memory_id) == b
    finally:
        store.close()
