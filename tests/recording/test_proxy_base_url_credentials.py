"""The journal's proxy calls the endpoint as the SDK would without it, credentials in the base URL and all.

QA: the proxy connected by host and port and used only the base URL's path: ``user:pass@`` (which httpx,
every vendor SDK's client, sends as Basic auth) and a query (``?token=…``) never reached the endpoint, so
an endpoint that authenticates that way failed only when the run kept a journal (every direct run with a
run folder does); and ``…/v1?token=…`` made the SDK call ``/v1/v1/responses`` through the proxy (404).
Real runs on the emulator, once without a journal and once with one, compared on what the emulator's
request log says they sent.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home, run_cli
from note_agent import note_turns, sent, write_note_agent

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

PASSWORD = "Zk81mQp0Xw2Lr7Ty"
TOKEN = "tq-4c5b6a7d8e9f0a1b"

SPEC = {
    "kind": "agent",
    "schema_version": 1,
    "name": "greeter",
    "version": "1.0.0",
    "instructions": "Say hello.",
    "models": {
        "openai": "gpt-4.1-mini",
        "anthropic": "claude-sonnet-4-6",
        "adk": "gemini-2.5-flash",
        "langgraph": "openai:gpt-4.1-mini",
    },
}
SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "conversations": [{"name": "hi", "match": {"first_user": "hi"}, "turns": [{"text": "Hello."}]}],
}


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    (tmp_path / "emulator.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    return tmp_path


def _sent(emu: Any, provider: str, url: str, agent: Path, out: Path, journal: bool) -> list[tuple[Any, ...]]:
    """What one run sent the endpoint: method, path, query, Authorization (scheme; the log masks the
    value) and the fingerprint of the API key it carried."""
    before = len(emu.requests())
    info = REGISTRY[provider]
    config = RunConfig(
        endpoint=Endpoint(source="live", base_url=url, api_key=info.dummy_key),
        approver="auto-deny",
        out_dir=out,
        journal=journal,
    )
    result = asyncio.run(
        arun_full(load_agent(agent / "agent.yaml"), RunRequest(input="hi", provider=provider), config)
    )
    assert result.result.status == "completed", result.result
    assert (out / "journal" / "attempt-1.jsonl").is_file() == journal
    return [
        (r["method"], r["path"], r["query"], r["headers"].get("authorization"), r["credential"])
        for r in emu.requests()[before:]
    ]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "adk", "langgraph"])
def test_userinfo_reaches_the_endpoint_as_with_no_journal(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = REGISTRY[provider]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = emu.base_url.replace("://", f"://u:{PASSWORD}@", 1) + "/v1"
        direct = _sent(emu, provider, url, agent, tmp_path / "direct", journal=False)
        journaled = _sent(emu, provider, url, agent, tmp_path / "journaled", journal=True)
    assert direct and all(auth == "Basic <masked>" for *_, auth, _ in direct)  # httpx: userinfo is Basic auth
    assert journaled == direct


def test_a_query_in_the_base_url_reaches_the_endpoint_as_with_no_journal(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """google-genai keeps a base URL's query on every request; through the journal it was dropped."""
    info = REGISTRY["adk"]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = f"{emu.base_url}?access_token={TOKEN}&tenant=acme"
        direct = _sent(emu, "adk", url, agent, tmp_path / "direct", journal=False)
        journaled = _sent(emu, "adk", url, agent, tmp_path / "journaled", journal=True)
    assert direct and all(q == {"access_token": "<masked>", "tenant": "acme"} for _, _, q, *_ in direct)
    assert journaled == direct
    journal = (tmp_path / "journaled" / "journal" / "attempt-1.jsonl").read_text()
    assert TOKEN not in journal and "tenant=acme" in journal


def test_a_versioned_base_url_with_a_query_is_called_at_its_root(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``…/v1?token=…``: the SDK adds ``/v1`` itself, so the proxy calls the server root (it called
    ``/v1/v1/responses``). Only the journaled run is checked: the OpenAI SDK joins its own path after
    the base URL's query (``?token=…/v1responses``) when it calls such a URL directly — not the proxy's
    doing."""
    info = REGISTRY["openai"]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = f"{emu.base_url}/v1?token={TOKEN}"
        journaled = _sent(emu, "openai", url, agent, tmp_path / "journaled", journal=True)
    assert [(m, p, q) for m, p, q, *_ in journaled] == [("POST", "/v1/responses", {"token": TOKEN})]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "adk", "langgraph"])
def test_a_versioned_base_url_with_a_query_works_with_and_without_a_journal(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``…/v1?token=…&tenant=…`` (a gateway's key, a tenant): without a journal the openai and anthropic
    clients joined their path after the query (``?token=…/v1/responses``, 404), so such a URL worked only
    through the journal's proxy. The SDK now gets the URL without its query and each request carries it:
    both runs complete and send the same paths and query."""
    info = REGISTRY[provider]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = f"{emu.base_url}/v1?token={TOKEN}&tenant=acme"
        direct = _sent(emu, provider, url, agent, tmp_path / "direct", journal=False)
        journaled = _sent(emu, provider, url, agent, tmp_path / "journaled", journal=True)
    assert direct and all(q == {"token": TOKEN, "tenant": "acme"} for _, _, q, *_ in direct), direct
    assert all(not p.startswith("/v1/v1") and "?" not in p for _, p, *_ in direct), direct
    assert journaled == direct


def test_a_credentialed_query_base_url_still_replays_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query the proxy adds is part of what a resumed attempt matches on, in the journal's masked
    form: the paused call is replayed, not asked of the model again."""
    conversation = {"name": "note", "match": {"first_user": "hi"}, "turns": note_turns("sent once")}
    root = write_note_agent(
        tmp_path / "agent", "proxy_query_tools", SPEC["models"], [conversation], monkeypatch
    )
    info = REGISTRY["openai"]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    out = tmp_path / "out"
    with serve(load_script(root / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = f"{emu.base_url.replace('://', f'://u:{PASSWORD}@', 1)}?token={TOKEN}&tenant=acme"
        code, stdout, stderr = run_cli(
            "run", str(root / "agent.yaml"), "--provider", "openai", "--live", "--base-url", url,
            "--input", "hi", "--approver", "defer", "--idempotency-key", "k-q", "--out", str(out),
        )  # fmt: skip
        assert code == 0 and "waiting_approval" in stdout, stdout + stderr
        approval_id = next(ln.split()[1] for ln in stdout.splitlines() if ln.startswith("approval "))
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        code, stdout, stderr = run_cli(
            "run", str(root / "agent.yaml"), "--provider", "openai", "--live", "--base-url", url,
            "--input", "hi", "--approver", "defer", "--idempotency-key", "k-q", "--out", str(out),
        )  # fmt: skip
        assert code == 0 and "completed" in stdout, stdout + stderr
        requests = emu.requests()
    record = json.loads((out / "run.json").read_text())
    second = record["attempts"][1]["journal"]
    assert second["replayed"] >= 1 and "unplayed" not in second and "not_in_journal" not in second
    assert sent(root) == ["sent once"]
    assert all(r["query"] == {"token": TOKEN, "tenant": "acme"} for r in requests)
    assert all(r["headers"].get("authorization") == "Basic <masked>" for r in requests)
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert PASSWORD not in text and TOKEN not in text, path


def test_the_authorization_is_the_one_httpx_sends_and_no_credential_is_in_the_netloc() -> None:
    import httpx

    from portagent.recording.http_proxy import HttpProxy
    from portagent.recording.journal import RunJournal

    url = "http://us%40er:p%3Ass%20w%C3%B6rd@127.0.0.1:9/v1?token=abc&tenant=acme"
    with httpx.Client() as client:
        request = client.build_request("GET", url)
        flow = client._build_request_auth(request).sync_auth_flow(request)
        expected = next(flow).headers["Authorization"]
    journal = RunJournal(path=Path("/nonexistent/attempt-1.jsonl"), header={})
    proxy = HttpProxy(mode="journal", upstream=url, journal=journal)
    assert proxy.authorization == expected and expected.startswith("Basic ")
    assert proxy.upstream.netloc == "127.0.0.1:9" and proxy.upstream.path == ""
    assert proxy.target("/v1/responses?stream=true") == "/v1/responses?token=abc&tenant=acme&stream=true"
    assert proxy.target("/v1/messages") == "/v1/messages?token=abc&tenant=acme"
