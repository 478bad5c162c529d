"""The run journal holds no key the model streamed, however the stream cut it.

A streamed answer reaches the journal as many SSE events, each with a piece of the text or of a tool
call's arguments; a key the model wrote is split across them, so masking the body as one text never
saw it (QA: ``"use sk-proj-abcd"``, ``"efgh…012"``, ``"3456789 now please ok"`` in the clear). Real runs
against the emulator, which cuts a tool call's arguments into pieces as the vendors do, on each wire
that streams them in pieces; then a resume, which must refuse the masked answer as it refuses an
unstreamed one, and still replay a streamed journal without a secret byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import portagent_home, run_cli
from note_agent import note_turns, sent, write_note_agent

from portagent.recording.journal import mask_split_secrets

KEY = "sk-proj-Q7vLm2Rt9XkW4pZs8NbY3cHd6JfG1aUe"
"""A key of OpenAI's shape that no variable holds: only the pattern scanner can find it."""
NOTE = "the parcel left on Monday"

WIRES = {
    "anthropic": ["--provider", "anthropic"],
    "openai-chat": ["--provider", "openai", "--openai-api", "chat_completions"],
    "openai-responses": ["--provider", "openai"],
}


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"}
    conversations = [
        {"name": "key", "match": {"first_user": "arg key"}, "turns": note_turns(f"use {KEY} now please ok")},
        {"name": "plain", "match": {"first_user": "plain note"}, "turns": note_turns(NOTE)},
    ]
    return write_note_agent(tmp_path / "agent", "journal_secret_tools", models, conversations, monkeypatch)


def _deferred(agent: Path, wire: str, text: str, out: Path) -> tuple[str, str]:
    """A streamed run paused on the note; returns (run id, approval id)."""
    code, stdout, stderr = run_cli(
        "run",
        str(agent / "agent.yaml"),
        *WIRES[wire],
        "--emulator",
        str(agent / "emulator.yaml"),
        "--stream",
        "--approver",
        "defer",
        "--input",
        text,
        "--out",
        str(out),
    )
    assert code == 0 and "waiting_approval" in stdout, stdout + stderr
    run_id = stdout.split(" run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in stdout.splitlines() if ln.startswith("approval "))
    return run_id, approval_id


def _pieces_of_key(text: str) -> list[str]:
    """Every 6-character stretch of the key found in ``text`` (the emulator's pieces are longer)."""
    return sorted({KEY[i : i + 6] for i in range(len(KEY) - 5) if KEY[i : i + 6] in text})


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_key_split_across_stream_events_is_masked_and_not_replayed(
    agent: Path, wire: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with portagent_home(tmp_path / "home"):
        run_id, approval_id = _deferred(agent, wire, "arg key", out)
        journal = (out / "journal" / "attempt-1.jsonl").read_text()
        assert "REDACTED:openai-key" in journal
        assert _pieces_of_key(journal) == [], journal
        record = json.loads((out / "run.json").read_text())
        assert record["attempts"][0]["journal"].get("masked"), record["attempts"][0]
        lines = [json.loads(ln) for ln in journal.splitlines()]
        assert any(ln.get("masked") for ln in lines[1:])

        # the masked answer cannot be served again as it came: a resume says so, and runs nothing
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 2, stdout + stderr
        assert "masked" in stderr and "--idempotency-key" in stderr and "Traceback" not in stderr
        assert sent(agent) == []


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat"])
def test_a_streamed_journal_without_a_secret_still_replays(agent: Path, wire: str, tmp_path: Path) -> None:
    """Guard: the pieces are only rewritten when a secret is found, so a plain stream is kept byte for
    byte and a resume replays the paused call from it (not asking the model again)."""
    out = tmp_path / "out"
    with portagent_home(tmp_path / "home"):
        run_id, approval_id = _deferred(agent, wire, "plain note", out)
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 0 and "completed" in stdout, stdout + stderr
    record = json.loads((out / "run.json").read_text())
    first, second = record["attempts"][0]["journal"], record["attempts"][1]["journal"]
    assert "masked" not in first and second["replayed"] == first["paused_after"] >= 1
    assert sent(agent) == [NOTE]


def _sse(*deltas: str, crlf: bool = False) -> str:
    nl = "\r\n" if crlf else "\n"
    events = [
        f"event: content_block_delta{nl}data: "
        + json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}})
        + nl
        for d in deltas
    ]
    return nl.join([*events, f"data: [DONE]{nl}"])


def test_split_text_is_masked_piece_by_piece() -> None:
    """Text deltas (the answer itself, not only arguments); every piece holding part of the key loses
    that part, the words around it stay, and CRLF framing is kept."""
    for crlf in (False, True):
        body = _sse("Your key is sk-ant-api03-", "Zr8", "Yq2Lw5Nd7Kx", "Pb4 keep it safe", crlf=crlf)
        masked = mask_split_secrets(body)
        texts = [
            json.loads(ln.split("data: ", 1)[1])["delta"]["text"]
            for ln in masked.splitlines()
            if ln.startswith("data: {")
        ]
        assert texts == [
            "Your key is [REDACTED:anthropic-key]",
            "[REDACTED:anthropic-key]",
            "[REDACTED:anthropic-key]",
            "[REDACTED:anthropic-key] keep it safe",
        ]
        assert ("\r\n" in masked) is crlf


def test_a_stream_without_a_secret_is_kept_as_it_came() -> None:
    body = _sse("The parcel ", "left on ", "Monday.", crlf=True)
    assert mask_split_secrets(body) is body
    whole = json.dumps({"content": [{"type": "text", "text": "no stream here"}]})
    assert mask_split_secrets(whole) is whole
