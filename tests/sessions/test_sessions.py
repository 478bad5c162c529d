"""Sessions (issue 16 part 1): a thread kept by portagent, continued on any provider.

The proof is the emulator's request log, read with ``portagent.wire``: the request each SDK sent for the
next step of a thread holds every earlier turn — including the ones another provider answered — in order.
A thread is started on each provider and continued on each other provider: ``CHAIN``, an Eulerian circuit of
the complete directed graph on the five providers, takes each of the 20 ordered pairs exactly once in 21 runs.
Every provider has four incoming pairs, so four runs each is the least possible; the circuit starts and ends on
openai, so Claude (the slowest: one CLI process per run) runs exactly four times.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.providers import PROVIDERS
from portagent.contracts.run import RunRequest
from portagent.contracts.session import HISTORY_CLOSE, frame_history, split_framed
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig
from portagent.runtime.session_store import SqliteSessionStore
from portagent.runtime.sessions import arun_in_session
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

DATA = Path(__file__).resolve().parent / "data"
AGENT = DATA / "thread.yaml"
SCRIPT = DATA / "script.yaml"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
    "anthropic": "sk-ant-portagent-dummy",
    "langgraph": "sk-portagent-dummy",  # thread.yaml has no models.langgraph: the OpenAI model (langchain-openai)
}
CHAIN = [
    "openai",
    "adk",
    "openai",
    "claude",
    "openai",
    "anthropic",
    "openai",
    "langgraph",
    "adk",
    "claude",
    "adk",
    "anthropic",
    "adk",
    "langgraph",
    "claude",
    "anthropic",
    "claude",
    "langgraph",
    "anthropic",
    "langgraph",
    "openai",
]
WIRE_APIS = {
    "openai": {"openai.responses"},
    "adk": {"gemini.generate_content"},
    "claude": {"anthropic.messages"},
    "anthropic": {"anthropic.messages"},
    "langgraph": {"openai.chat", "openai.responses"},
}
"""The API each provider's SDK speaks to the emulator with thread.yaml's models: the request is that SDK's."""


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(SCRIPT)) as running:
        yield running


def first_user_text(entry: dict[str, Any]) -> str:
    api, body = entry["api"], entry["body"]
    if api == "openai.responses":
        view = wire_openai.parse_responses_request(body)
    elif api == "openai.chat":
        view = wire_openai.parse_chat_request(body)
    elif api == "anthropic.messages":
        view = wire_anthropic.parse_messages_request(body)
    else:
        assert api == "gemini.generate_content", api
        view = wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
    return view.first_user_text() or ""


def step(
    emu: Any, tmp: Path, provider: str, n: int, session: str = "thread-1"
) -> tuple[Any, list[dict[str, Any]]]:
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        clock=FixedClock(),
        ids=IdFactory(f"session-{n}"),
        options=RunOptions(workdir=tmp / f"work-{n}"),
    )
    request = RunRequest(input=f"Step {n} of the thread.", provider=provider, session_id=session)
    out = asyncio.run(asyncio.wait_for(arun_in_session(AGENT, request, config), 120))
    return out, emu.requests()[before:]


@pytest.fixture(scope="module")
def chain(emu, tmp_path_factory):
    """The 21-step thread, one fresh state folder for the module (the thread lives in it)."""
    import os

    tmp = tmp_path_factory.mktemp("chain")
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(tmp / "home")
    try:
        steps = [step(emu, tmp, p, n) for n, p in enumerate(CHAIN, start=1)]
        store = SqliteSessionStore()
        turns = store.turns("thread-1")
        store.close()
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old
    return steps, turns


def test_chain_covers_every_ordered_pair():
    every_pair = {(a, b) for a in PROVIDERS for b in PROVIDERS if a != b}
    pairs = list(itertools.pairwise(CHAIN))
    assert set(pairs) == every_pair and len(pairs) == len(every_pair)  # each ordered pair exactly once
    assert set(CHAIN) == set(PROVIDERS) and set(WIRE_APIS) == set(PROVIDERS) <= set(DUMMY_KEYS)
    # the fewest Claude runs possible: one per incoming pair (len(PROVIDERS) - 1), not the start or the end
    assert CHAIN.count("claude") == len(PROVIDERS) - 1 and "claude" not in (CHAIN[0], CHAIN[-1])


def test_thread_continues_on_every_other_provider(chain):
    steps, turns = chain
    for n, (provider, (out, requests)) in enumerate(zip(CHAIN, steps, strict=True), start=1):
        assert out.result.status == "completed", (provider, out.result)
        assert out.result.final_output == f"Answer {n}: noted."
        assert requests, f"{provider} sent no request at step {n}"
        assert {q["api"] for q in requests} <= WIRE_APIS[provider], (provider, n)
        sent = first_user_text(requests[0])
        # every earlier turn, whoever answered it, in order, then the new message last
        expected = [x for j in range(1, n) for x in (f"Step {j} of the thread.", f"Answer {j}: noted.")]
        positions = [sent.find(x) for x in expected]
        assert all(p >= 0 for p in positions), (provider, n, sent)
        assert positions == sorted(positions), (provider, n, sent)
        assert sent.rstrip().endswith(f"Step {n} of the thread.")
        if n > 1:
            assert f'turns="{2 * (n - 1)}"' in sent and HISTORY_CLOSE in sent
            previous = CHAIN[n - 2]
            assert previous != provider  # the earlier answer came from another provider
    assert [t.role for t in turns] == ["user", "assistant"] * len(CHAIN)
    assert [t.provider for t in turns[1::2]] == CHAIN
    assert [t.run_id for t in turns[1::2]] == [out.result.run_id for out, _ in steps]


def test_trace_records_the_input_sent(chain):
    steps, _ = chain
    out, _ = steps[2]
    started = next(e for e in out.events if e.type == "run.started")
    assert "Answer 2: noted." in started.input and started.input.endswith("Step 3 of the thread.")


def test_frame_history_without_turns_is_the_message_and_splits_back():
    from portagent.contracts.session import Turn

    assert frame_history("s", [], "Hello") == "Hello" and split_framed("Hello") is None
    turns = [Turn(seq=1, role="user", content="a\n\nb", created_at="t")]
    framed = split_framed(frame_history("s", turns, "Next\nline", omitted=2))
    assert framed is not None and framed.turns == 1 and framed.omitted == 2 and framed.message == "Next\nline"
    assert framed.history.endswith(HISTORY_CLOSE) and "a\n\nb" in framed.history


def test_failed_run_adds_nothing(emu, tmp_path):
    """A message the script does not know: the emulator answers 400, the run fails, the thread is unchanged."""
    out, _ = step(emu, tmp_path, "openai", 1, session="t")
    assert out.result.status == "completed"
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS["openai"]),
        ids=IdFactory("session-fail"),
    )
    request = RunRequest(input="Something unscripted.", provider="openai", session_id="t")
    failed = asyncio.run(arun_in_session(AGENT, request, config))
    assert failed.result.status == "failed"
    assert "Answer 1: noted." in first_user_text(emu.requests()[before])  # history was sent anyway
    store = SqliteSessionStore()
    assert [t.content for t in store.turns("t")] == ["Step 1 of the thread.", "Answer 1: noted."]
    store.close()


# --- the CLI -------------------------------------------------------------------------------------------


def cli_run(provider: str, n: int, session: str = "cli-thread", *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "run",
        str(AGENT),
        "--provider",
        provider,
        "--emulator",
        str(SCRIPT),
        "--session",
        session,
        "--input",
        f"Step {n} of the thread.",
        *extra,
    )


def test_cli_run_session_list_show_export_clear(tmp_path):
    code, out, err = cli_run("openai", 1)
    assert code == 0, err
    assert "session    cli-thread  2 turns, turns added" in out
    code, out, err = cli_run("adk", 2)
    assert code == 0 and "final      Answer 2: noted." in out and "4 turns" in out, err

    code, out, _ = run_cli("sessions", "list")
    assert code == 0 and "cli-thread  4 turns  providers=openai,adk" in out
    code, out, _ = run_cli("sessions", "list", "--json")
    assert json.loads(out)[0]["providers"] == ["openai", "adk"]
    code, out, _ = run_cli("sessions", "show", "cli-thread")
    assert code == 0 and "#4 assistant (adk, run_" in out and "Step 2 of the thread." in out
    code, out, _ = run_cli("sessions", "show", "cli-thread", "--json")
    assert [t["role"] for t in json.loads(out)] == ["user", "assistant"] * 2

    export = tmp_path / "thread.json"
    code, out, _ = run_cli("sessions", "export", "cli-thread", "--out", str(export))
    assert code == 0 and "4 turns" in out
    doc = json.loads(export.read_text())
    assert doc["kind"] == "portagent-session" and doc["schema_version"] == 1
    assert [t["content"] for t in doc["turns"]][-1] == "Answer 2: noted."
    code, out, _ = run_cli("sessions", "export", "cli-thread", "--format", "markdown")
    assert code == 0 and out.startswith("# Session cli-thread") and "## 4. Assistant (adk" in out

    code, out, _ = run_cli("sessions", "clear", "cli-thread")
    assert code == 0 and "4 turns" in out
    code, _, err = run_cli("sessions", "show", "cli-thread")
    assert code == 2 and "no session 'cli-thread'" in err


def test_cli_run_with_a_relative_out_stores_where_the_trace_is(tmp_path, monkeypatch):
    """``--out out`` (relative): the thread keeps the trace's real path, so a handoff export (and history
    compaction, which reads the same traces) finds it; it stored ``out/out/trace.jsonl``."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli_run("openai", 1, "rel-out", "--out", "out")
    assert code == 0, err
    assert (tmp_path / "out" / "trace.jsonl").is_file()
    code, out, _ = run_cli("sessions", "show", "rel-out", "--json")
    (answer,) = [t for t in json.loads(out) if t["role"] == "assistant"]
    assert answer["trace_path"] == str((tmp_path / "out" / "trace.jsonl").resolve())
    handoff = tmp_path / "handoff.json"
    code, out, err = run_cli(
        "sessions", "export", "rel-out", "--handoff", "--owner", "ana", "--done-when", "answered",
        "--limit", "none", "--decision", "scope: refunds", "--out", str(handoff),
    )  # fmt: skip
    assert code == 0 and handoff.is_file(), err


def test_cli_clear_all_and_empty_home():
    code, out, _ = run_cli("sessions", "list")
    assert code == 0 and "no sessions" in out
    code, out, _ = run_cli("sessions", "clear", "--all")
    assert code == 0 and "cleared 0 sessions" in out


def test_cli_show_escapes_what_a_model_wrote_but_keeps_its_lines():
    """A turn is what a user or model wrote: escape sequences and bidi overrides in it are shown escaped,
    not obeyed by the terminal; its own lines and tabs stay lines and tabs. --json keeps the text as stored."""
    answer = "Line one\x1b]0;owned\x07\n\tline two\u202e"
    store = SqliteSessionStore()
    try:
        store.append(
            "esc", [("user", "hi"), ("assistant", answer)], provider="openai", run_id="r1", agent="a"
        )
    finally:
        store.close()
    code, out, err = run_cli("sessions", "show", "esc")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "   Line one\\x1b]0;owned\\x07\n   \tline two\\u202e" in out
    code, out, _ = run_cli("sessions", "show", "esc", "--json")
    assert json.loads(out)[1]["content"] == answer


def test_cli_run_prints_the_models_escape_sequences_escaped(tmp_path):
    """``portagent run`` prints the model's answer: an escape sequence in it (clear the screen, retitle
    the window) is shown, not obeyed, and its lines stay lines; the session keeps the answer as sent."""
    script = tmp_path / "script.yaml"
    script.write_text(
        "kind: emulator-script\nschema_version: 1\nname: esc\nconversations:\n  - name: esc\n"
        '    match: {first_user_regex: "Hi"}\n    turns:\n      - text: "Done.\\e[2J\\e]0;owned\\a\\nSecond line \\u202e."\n',
        encoding="utf-8",
    )
    code, out, err = run_cli(
        "run",
        str(AGENT),
        "--provider",
        "openai",
        "--emulator",
        str(script),
        "--session",
        "esc",
        "--input",
        "Hi",
    )
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "final      Done.\\x1b[2J\\x1b]0;owned\\x07\nSecond line \\u202e." in out
    code, out, _ = run_cli("sessions", "show", "esc", "--json")
    assert json.loads(out)[1]["content"] == "Done.\x1b[2J\x1b]0;owned\x07\nSecond line \u202e."


# --- bad input: one message, non-zero exit, nothing written -------------------------------------------


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("action", [("show", "nope"), ("export", "nope"), ("clear", "nope")])
def test_unknown_session_id(action):
    cli_run("openai", 1, "known")
    code, _, err = run_cli("sessions", *action)
    assert code == 2 and "no session 'nope'" in one_line(err) and "sessions list" in err


@pytest.mark.parametrize("bad", ["", "_x", "a b", "x" * 129, "../etc"])
def test_bad_session_id(bad):
    code, _, err = run_cli("sessions", "show", bad)
    assert code == 2 and "is not valid" in one_line(err)
    code, _, err = cli_run("openai", 1, bad)
    assert code == 2 and "is not valid" in one_line(err)


def _home() -> Path:
    import os

    home = Path(os.environ["PORTAGENT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    return home


def test_corrupt_store_is_one_message_and_no_run(tmp_path):
    db = _home() / "sessions.db"
    db.write_bytes(b"this is not a database" * 100)
    before = db.read_bytes()
    code, out, err = cli_run("openai", 1)
    assert code == 2 and "session store" in one_line(err) and "not a database" in err
    assert "status" not in out  # refused before the run
    assert not (_home() / "runs").exists()
    assert db.read_bytes() == before
    for argv in (("list",), ("show", "x"), ("clear", "--all")):
        code, _, err = run_cli("sessions", *argv)
        assert code == 2 and "session store" in one_line(err), argv


def test_store_with_foreign_table_is_damaged():
    db = _home() / "sessions.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE turns (session_id TEXT, text TEXT)")
    con.commit()
    con.close()
    code, _, err = run_cli("sessions", "list")
    assert code == 2 and "is damaged" in one_line(err) and "columns" in err


def test_store_with_invalid_row_is_damaged():
    cli_run("openai", 1, "s1")
    con = sqlite3.connect(_home() / "sessions.db")
    con.execute("UPDATE turns SET role = 'narrator' WHERE seq = 1")
    con.commit()
    con.close()
    code, _, err = run_cli("sessions", "show", "s1")
    assert code == 2 and "is damaged" in one_line(err) and "role" in err


def test_replay_refuses_session(tmp_path):
    code, _, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--replay", str(tmp_path), "--session", "s"
    )
    assert code == 2 and "drop --session" in one_line(err)


def test_export_out_is_a_folder(tmp_path):
    cli_run("openai", 1, "s2")
    code, _, err = run_cli("sessions", "export", "s2", "--out", str(tmp_path))
    assert code == 2 and "is a folder" in one_line(err)


def test_capabilities_say_who_keeps_sessions():
    code, out, _ = run_cli("capabilities", "--json")
    assert code == 0
    text = json.loads(out)["portagent"]["sessions"]
    assert "run --session" in text and "sessions.db" in text
