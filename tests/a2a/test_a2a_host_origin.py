"""``a2a serve`` refuses what a web page could send it: a foreign Host (a page on a DNS name rebound to
127.0.0.1 reaches a tokenless loopback server with its own name in Host) and a foreign Origin (a page of
another site, e.g. a cross-site form post, which a browser sends without asking first). The allowlist is
``mcp serve``'s (core/serving.py): loopback names, the bound address, ``--allow-host``/``--allow-origin``.

Real servers on free loopback ports, real HTTP requests (httpx, the A2A SDK's client); the request log is
the server's own record that a refused call never reached the agent."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _a2a_helpers import AGENT, SCRIPT, TOKEN, start
from _support import run_cli

CARD = ".well-known/agent-card.json"
QUESTION = "What is the refund deadline?"


def _port(url: str) -> str:
    return url.rstrip("/").rsplit(":", 1)[1]


def _body(text: str = QUESTION) -> str:
    message = {"role": "user", "messageId": os.urandom(6).hex(), "parts": [{"kind": "text", "text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}})


def _post(url: str, headers: dict[str, str], text: str = QUESTION) -> httpx.Response:
    return httpx.post(
        url, content=_body(text), headers={"content-type": "application/json", **headers}, timeout=60
    )


def _state(r: httpx.Response) -> str:
    assert r.status_code == 200, (r.status_code, r.text)
    state: str = r.json()["result"]["status"]["state"]
    return state


def _logged(log: Path) -> list[str]:
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [r["text"] for r in rows]


def test_a_foreign_host_is_refused_on_every_path_before_the_agent_runs(served: tuple[str, Path]) -> None:
    url, log = served
    port = _port(url)
    for host in (
        f"evil.example:{port}",  # what a page on a rebound name sends
        "evil.example",
        f"127.0.0.1.evil.example:{port}",
        f"localhost.evil.example:{port}",
        f"localhost:{port}@evil.example",
    ):
        card = httpx.get(url + CARD, headers={"Host": host})
        assert (card.status_code, card.text) == (421, "Invalid Host header"), host
        call = _post(url, {"Host": host}, text=f"rebound via {host}")
        assert (call.status_code, call.text) == (421, "Invalid Host header"), host
    assert not [t for t in _logged(log) if t.startswith("rebound via")]  # never reached the agent


def test_a_foreign_origin_is_refused_even_as_a_cross_site_form_post(served: tuple[str, Path]) -> None:
    """A ``text/plain`` POST is what a form on any site can send without a CORS preflight; the SDK would
    run it as JSON-RPC. The Origin the browser adds is what refuses it."""
    url, log = served
    port = _port(url)
    for origin in (
        "http://evil.example",
        f"http://evil.example:{port}",
        f"http://127.0.0.1.evil.example:{port}",
        "null",  # a sandboxed frame or a local file
    ):
        form = httpx.post(
            url,
            content=_body(f"cross-site from {origin}"),
            headers={"content-type": "text/plain", "Origin": origin},
            timeout=60,
        )
        assert (form.status_code, form.text) == (403, "Invalid Origin header"), origin
        call = _post(url, {"Origin": origin}, text=f"cross-site from {origin}")
        assert call.status_code == 403, origin
        assert httpx.get(url + CARD, headers={"Origin": origin}).status_code == 403, origin
    assert not [t for t in _logged(log) if t.startswith("cross-site")]


def test_the_bound_host_without_an_origin_passes_and_the_sdk_client_works(served: tuple[str, Path]) -> None:
    """What is let through, beside what is not: the A2A SDK's own client end to end (card, then
    SendMessage), loopback names on the bound port, and the loopback origins."""
    url, _ = served
    port = _port(url)
    assert _post(url, {"Host": f"evil.example:{port}"}).status_code == 421

    async def go() -> Any:
        from a2a.client import ClientConfig, create_client
        from a2a.types import Message, Part, Role, SendMessageRequest

        async with httpx.AsyncClient(timeout=60) as http:  # the SDK's default 5 s is short for a run
            client = await create_client(url, ClientConfig(streaming=False, httpx_client=http))
            message = Message(
                role=Role.ROLE_USER, message_id=os.urandom(6).hex(), parts=[Part(text=QUESTION)]
            )
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
            await client.close()
            return events

    (event,) = asyncio.run(go())
    from a2a.types import TaskState

    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "30 days" in event.task.artifacts[0].parts[0].text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert httpx.get(url + CARD, headers={"Host": host}).json()["name"] == "support_desk", host
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert _state(_post(url, {"Origin": origin})) == "completed", origin


def test_with_a_token_the_host_check_still_comes_first(served_with_token: tuple[str, Path]) -> None:
    """The token does not stand in for the Host check (a rebound page is refused even on the card, which
    needs no token), and the token rules are unchanged behind it."""
    url, log = served_with_token
    port = _port(url)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(url + CARD, headers={"Host": f"evil.example:{port}"}).status_code == 421
    assert _post(url, {**bearer, "Host": f"evil.example:{port}"}, text="rebound").status_code == 421
    assert _post(url, {**bearer, "Origin": "http://evil.example"}, text="cross-site").status_code == 403
    assert httpx.get(url + CARD).json()["securitySchemes"]["bearer"]  # the card: no token needed
    assert _post(url, {}).status_code == 401
    assert _state(_post(url, bearer)) == "completed"
    assert _logged(log) == [QUESTION]


def test_allow_host_and_allow_origin_admit_what_they_name(tmp_path: Path) -> None:
    """Entries are kept as the headers arrive (lowercase; an origin without its default port or a copied
    URL's trailing slash); an entry without a port admits any port, one with a port only that port."""
    with start(
        tmp_path,
        allow_hosts=["App.Example", "box.lan:9999"],
        allow_origins=["HTTPS://App.Example:443/"],
    ) as (url, _):
        port = _port(url)
        app = {"Host": f"app.example:{port}"}
        assert httpx.get(url + CARD, headers=app).json()["name"] == "support_desk"
        assert _state(_post(url, {**app, "Origin": "https://app.example"})) == "completed"
        assert httpx.get(url + CARD, headers={**app, "Origin": "https://app.example:8443"}).status_code == 200
        assert httpx.get(url + CARD, headers={"Host": "box.lan:9999"}).status_code == 200
        refused = [
            ({"Host": f"box.lan:{port}"}, 421),  # named with another port
            ({"Host": f"app.example.evil:{port}"}, 421),
            ({"Host": f"other.example:{port}"}, 421),
            ({**app, "Origin": "http://app.example"}, 403),  # another scheme
            ({**app, "Origin": "https://evil.example"}, 403),
        ]
        for headers, status in refused:
            assert httpx.get(url + CARD, headers=headers).status_code == status, headers


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
        ("--allow-host", "::1"),
    ],
)
def test_a_malformed_allow_option_is_one_message_and_exit_2(tmp_path: Path, flag: str, value: str) -> None:
    """An entry the check could never match would refuse the very client it was meant for."""
    runs = tmp_path / "runs"
    code, out, err = run_cli(
        "a2a",
        "serve",
        str(AGENT),
        "--provider",
        "openai",
        "--emulator",
        str(SCRIPT),
        "--port",
        "0",
        "--runs",
        str(runs),
        flag,
        value,
    )
    assert code == 2, err
    assert err.startswith(f"portagent: {flag} ") and err.count("\n") == 1 and "Traceback" not in err
    assert out == "" and not runs.exists()  # refused before anything was made


@pytest.mark.slow
def test_the_cli_options_reach_the_server(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portagent",
            "a2a",
            "serve",
            str(AGENT),
            "--provider",
            "openai",
            "--emulator",
            str(SCRIPT),
            "--port",
            "0",
            "--runs",
            str(tmp_path / "runs"),
            "--allow-host",
            "app.example",
            "--allow-origin",
            "https://app.example",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while "Host allowlist" not in "".join(lines) and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            lines.append(line)
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", "".join(lines))
        assert match, lines
        assert "Host allowlist: 127.0.0.1, localhost, [::1], app.example" in lines[-1]
        url, port = match.group(1), _port(match.group(1))
        app = {"Host": f"app.example:{port}", "Origin": "https://app.example"}
        assert _state(_post(url, app)) == "completed"
        assert httpx.get(url + CARD, headers={"Host": f"evil.example:{port}"}).status_code == 421
        assert httpx.get(url + CARD, headers={"Origin": "https://evil.example"}).status_code == 403
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
