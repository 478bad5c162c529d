"""memory.db holds no secret: an agent's ``remember`` of "the deploy key is …", a person's ``memory add``
or ``edit``, an agent's ``forget`` reason are masked before they are stored, as runs.db, approvals.db,
sessions.db and ledger.db mask theirs. memory.db kept them as written, and every recall and listing
printed them. The secrets are built from fragments (so this file holds none whole)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from _support import run_cli

from portagent.contracts.memory import MemoryWrite
from portagent.tools.memory_store import MemoryStore

KEY = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz0123"
ENV_VALUE = "zq9Xv7Lm" + "Pp42Rt"


def _home(tmp_path: Path) -> Path:
    return tmp_path / ".portagent"  # tests/conftest.py points PORTAGENT_HOME here


def _holding(root: Path, *needles: str) -> list[str]:
    return [
        f"{p.relative_to(root)}: {n}"
        for p in sorted(root.rglob("*"))
        if p.is_file()
        for n in needles
        if n.encode() in p.read_bytes()
    ]


def _write(statement: str, source: str = "user said") -> MemoryWrite:
    return MemoryWrite(statement=statement, source=source, scope="user", expires_at="never", confidence=0.9)


def test_memory_add_masks_the_statement_and_source_and_one_fact_stays_one_record(tmp_path: Path) -> None:
    argv = [
        "memory", "add", "--statement", f"The deploy key is {KEY}", "--source", f"ticket with password={KEY}x",
        "--scope", "project", "--expires", "never", "--confidence", "0.9",
    ]  # fmt: skip
    code, out, err = run_cli(*argv)
    assert code == 0, err
    assert KEY not in out
    code, again, err = run_cli(*argv)  # the same fact again: the id is worked out from the masked form
    assert code == 0 and again.split()[1] == out.split()[1], again
    code, listing, _ = run_cli("memory", "list")
    assert "The deploy key is [REDACTED:" in listing and KEY not in listing
    store = MemoryStore()
    (record,) = store.records()
    assert record.statement == "The deploy key is [REDACTED:openai-key]"
    assert KEY not in record.source
    store.close()
    assert _holding(_home(tmp_path), KEY) == []


def test_edit_and_forget_mask_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", ENV_VALUE)
    store = MemoryStore()
    record = store.write(_write("Deploys go through the release train"), owner="ana", written_by="cli:ana")
    record = store.edit(record.memory_id, statement=f"Deploys use the key {ENV_VALUE}", source=f"chat {KEY}")
    assert ENV_VALUE not in record.statement and KEY not in record.source
    retired = store.retire(record.memory_id, f"rotated {ENV_VALUE}", owners={"user": "ana"})
    assert retired.retired_reason == "rotated [REDACTED:env-value]"
    store.close()
    assert _holding(_home(tmp_path), KEY, ENV_VALUE) == []


@pytest.mark.slow  # runs an agent against the emulator
def test_an_agents_remember_stores_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", ENV_VALUE)
    project = tmp_path / "p"
    project.mkdir()
    (project / "agent.yaml").write_text(
        textwrap.dedent(
            """\
            kind: agent
            schema_version: 1
            name: memo
            version: 1.0.0
            instructions: remember things
            models: {openai: gpt-4.1-mini, claude: claude-sonnet-4-6, adk: gemini-2.5-flash}
            tool_files: [portagent:memory]
            tools: [remember, recall]
            policy:
              kind: policy
              schema_version: 1
              name: p
              version: "1"
              rules: [{id: mem-ok, decision: allow, reason: ok, tool: remember}]
            """
        )
    )
    args = {
        "statement": f"The deploy key is {ENV_VALUE} and {KEY}",
        "source": "user said",
        "scope": "user",
        "expires_at": "never",
        "confidence": 0.9,
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "conversations": [
            {
                "name": "c",
                "match": {"first_user": "remember my key"},
                "turns": [{"tool_calls": [{"name": "remember", "arguments": args}]}, {"text": "Noted."}],
            }
        ],
    }
    (project / "emu.yaml").write_text(yaml.safe_dump(script))
    code, out, err = run_cli(
        "run", str(project / "agent.yaml"), "--provider", "openai", "--emulator", str(project / "emu.yaml"),
        "--input", "remember my key", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 0, out + err
    store = MemoryStore()
    (record,) = store.records()
    assert record.statement == "The deploy key is [REDACTED:env-value] and [REDACTED:openai-key]"
    store.close()
    code, listing, _ = run_cli("memory", "list")
    assert code == 0 and "[REDACTED:env-value]" in listing
    # every file the run wrote (trace, run.json, runs.db, ledger.db, memory.db); the script holds them
    assert [h for h in _holding(tmp_path, KEY, ENV_VALUE) if not h.startswith("p/")] == []


def test_memory_import_masks_a_note_and_a_second_import_finds_it_unchanged(tmp_path: Path) -> None:
    """A note's text is masked too, and the import's plan works out ids from the same masked form the store
    keeps: a second import finds the note unchanged (with forms of their own it was refused as "superseded
    by" the record itself)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "deploy.md").write_text(
        "---\nsource: ops wiki\ntype: semantic\nstatus: active\ndate: 2026-01-01\n---\n"
        f"The deploy key is {KEY}\n"
    )
    argv = ["memory", "import", str(vault), "--scope", "project", "--confidence", "0.9", "--expires", "never"]
    code, first, err = run_cli(*argv)
    assert code == 0 and "1 stored" in first and KEY not in first, first + err
    code, second, err = run_cli(*argv)
    assert code == 0 and "1 unchanged" in second, second + err
    assert _holding(_home(tmp_path), KEY) == []
