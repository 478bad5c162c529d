"""Issue 22: resume by journal converges with a model that words its tool call differently each time.

The emulator plays a model that rephrases: the email body carries ``{{occurrence}}``, so asking the same
turn again gives "Draft 2" instead of "Draft 1" — what a live model does. One emulator server is kept
for every attempt of a test (like the live endpoint), so a re-asked turn really is reworded.

The run is started with ``--live --base-url <emulator>`` (a custom endpoint), deferred, decided in
another process, and resumed in another process with ``portagent resume RUN_ID``. What proves it, beyond
the trace: the emulator's request log (the paused turn is never asked again; the request after it
carries the approved call and its result), the handler's own log (the effect happened once, with the
approved words), and — as the failing case — the same resume without a journal, where the reworded
call cannot use the approved card: the run pauses again and the old card is superseded.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import parse_request, portagent_home, run_cli

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

INPUT = "Email the owner of case C-7."
PROVIDERS = [pytest.param(p, marks=pytest.mark.slow) if p == "claude" else p for p in REGISTRY]
"""Every registered provider (a new adapter is held to resume by journal from its first test run)."""

HANDLERS = """
import json
import time
from pathlib import Path

LOG = Path(__file__).with_name("sent.log")


def read_case(case_id):
    with LOG.with_name("reads.log").open("a") as f:
        f.write(case_id + "\\n")
    return {"case_id": case_id, "status": "waiting", "missing": ["DNI"], "owner": "ana@example.com"}


def send_email(**args):
    with LOG.open("a") as f:
        f.write(json.dumps(args, sort_keys=True) + "\\n")
    return {"message_id": "M-" + str(len(LOG.read_text().splitlines()))}


def slow_reviewer(card):
    time.sleep(300)  # a reviewer who never answers: the run stays paused until it is killed
"""

SPEC = {
    "kind": "agent",
    "schema_version": 1,
    "name": "mailer",
    "version": "1.0.0",
    "instructions": "Read the case, then email its owner.",
    "models": {
        "openai": "gpt-4.1-mini",
        "claude": "claude-sonnet-4-6",
        "adk": "gemini-2.5-flash",
        "anthropic": "claude-sonnet-4-6",
        "langgraph": "openai:gpt-4.1-mini",
    },
    "tools": [
        {
            "name": "read_case",
            "description": "Read one case.",
            "effect": "read",
            "input_schema": {
                "type": "object",
                "properties": {"case_id": {"type": "string"}},
                "required": ["case_id"],
                "additionalProperties": False,
            },
            "handler": "mail_tools:read_case",
        },
        {
            "name": "send_email",
            "description": "Send an email.",
            "effect": "external_effect",
            "idempotency": {"required": True, "key_field": "to"},
            "input_schema": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "body": {"type": "string", "minLength": 3}},
                "required": ["to", "body"],
                "additionalProperties": False,
            },
            "handler": "mail_tools:send_email",
        },
    ],
}

SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "mailer",
    "conversations": [
        {
            "name": "mail",
            "match": {"first_user": INPUT},
            "turns": [
                {"tool_calls": [{"name": "read_case", "arguments": {"case_id": "C-7"}}]},
                {
                    "tool_calls": [
                        {
                            "name": "send_email",
                            "arguments": {
                                "to": "ana@example.com",
                                "body": "Draft {{occurrence}}: case C-7 waits for your DNI.",
                            },
                        }
                    ]
                },
                {"text": "Done: {{last_tool_result.message_id | last_tool_result.error}}."},
            ],
        }
    ],
}


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh agent folder per test (the handler's ``sent.log`` lives beside it)."""
    root = tmp_path / "agent"
    root.mkdir()
    (root / "mail_tools.py").write_text(textwrap.dedent(HANDLERS))
    (root / "agent.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("mail_tools", None)
    from portagent.tools import handlers

    for ref in [r for r in handlers._CACHE if r.startswith("mail_tools:")]:  # each test has its own folder
        handlers._CACHE.pop(ref)
    return root


def _key_env(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    info = REGISTRY[provider]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)


def _cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """portagent in a process of its own (the reviewer's, the resumer's)."""
    env = {**os.environ, "PORTAGENT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "portagent", *argv], capture_output=True, text=True, env=env, timeout=180
    )


def _start(agent: Path, provider: str, base_url: str, out: Path, *extra: str) -> tuple[str, str]:
    """Run until the email waits for approval; returns (run id, approval id)."""
    code, stdout, stderr = run_cli(
        "run",
        str(agent / "agent.yaml"),
        "--provider",
        provider,
        "--live",
        "--base-url",
        base_url,
        "--input",
        INPUT,
        "--approver",
        "defer",
        "--out",
        str(out),
        *extra,
    )
    assert code == 0, stdout + stderr
    assert "waiting_approval" in stdout, stdout
    run_id = stdout.split(" run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in stdout.splitlines() if ln.startswith("approval "))
    return run_id, approval_id


def _emails_asked(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The send_email calls the model made, as the SDK sent them back in this request's history."""
    out = []
    for item in parse_request(entry).items:
        if item.kind == "tool_call" and (item.name or "").endswith("send_email"):
            args = item.arguments
            out.append(json.loads(args) if isinstance(args, str) else dict(args or {}))
    return out


def _results(entry: dict[str, Any]) -> list[str]:
    return [
        json.dumps(i.output) if not isinstance(i.output, str) else i.output
        for i in parse_request(entry).tool_results()
    ]


def _sent(agent: Path) -> list[dict[str, Any]]:
    log = agent / "sent.log"
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def _chat(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model-call requests of the conversation (Claude Code adds side requests of its own)."""
    return [e for e in log if e["api"] != "anthropic.messages" or "Email the owner" in json.dumps(e["body"])]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_approved_call_runs_once_though_the_model_rewords_it(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _key_env(provider, monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        run_id, approval_id = _start(agent, provider, emu.base_url, out)
        before = len(emu.requests())
        code, shown, _ = run_cli("approvals", "show", approval_id)
        assert code == 0 and "Draft 1" in shown, shown
        decided = _cli(
            home, "approvals", "approve", approval_id, "--reviewer", "ana"
        )  # the reviewer's process
        assert decided.returncode == 0, decided.stderr
        assert f"portagent resume {run_id}" in decided.stdout

        resumed = _cli(home, "resume", run_id)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "completed" in resumed.stdout and "attempt 2" in resumed.stdout, resumed.stdout
        assert "Done: M-1." in resumed.stdout

        # the effect happened once, with the words that were approved
        assert _sent(agent) == [{"body": "Draft 1: case C-7 waits for your DNI.", "to": "ana@example.com"}]
        # the read the first attempt made was not made again: its result answered the replayed call
        assert (agent / "reads.log").read_text().split() == ["C-7"]
        # what the SDK sent after the resume: never the paused turn again (the journal answered it); the
        # next request carries the approved call, word for word, and its result
        after = _chat(emu.requests()[before:])
        assert after, "the resumed run never reached the endpoint"
        assert all(parse_request(e).assistant_turns() >= 2 for e in after), [
            parse_request(e).assistant_turns() for e in after
        ]
        assert _emails_asked(after[0]) == [
            {"to": "ana@example.com", "body": "Draft 1: case C-7 waits for your DNI."}
        ]
        assert any("M-1" in r for r in _results(after[0]))

        record = json.loads((out / "run.json").read_text())
        attempts = record["attempts"]
        assert [a["status"] for a in attempts] == ["waiting_approval", "completed"]
        assert attempts[0]["journal"]["paused_after"] >= 2
        assert attempts[1]["journal"]["replayed"] == attempts[0]["journal"]["paused_after"] - attempts[0][
            "journal"
        ].get("failed", 0)
        assert (out / attempts[1]["journal"]["journal"]).is_file()
        events = [json.loads(ln) for ln in (out / "trace.jsonl").read_text().splitlines()]
        started = [e for e in events if e["type"] == "attempt.started"]
        assert len(started) == 1 and started[0]["decided"] == [approval_id]
        second = events[events.index(started[0]) :]
        reads = [e for e in second if e["type"] == "tool.result" and e["tool"] == "read_case"]
        assert [e["provider_details"].get("reused_from_attempt") for e in reads] == [1]
        assert started[0]["journal"] == "journal/attempt-1.jsonl" and started[0]["replays"] >= 2
        code, card, _ = run_cli("approvals", "show", approval_id)
        assert "approved" in card and "used by" in card

        # a second resume answers the first result; nothing runs again
        code, again, err = run_cli("resume", run_id)
        assert code == 0 and "duplicate" in again, again + err
        assert len(_sent(agent)) == 1


def test_without_the_journal_the_reworded_call_supersedes_the_card(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failing case, and why the journal exists: resumed by asking the model again (no journal), the
    model words the email differently, the approved card cannot apply, the run pauses again on a new
    card, and the approved one is moved to ``superseded`` with the reason."""
    provider = "openai"
    _key_env(provider, monkeypatch)
    home = tmp_path / "home"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):

        def attempt() -> Any:
            config = RunConfig(
                endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-portagent-dummy"),
                approver="defer",
                out_dir=tmp_path / "out",
                journal=False,
            )
            request = RunRequest(input=INPUT, provider=provider, idempotency_key="no-journal")
            return asyncio.run(arun_full(load_agent(agent / "agent.yaml"), request, config)).result

        first = attempt()
        assert first.status == "waiting_approval"
        (old,) = first.pending_approvals
        assert run_cli("approvals", "approve", old)[0] == 0
        second = attempt()
        assert second.status == "waiting_approval" and second.pending_approvals != [old]
        assert _sent(agent) == []
        from portagent.tools.approvals import ApprovalStore

        store = ApprovalStore()
        try:
            stale, new = store.get(old), store.get(second.pending_approvals[0])
        finally:
            store.close()
        assert stale.status == "superseded"
        assert "did not make this call" in (stale.status_reason or "")
        assert new.args["body"].startswith("Draft 2")
        code, shown, _ = run_cli("approvals", "show", old)
        assert code == 0 and "superseded" in shown and "did not make this call" in shown


@pytest.mark.parametrize("provider", ["openai", "adk", "anthropic", "langgraph"])
def test_a_rejection_reaches_the_model(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _key_env(provider, monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        run_id, approval_id = _start(agent, provider, emu.base_url, out)
        before = len(emu.requests())
        assert run_cli("approvals", "reject", approval_id, "--note", "not to customers")[0] == 0
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 0, stdout + stderr
        assert _sent(agent) == []
        after = emu.requests()[before:]
        assert len(after) == 1  # only the turn after the rejected call reached the endpoint
        assert _emails_asked(after[0])[0]["body"].startswith("Draft 1")
        assert any("not to customers" in r for r in _results(after[0])), _results(after[0])


def test_an_edit_runs_the_edited_arguments(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _key_env("openai", monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        run_id, approval_id = _start(agent, "openai", emu.base_url, out)
        edited = {"to": "ana@example.com", "body": "Hello Ana, we still need your DNI for case C-7."}
        code, stdout, stderr = run_cli("approvals", "edit", approval_id, "--args", json.dumps(edited))
        assert code == 0, stdout + stderr
        before = len(emu.requests())
        moved = tmp_path / "moved"
        code, stdout, stderr = run_cli("resume", run_id, "--out", str(moved))
        assert code == 0 and "completed" in stdout, stdout + stderr
        assert _sent(agent) == [edited]
        (nxt,) = emu.requests()[before:]
        assert any("M-1" in r for r in _results(nxt))
        # --out on the resume: the whole run is there — both attempts' trace, journals and run.json
        record = json.loads((moved / "run.json").read_text())
        assert [a["attempt"] for a in record["attempts"]] == [1, 2]
        assert sorted(f.name for f in (moved / "journal").iterdir()) == ["attempt-1.jsonl", "attempt-2.jsonl"]
        runs = [json.loads(ln) for ln in (moved / "trace.jsonl").read_text().splitlines()]
        assert [e["attempt"] for e in runs if e["type"] == "run.started"] == [1, 2]


def test_kill_9_while_paused_then_resume_from_a_new_process(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's process is killed while its reviewer is still looking at the card; the card is decided
    from another process, and a new process resumes the run from its journal."""
    _key_env("openai", monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    env = {**os.environ, "PORTAGENT_HOME": str(home), "PYTHONPATH": str(agent)}
    with serve(load_script(agent / "emulator.yaml")) as emu:
        argv = [
            sys.executable, "-m", "portagent", "run", str(agent / "agent.yaml"), "--provider", "openai",
            "--live", "--base-url", emu.base_url, "--input", INPUT, "--approver", "mail_tools:slow_reviewer",
            "--idempotency-key", "k-kill", "--out", str(out),
        ]  # fmt: skip
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pending = _wait_for_card(home, proc)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        assert not (out / "run.json").exists()  # it died before writing anything final
        with portagent_home(home):
            assert run_cli("approvals", "approve", pending)[0] == 0
        before = len(emu.requests())
        runs = _cli(home, "resume", _run_id_of(out), "--approver", "defer")
        assert runs.returncode == 0, runs.stdout + runs.stderr
        assert "completed" in runs.stdout and "attempt 2" in runs.stdout, runs.stdout
        assert _sent(agent) == [{"body": "Draft 1: case C-7 waits for your DNI.", "to": "ana@example.com"}]
        assert all(parse_request(e).assistant_turns() >= 2 for e in emu.requests()[before:])
        record = json.loads((out / "run.json").read_text())
        assert record["attempts"][0]["attempt"] == 2  # attempt 1 never wrote run.json
        assert "interrupted" in record["attempts"][0]["resumed"]


def _wait_for_card(home: Path, proc: subprocess.Popen[str]) -> str:
    from portagent.tools.approvals import ApprovalStore

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if (home / "approvals.db").exists():
            with portagent_home(home):
                store = ApprovalStore()
                try:
                    cards = store.list(status="pending")
                finally:
                    store.close()
            if cards:
                return cards[0].approval_id
        time.sleep(0.1)
    raise AssertionError("the run never asked for approval")


def _run_id_of(out: Path) -> str:
    header = json.loads((out / "journal" / "attempt-1.jsonl").read_text().splitlines()[0])
    return str(header["run_id"])


def test_a_truncated_or_changed_journal_is_one_clear_message(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _key_env("openai", monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        run_id, approval_id = _start(agent, "openai", emu.base_url, out)
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        journal = out / "journal" / "attempt-1.jsonl"
        whole = journal.read_bytes()
        before = len(emu.requests())

        journal.write_bytes(whole[: len(whole) - 40])  # the last exchange cut off
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 2, stdout + stderr
        assert str(journal) in stderr and "truncated" in stderr and "--idempotency-key" in stderr
        assert "Traceback" not in stderr and stderr.count("\n") == 1

        journal.write_bytes(whole.replace(b"Draft 1", b"Draft 9"))  # same length, other words
        code, _, stderr = run_cli("resume", run_id)
        assert code == 2 and "was changed" in stderr, stderr

        # a whole line added at the end: the first `size` bytes still match, yet the attempt had closed it
        journal.write_bytes(whole + b'{"seq": 99, "note": "appended by someone"}\n')
        code, _, stderr = run_cli("resume", run_id)
        assert code == 2 and "was changed" in stderr and "bytes were added" in stderr, stderr
        assert str(journal) in stderr and "Traceback" not in stderr and stderr.count("\n") == 1

        journal.unlink()
        code, _, stderr = run_cli("resume", run_id)
        assert code == 2 and "missing" in stderr, stderr

        assert emu.requests()[before:] == [] and _sent(agent) == []  # nothing ran, nothing was asked
        journal.write_bytes(whole)  # put back: the run resumes as if nothing happened
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 0 and "completed" in stdout, stdout + stderr
        assert len(_sent(agent)) == 1


def test_resume_refuses_a_changed_spec_and_an_unknown_run(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _key_env("openai", monkeypatch)
    home, out = tmp_path / "home", tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        run_id, approval_id = _start(agent, "openai", emu.base_url, out)
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        spec = agent / "agent.yaml"
        original = spec.read_text()
        spec.write_text(original.replace("Read the case, then email its owner.", "Email the owner."))
        code, _, stderr = run_cli("resume", run_id)
        assert code == 2 and "agent spec changed" in stderr and "Traceback" not in stderr, stderr
        spec.write_text(original)

        code, _, stderr = run_cli("resume", "run_does_not_exist")
        assert code == 2 and "no run 'run_does_not_exist'" in stderr, stderr
        assert _sent(agent) == []


def test_a_langgraph_journal_forwards_to_its_chat_model_vendor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a base URL the journal forwards to the vendor every agent's chat model talks to; agents on
    different vendors go to different hosts, which one journal cannot serve (no journal then: resume runs
    the input again, as for a run that kept none)."""
    from portagent.runtime.journaling import DEFAULT_UPSTREAMS, default_upstream

    repo = Path(__file__).resolve().parents[2]
    bundle = load_agent(repo / "examples" / "support_desk" / "agent.yaml")  # root + a sub-agent, openai ids
    assert len(bundle.agents) == 2
    assert default_upstream("langgraph", bundle) == DEFAULT_UPSTREAMS["openai"]

    def on(node_name: str, value: str) -> None:
        node = bundle.agents[node_name]
        node.spec = node.spec.model_copy(
            update={"models": node.spec.models.model_copy(update={"langgraph": value})}
        )

    sub = next(name for name in bundle.agents if name != bundle.root)
    on(bundle.root, "google_genai:gemini-2.5-flash")  # the sub-agent keeps its own (OpenAI) model
    assert default_upstream("langgraph", bundle) is None
    on(sub, "google_genai:gemini-2.5-flash")
    assert default_upstream("langgraph", bundle) == DEFAULT_UPSTREAMS["adk"]
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")  # Vertex AI picks a regional host itself
    assert default_upstream("langgraph", bundle) is None and default_upstream("adk", None) is None
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI")
    on(sub, "anthropic:claude-sonnet-4-6")
    assert default_upstream("langgraph", bundle) is None
    assert default_upstream("anthropic", None) == DEFAULT_UPSTREAMS["anthropic"]
