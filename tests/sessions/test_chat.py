"""``portagent chat`` (issue 16, lowest priority): a terminal chat over a session, driven through stdin.

One chat: a memory stored on openai-agents, the thread shown, a switch to ADK where a project memory needs
approval — asked inline and approved — an unknown provider refused, the memory recalled on ADK, the thread
cleared. Real SDKs against the emulator the command starts.
"""

from __future__ import annotations

import io
from pathlib import Path

from _support import run_cli

MEMORY = Path(__file__).resolve().parents[1] / "memory" / "data"


def chat(monkeypatch, lines: list[str], *extra: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    return run_cli(
        "chat",
        str(MEMORY / "keeper.yaml"),
        "--provider",
        "openai",
        "--emulator",
        str(MEMORY / "script.yaml"),
        *extra,
    )


def test_chat_session_with_inline_approval_and_switch(monkeypatch):
    lines = [
        "I prefer email.",
        "/history",
        "/switch adk",
        "Remember the refund rule.",
        "a",  # the inline approval
        "/switch nope",
        "How should you contact me?",
        "/bogus",
        "/clear",
    ]
    code, out, err = chat(monkeypatch, lines, "--session", "c1")
    assert code == 0, err
    assert "chat with keeper on openai · session c1 (0 earlier turns)" in out
    assert "  · tool call_1 remember" in out and "  · call_1 ok" in out  # the live status
    assert "#2 keeper (openai): mem_" in out
    assert "now on adk; the thread continues (2 turns)" in out
    assert "[a]pprove, [e]dit, [r]eject, [d]efer?" in out + err  # asked inline
    assert "[completed · adk" in out and "keeper> The user prefers email over phone" in out
    assert "unknown provider 'nope'" in out and "unknown command '/bogus'" in out
    assert "cleared 6 turns of session c1" in out and out.rstrip().endswith("bye")


def test_chat_bad_input_is_one_message(monkeypatch, tmp_path):
    code, _, err = run_cli(
        "chat", str(tmp_path / "nope.yaml"), "--provider", "openai", "--emulator", "x.yaml"
    )
    assert code == 2 and "agent spec not found" in err
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run_cli("chat", str(MEMORY / "keeper.yaml"), "--provider", "openai", "--live")
    assert code == 2 and "OPENAI_API_KEY" in err and "Traceback" not in err
    code, _, err = chat(monkeypatch, [], "--session", "bad id")
    assert code == 2 and "is not valid" in err


def test_chat_shows_the_models_escape_sequences_escaped(monkeypatch, tmp_path):
    """The chat prints the model's answers: an escape sequence in one (clear the screen, retitle the
    window) or a bidi override is shown escaped, its lines kept."""
    script = tmp_path / "script.yaml"
    script.write_text(
        "kind: emulator-script\nschema_version: 1\nname: esc\nconversations:\n  - name: esc\n"
        '    match: {first_user_regex: "Hi"}\n'
        '    turns:\n      - text: "Done.\\e[2J\\e]0;owned\\a\\nSecond line \\u202e."\n',
        encoding="utf-8",
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("Hi\n/history\n"))
    agent = Path(__file__).resolve().parent / "data" / "thread.yaml"
    code, out, err = run_cli("chat", str(agent), "--provider", "openai", "--emulator", str(script))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "thread> Done.\\x1b[2J\\x1b]0;owned\\x07\nSecond line \\u202e." in out
