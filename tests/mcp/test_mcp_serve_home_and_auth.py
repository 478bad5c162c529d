"""``mcp serve`` as real clients meet it: started in the client's own folder (``--home``), over HTTP
on a non-loopback bind (bearer token, Host/Origin allowlist), with several clients at once (approval
cards bound to the client that asked).

Each server is a real ``portagent mcp serve`` process; the clients are the mcp package's ``Client``
(legacy streamable HTTP, which has sessions, and the 2026-07-28 sessionless protocol) and plain HTTP
requests for the checks a client library would never fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _mcp_helpers import DATA
from _support import REPO, run_cli

TOOLS = DATA / "sms_tools.yaml"
POLICY = DATA / "sms_policy.yaml"
TOKEN_A = "tok-A-" + "x" * 24
TOKEN_B = "tok-B-" + "y" * 24


def _start(
    args: list[str], *, cwd: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "portagent", "mcp", "serve", str(TOOLS), "--policy", str(POLICY), *args],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if " on http" in line:
            url = line.split(" on ", 1)[1].split(";", 1)[0].strip()
            seen.append(proc.stderr.readline())  # the allowlist line
            return proc, url, seen
    proc.kill()
    raise AssertionError(f"mcp serve did not start: {''.join(seen)}")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PORTAGENT_HOME", "PORTAGENT_MCP_TOKEN")}
    return {**env, "PYTHONPATH": str(REPO), **extra}


def _client(url: str, *, token: str | None = None, mode: str = "auto") -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)), mode=mode)


def _status(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


SMS = {"to": "+34600111444", "text": "Your DNI is missing"}


def test_home_is_announced_and_cards_land_there_bound_to_the_asking_session(tmp_path: Path) -> None:
    """A client starts the server in its own folder: ``--home`` says where state goes, stderr says it
    at start, the approval answer names it, and a card approved for session A is not consumed by B."""
    client_dir = tmp_path / "client-folder"
    client_dir.mkdir()
    state = tmp_path / "state"
    proc, url, lines = _start(
        ["--transport", "streamable-http", "--port", "0", "--home", str(state)], cwd=client_dir, env=_env()
    )
    try:
        banner = "".join(lines)
        assert f"state folder {state}" in banner and f"{state / 'approvals.db'}" in banner

        async def go() -> tuple[Any, Any, Any, Any]:
            async with _client(url, mode="legacy") as a:
                first = await a.call_tool("send_sms", SMS)
                approval_id = first.structured_content["approval_id"]
                code, _, err = run_cli("approvals", "--home", str(state), "approve", approval_id)
                assert code == 0, err
                async with _client(url, mode="legacy") as b:
                    other = await b.call_tool("send_sms", SMS)  # same arguments, another session
                again = await a.call_tool("send_sms", SMS)
                return first, other, again, approval_id

        first, other, again, approval_id = asyncio.run(asyncio.wait_for(go(), 60))
    finally:
        _stop(proc)
    assert first.is_error and first.structured_content["error"] == "approval_required"
    text = first.content[0].text
    assert f"PORTAGENT_HOME={state} portagent approvals approve {approval_id}" in text
    assert str(state / "approvals.db") in text and first.structured_content["approvals_home"] == str(state)
    # The card is bound to the MCP session: the text says so (a one-shot client reconnects and is asked again).
    assert "call again in the same session" in text
    # Session B did not consume A's approved card: it got a card of its own.
    assert other.is_error and other.structured_content["error"] == "approval_required"
    assert other.structured_content["approval_id"] != approval_id
    assert not again.is_error and again.structured_content["sent"] is True
    # Everything is in --home, nothing in the folder the client started the server from.
    assert (state / "approvals.db").is_file() and not (client_dir / ".portagent").exists()
    code, out, _ = run_cli("approvals", "--home", str(state), "list", "--json")
    cards = {c["approval_id"]: c for c in json.loads(out)}
    assert cards[approval_id]["status"] == "approved"
    assert cards[other.structured_content["approval_id"]]["status"] == "pending"


def test_portagent_home_variable_is_used_and_announced_over_stdio(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    state = tmp_path / "env-state"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "portagent", "mcp", "serve", str(TOOLS), "--policy", str(POLICY)],
        env=_env(PORTAGENT_HOME=str(state)),
        cwd=str(tmp_path),
    )
    errlog = (tmp_path / "stderr.txt").open("w+")

    async def go() -> Any:
        async with Client(stdio_client(params, errlog=errlog)) as c:
            return await c.call_tool("send_sms", SMS)

    try:
        pending = asyncio.run(asyncio.wait_for(go(), 60))
    finally:
        errlog.seek(0)
        banner = errlog.read()
        errlog.close()
    assert f"state folder {state}" in banner
    assert pending.structured_content["error"] == "approval_required"
    assert f"PORTAGENT_HOME={state} portagent approvals approve" in pending.content[0].text
    assert "same session" not in pending.content[0].text  # stdio: one client, the server's own namespace
    assert (state / "approvals.db").is_file()


def test_a_non_loopback_bind_without_a_token_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PORTAGENT_MCP_TOKEN", raising=False)
    trace = tmp_path / "t.jsonl"
    base = [
        "mcp",
        "serve",
        str(TOOLS),
        "--transport",
        "streamable-http",
        "--port",
        "0",
        "--trace",
        str(trace),
    ]
    code, _, err = run_cli(*base, "--host", "0.0.0.0")
    assert code == 2 and "refusing to serve on 0.0.0.0 without authentication" in err
    assert "PORTAGENT_MCP_TOKEN" in err and "Traceback" not in err
    code, _, err = run_cli(*base, "--host", "0.0.0.0", "--auth-token", "short")
    assert code == 2 and "at least 16 characters" in err
    code, _, err = run_cli("mcp", "serve", str(TOOLS), "--auth-token", TOKEN_A)
    assert code == 2 and "go with --transport streamable-http" in err
    assert not trace.exists()


def test_token_host_and_origin_are_checked_on_every_request_and_tokens_tell_clients_apart(
    tmp_path: Path,
) -> None:
    proc, url, lines = _start(
        ["--transport", "streamable-http", "--host", "0.0.0.0", "--port", "0", "--home", str(tmp_path / "s")],
        cwd=tmp_path,
        env=_env(PORTAGENT_MCP_TOKEN=f"{TOKEN_A},{TOKEN_B}"),
    )
    try:
        assert "bearer token required" in "".join(lines)
        assert TOKEN_A not in "".join(lines)  # a token is never printed
        local = url.replace("0.0.0.0", "127.0.0.1")
        port = local.rsplit(":", 1)[1].split("/")[0]
        good = {"Authorization": f"Bearer {TOKEN_A}"}
        assert _status(local, {}) == 401
        assert _status(local, {"Authorization": "Bearer " + "z" * 30}) == 401
        assert _status(local, {"Authorization": TOKEN_A}) == 401  # not a bearer header
        assert _status(local, {**good, "Host": f"evil.example:{port}"}) == 421
        assert _status(local, {**good, "Origin": "http://evil.example"}) == 403

        async def go() -> tuple[Any, Any, Any]:
            # The 2026-07-28 protocol has no session: the token is the client's identity.
            async with _client(local, token=TOKEN_A) as a:
                first = await a.call_tool("send_sms", SMS)
                code, _, err = run_cli(
                    "approvals",
                    "--home",
                    str(tmp_path / "s"),
                    "approve",
                    first.structured_content["approval_id"],
                )
                assert code == 0, err
                async with _client(local, token=TOKEN_B) as b:
                    other = await b.call_tool("send_sms", SMS)
                again = await a.call_tool("send_sms", SMS)
                return first, other, again

        first, other, again = asyncio.run(asyncio.wait_for(go(), 60))
    finally:
        _stop(proc)
    assert first.structured_content["error"] == "approval_required"
    assert other.structured_content["error"] == "approval_required"
    assert other.structured_content["approval_id"] != first.structured_content["approval_id"]
    assert not again.is_error and again.structured_content["sent"] is True


def test_loopback_default_keeps_the_host_check(tmp_path: Path) -> None:
    proc, url, _ = _start(["--transport", "streamable-http", "--port", "0"], cwd=tmp_path, env=_env())
    try:
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert _status(url, {"Host": f"attacker.example:{port}"}) == 421
        assert _status(url, {"Origin": "https://attacker.example"}) == 403
        assert _status(url, {}) not in (401, 403, 421)  # past the checks (the MCP layer answers)
    finally:
        _stop(proc)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--allow-origin", "notanorigin"),
        ("--allow-origin", "http://host/path"),
        ("--allow-origin", ""),
        ("--allow-origin", "null"),
        ("--allow-host", "http://app.example"),
        ("--allow-host", ""),
        ("--allow-host", "app.example:99999"),
    ],
)
def test_a_malformed_allowlist_entry_is_refused_before_anything_starts(
    tmp_path: Path, flag: str, value: str
) -> None:
    """An entry the Host/Origin check could never match would refuse the very client it was meant for."""
    home = tmp_path / "state"
    code, out, err = run_cli(
        "mcp",
        "serve",
        str(TOOLS),
        "--transport",
        "streamable-http",
        "--port",
        "0",
        "--home",
        str(home),
        flag,
        value,
    )
    assert code == 2, err
    assert err.startswith(f"portagent: {flag} ") and err.count("\n") == 1 and "Traceback" not in err
    assert out == "" and not home.exists()


def test_allowlist_entries_match_the_headers_clients_send(tmp_path: Path) -> None:
    """Entries are kept as the headers arrive: lowercase, an origin without its default port or the
    trailing slash of a copied URL."""
    proc, url, _ = _start(
        [
            "--transport",
            "streamable-http",
            "--port",
            "0",
            "--allow-host",
            "App.Example",
            "--allow-origin",
            "HTTPS://App.Example:443/",
        ],
        cwd=tmp_path,
        env=_env(),
    )
    try:
        port = url.rsplit(":", 1)[1].split("/")[0]
        refused = (401, 403, 421)  # what the checks answer; the MCP layer answers anything else
        assert _status(url, {"Host": f"app.example:{port}", "Origin": "https://app.example"}) not in refused
        assert _status(url, {"Origin": "https://app.example:8443"}) not in refused  # no port: any port
        assert _status(url, {"Origin": "http://app.example"}) == 403
    finally:
        _stop(proc)


def test_home_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "state"
    not_a_folder.write_text("x")
    code, _, err = run_cli("mcp", "serve", str(TOOLS), "--policy", str(POLICY), "--home", str(not_a_folder))
    assert code == 2 and "is not a folder" in err and "Traceback" not in err
