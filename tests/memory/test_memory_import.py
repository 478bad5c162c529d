"""Notes ingestion (issue 16; design source ch. 04 "Tropiezos → tests": "Obsidian as automatic memory →
ingestion requires metadata (type, status, date, source). Notes without metadata are flagged.").

A small vault is written in ``tmp_path``; ``portagent memory import`` stores the notes whose front matter has
type, status, date and source and flags every other one (exit 1). What was stored is found by the real
``recall`` handler through the real store (``PORTAGENT_HOME`` is the test's own folder, tests/conftest.py).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.tools.memory import recall
from portagent.tools.memory_import import note_statement, split_front_matter
from portagent.tools.memory_store import MemoryStore
from portagent.tools.tool_context import ToolContext

GOOD = {
    "policies/refunds.md": """---
type: procedural
status: active
date: 2026-11-02
source: docs/refunds.md:12
tags: [policy]
---
# Refunds

Refunds need the order id
and a reason.

Anything after the first paragraph is not the statement.
""",
    "facts/sla.md": """---
type: semantic
status: Approved
date: 2026-10-15T09:00:00Z
source: [https://example.com/sla, ops call 2026-10-14]
statement: Support answers within 24 hours
---
# SLA

Long notes about the SLA that the front matter's statement summarises.
""",
    "team/people/ana.md": """---
type: semantic
status: final
date: "2026-09-01"
source: Ana, kick-off meeting
---
Ana is the billing owner.
""",
}
FLAGGED = {
    "inbox/no_source.md": """---
type: semantic
status: active
date: 2026-11-01
---
Orders ship from Madrid.
""",
    "inbox/plain.md": "# Just a page\n\nWarehouses close at 18:00.\n",
    "inbox/broken.md": """---
type: semantic
status: [active
source: somewhere
---
Parcels are insured.
""",
    "inbox/draft.md": """---
type: semantic
status: draft
date: 2026-11-20
source: brainstorm
---
Shipping is free worldwide.
""",
}
EXPECTED_REASONS = {
    "inbox/no_source.md": "missing metadata: source",
    "inbox/plain.md": "no front matter (the note must start with a '---' line)",
    "inbox/draft.md": "status 'draft' is not ingested: only active, approved, final, published notes are "
    "(drafts and archived notes are not current knowledge)",
}
HIDDEN = {".obsidian/templates/template.md": "# no metadata\n", ".trash/old.md": "Refunds are instant.\n"}


def write_vault(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = write_vault(tmp_path / "vault", {**GOOD, **FLAGGED, **HIDDEN})
    (root / "attachments").mkdir()
    (root / "attachments" / "notes.txt").write_text("not a note")
    return root


def import_(folder: Path, *extra: str, json_out: bool = True) -> tuple[int, Any, str]:
    argv = ["memory", "import", str(folder), "--scope", "project", "--owner", "team", "--confidence", "0.8"]
    if not any(a in extra for a in ("--expires", "--ttl-days")):
        argv += ["--expires", "never"]
    code, out, err = run_cli(*argv, *extra, *(["--json"] if json_out else []))
    return code, (json.loads(out) if json_out and out else out), err


def records() -> list[Any]:
    home = Path(os.environ["PORTAGENT_HOME"])
    if not (home / "memory.db").exists():
        return []
    s = MemoryStore()
    try:
        return s.records()
    finally:
        s.close()


def recall_as(query: str) -> list[dict[str, Any]]:
    ctx = ToolContext(run_id="run_import", agent="desk", call_id="call_1", provider="local", tool="recall")
    return list(recall(query, ctx)["memories"])


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- the vault: stored vs flagged ----------------------------------------------------------------------


def test_import_stores_notes_with_metadata_and_flags_the_rest(vault):
    code, doc, err = import_(vault)
    assert code == 1, err
    stored = {s["note"]: s for s in doc["stored"]}
    assert sorted(stored) == sorted(GOOD) and doc["unchanged"] == []
    assert stored["policies/refunds.md"]["statement"] == "Refunds need the order id and a reason."
    assert stored["facts/sla.md"]["statement"] == "Support answers within 24 hours"
    assert stored["team/people/ana.md"]["statement"] == "Ana is the billing owner."
    assert stored["facts/sla.md"]["source"] == (
        "https://example.com/sla; ops call 2026-10-14 (note vault/facts/sla.md)"
    )
    flagged = {f["note"]: f["reason"] for f in doc["flagged"]}
    assert sorted(flagged) == sorted(FLAGGED)  # hidden folders and non-Markdown files are not notes
    for note, reason in EXPECTED_REASONS.items():
        assert flagged[note] == reason
    assert flagged["inbox/broken.md"].startswith("front matter is not valid YAML at line 4:")

    # exactly the good notes are in the store, each with the note's metadata
    by_source = {r.source: r for r in records()}
    assert len(by_source) == 3
    refunds = by_source["docs/refunds.md:12 (note vault/policies/refunds.md)"]
    assert (refunds.type, refunds.scope, refunds.owner, refunds.confidence, refunds.expires_at) == (
        "procedural",
        "project",
        "team",
        0.8,
        "never",
    )
    assert refunds.status == "active" and refunds.written_by.startswith("cli:")
    assert {r.memory_id for r in by_source.values()} == {s["memory_id"] for s in doc["stored"]}


def test_recall_finds_the_stored_notes_only(vault):
    import_(vault)
    found = recall_as("refund order id")
    assert [m["statement"] for m in found] == ["Refunds need the order id and a reason."]
    assert "source docs/refunds.md:12 (note vault/policies/refunds.md)" in found[0]["explanation"]
    assert found[0]["last_retrieved"] is not None
    assert [m["statement"] for m in recall_as("support answers hours")] == ["Support answers within 24 hours"]
    # flagged notes' statements were never stored; the hidden .trash note neither
    assert recall_as("shipping free worldwide") == []
    assert recall_as("ship madrid") == []
    assert "Refunds are instant." not in {r.statement for r in records()}


def test_text_output_lists_stored_and_flagged(vault):
    code, out, _ = import_(vault, json_out=False)
    assert code == 1
    lines = out.splitlines()
    assert sum(ln.startswith("stored ") for ln in lines) == 3
    assert sum(ln.startswith("flagged ") for ln in lines) == 4
    assert any(
        ln.startswith("flagged") and "inbox/no_source.md  missing metadata: source" in ln for ln in lines
    )
    assert lines[-1] == "7 notes: 3 stored, 0 unchanged, 4 flagged (flagged notes are not stored)"


def test_reimport_is_idempotent_and_a_clean_vault_exits_0(vault):
    import_(vault)
    before = records()
    code, doc, _ = import_(vault)
    assert code == 1  # the flagged notes are still flagged
    assert doc["stored"] == [] and sorted(u["note"] for u in doc["unchanged"]) == sorted(GOOD)
    assert records() == before  # nothing written, not even a retrieval or a timestamp
    for rel in FLAGGED:
        (vault / rel).unlink()
    code, out, _ = import_(vault, json_out=False)
    assert code == 0 and out.splitlines()[-1] == "3 notes: 0 stored, 3 unchanged, 0 flagged"


def test_changed_note_supersedes_its_earlier_record(vault):
    _, first, _ = import_(vault)
    old_id = next(s["memory_id"] for s in first["stored"] if s["note"] == "policies/refunds.md")
    note = vault / "policies/refunds.md"
    note.write_text(note.read_text().replace("and a reason.", "and the payment date."))
    code, doc, _ = import_(vault)
    assert code == 1 and [s["note"] for s in doc["stored"]] == ["policies/refunds.md"]
    new = doc["stored"][0]
    assert new["supersedes"] == old_id and new["memory_id"] != old_id
    status = {r.memory_id: (r.status, r.superseded_by) for r in records()}
    assert status[old_id] == ("superseded", new["memory_id"]) and status[new["memory_id"]][0] == "active"
    assert [m["memory_id"] for m in recall_as("refund order id")] == [new["memory_id"]]
    # the edit undone: that text's record is superseded, so the note is flagged, not silently left stale
    note.write_text(note.read_text().replace("and the payment date.", "and a reason."))
    code, doc, _ = import_(vault)
    assert code == 1 and doc["stored"] == []
    assert "now superseded" in {f["note"]: f["reason"] for f in doc["flagged"]}["policies/refunds.md"]


def test_changed_metadata_updates_the_record_and_a_note_turned_archived_says_its_record_stays(vault):
    _, first, _ = import_(vault)
    ana = next(s["memory_id"] for s in first["stored"] if s["note"] == "team/people/ana.md")
    note = vault / "team/people/ana.md"
    note.write_text(note.read_text().replace("date:", "confidence: 0.4\nexpires: 2099-12-31\ndate:"))
    code, doc, _ = import_(vault)
    assert doc["stored"] == [] and doc["updated"] == [
        {
            "note": "team/people/ana.md",
            "memory_id": ana,
            "changes": {"confidence": 0.4, "expires_at": "2099-12-31"},
        }
    ]
    record = next(r for r in records() if r.memory_id == ana)
    assert (record.confidence, record.expires_at, record.status) == (0.4, "2099-12-31", "active")
    note.write_text(note.read_text().replace("status: final", "status: archived"))
    code, doc, _ = import_(vault)
    reason = {f["note"]: f["reason"] for f in doc["flagged"]}["team/people/ana.md"]
    assert (
        reason.startswith("status 'archived' is not ingested")
        and f"earlier record {ana} is still active" in reason
    )
    assert next(r for r in records() if r.memory_id == ana).status == "active"  # import never retires


def test_dry_run_writes_nothing(vault):
    code, out, _ = import_(vault, "--dry-run", json_out=False)
    assert code == 1 and "would store" in out and "3 would store" in out.splitlines()[-1]
    assert not (Path(os.environ["PORTAGENT_HOME"]) / "memory.db").exists()


# --- metadata checks -------------------------------------------------------------------------------------


def test_invalid_metadata_values_are_flagged_with_every_reason(tmp_path):
    folder = write_vault(
        tmp_path / "v",
        {
            "a.md": "---\ntype: meeting\nstatus: archived\ndate: yesterday\nsource: x\n---\nSome text here.\n",
            "b.md": "---\ntype: semantic\nstatus: active\ndate: 2099-01-01\nsource: the board\n---\nText.\n",
            "c.md": "---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: a b c\n"
            "confidence: 2\n---\nSome text here.\n",
            "d.md": "---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: a b c\n---\n# Only\n",
            "e.md": "---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: a b c\n---\n\n",
            "f.md": "---\n- a list\n---\nText here.\n",
            "g.md": "---\ntype: semantic\nstatus: active\n",
            "h.md": "---\ntype: semantic\nstatus: active\ndate: 2026-01-01\nsource: abc\n"
            "expires: 2020-01-01\n---\nText here.\n",
        },
    )
    code, doc, _ = import_(folder)
    flagged = {f["note"]: f["reason"] for f in doc["flagged"]}
    assert code == 1 and [s["note"] for s in doc["stored"]] == ["d.md"]  # the title is the statement
    assert doc["stored"][0]["statement"] == "Only"
    assert flagged["a.md"] == (
        "type 'meeting' is not a memory type (episodic, semantic, procedural, artifact); status 'archived' "
        "is not ingested: only active, approved, final, published notes are (drafts and archived notes are "
        "not current knowledge); date 'yesterday' is not an ISO date (YYYY-MM-DD)"
    )
    assert flagged["b.md"] == "date 2099-01-01 is in the future"
    assert flagged["c.md"] == "confidence: Input should be less than or equal to 1"
    assert flagged["e.md"] == "no statement: the note has no text (write one, or give 'statement:')"
    assert flagged["f.md"] == "front matter is not a mapping of keys to values (got list)"
    assert flagged["g.md"] == "front matter is not closed (no second '---' line)"
    assert flagged["h.md"] == "expired: valid until 2020-01-01, already past"
    assert len(records()) == 1


def test_ttl_days_counts_from_the_note_date(tmp_path):
    recent = (datetime.now(UTC).date() - timedelta(days=2)).isoformat()
    folder = write_vault(
        tmp_path / "v",
        {
            "old.md": "---\ntype: episodic\nstatus: active\ndate: 2020-01-01\nsource: abc\n---\nOld news.\n",
            "new.md": f"---\ntype: episodic\nstatus: active\ndate: {recent}\nsource: abc\n---\nFresh news.\n",
            "pinned.md": "---\ntype: semantic\nstatus: active\ndate: 2020-01-01\nsource: abc\nexpires: never\n"
            "---\nA lasting rule.\n",
        },
    )
    code, doc, _ = import_(folder, "--ttl-days", "30")
    assert code == 1
    assert {f["note"]: f["reason"] for f in doc["flagged"]} == {
        "old.md": "expired: dated 2020-01-01, --ttl-days 30: valid until 2020-01-31, already past"
    }
    expiry = {r.statement: r.expires_at for r in records()}
    want = (date.fromisoformat(recent) + timedelta(days=30)).isoformat()
    assert expiry == {"Fresh news.": want, "A lasting rule.": "never"}


# --- usage errors: exit 2, one line, nothing written -------------------------------------------------------


def test_missing_folder_is_one_line_and_exit_2(tmp_path):
    code, _, err = import_(tmp_path / "nope", json_out=False)
    assert code == 2 and "no folder" in one_line(err) and "nope" in err
    (tmp_path / "file.md").write_text("x")
    code, _, err = import_(tmp_path / "file.md", json_out=False)
    assert code == 2 and "is not a folder" in one_line(err)
    (tmp_path / "empty").mkdir()
    code, _, err = import_(tmp_path / "empty", json_out=False)
    assert code == 2 and "no Markdown notes" in one_line(err)
    assert not (Path(os.environ["PORTAGENT_HOME"]) / "memory.db").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--expires", "2001-01-01"), "already past"),
        (("--expires", "soon"), "--expires"),
        (("--ttl-days", "0"), "--ttl-days"),
        (("--confidence", "1.5"), "--confidence"),
    ],
)
def test_bad_flags_are_usage_errors(vault, argv, message):
    code, _, err = import_(vault, *argv, json_out=False)
    assert code == 2 and message in one_line(err)
    assert records() == []


def test_agent_scope_needs_owner_and_expiry_is_required(vault):
    code, _, err = run_cli(
        "memory", "import", str(vault), "--scope", "agent", "--expires", "never", "--confidence", "1"
    )
    assert code == 2 and "--owner" in one_line(err)
    code, _, err = run_cli("memory", "import", str(vault), "--scope", "user", "--confidence", "1")
    assert code == 2 and "--expires" in err and "Traceback" not in err
    assert records() == []


def test_paused_store_refuses_the_import(vault):
    assert run_cli("memory", "pause")[0] == 0
    code, _, err = import_(vault, json_out=False)
    assert code == 2 and "paused" in one_line(err)
    assert records() == []


# --- the parts --------------------------------------------------------------------------------------------


def test_statement_rules():
    assert note_statement({"statement": "  Given  here "}, "Body.") == "Given here"
    assert note_statement({}, "# Title\nFirst line\nsecond line\n\nNext.") == "First line second line"
    assert note_statement({}, "\n\n## Only a title ##\n") == "Only a title"
    assert note_statement({}, "   \n") is None
    meta, body = split_front_matter("\ufeff---\ntype: semantic\n...\nBody")
    assert meta == {"type": "semantic"} and body == "Body"


def test_a_date_that_does_not_exist_is_flagged_not_a_crash(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bad-date.md").write_text(
        "---\ntype: semantic\nstatus: active\ndate: 2024-02-30\nsource: handbook H-1\n---\nRefunds take 30 days.\n"
    )
    code, out, err = run_cli(
        "memory", "import", str(vault), "--scope", "project", "--confidence", "0.9", "--expires", "never"
    )
    assert code == 1 and "bad-date.md" in out + err and "cannot be read" in out + err
    assert "Traceback" not in out + err


def test_a_note_linked_from_outside_the_folder_is_flagged_not_read(tmp_path: Path) -> None:
    """Importing DIR reads DIR: a link in it to a note elsewhere (a file link, or a note reached through a
    linked folder) is flagged and never stored, whatever the note outside says."""
    outside = write_vault(tmp_path / "elsewhere", {"private.md": GOOD["policies/refunds.md"]})
    vault = write_vault(tmp_path / "vault", {"policies/refunds.md": GOOD["policies/refunds.md"]})
    (vault / "linked.md").symlink_to(outside / "private.md")
    (vault / "inbox").mkdir()
    (vault / "inbox" / "shared").symlink_to(outside, target_is_directory=True)
    (vault / "inbox" / "own.md").symlink_to(vault / "policies" / "refunds.md")  # inside: read as usual
    code, doc, err = import_(vault)
    assert code == 1, err
    flagged = {f["note"]: f["reason"] for f in doc["flagged"]}
    assert list(flagged) == ["linked.md"] and "outside" in flagged["linked.md"], flagged
    assert str(outside / "private.md") in flagged["linked.md"]
    assert sorted(s["note"] for s in doc["stored"]) == ["inbox/own.md", "policies/refunds.md"]
    assert all("elsewhere" not in r.source for r in records())
