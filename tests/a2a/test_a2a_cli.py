"""``portagent a2a serve`` from the command line: refusals are one message and exit 2, before anything
starts; one real start in a subprocess answers the card and a message, and stops on SIGINT."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpx
import pytest
from _a2a_helpers import AGENT, SCRIPT
from _support import run_cli


def test_non_loopback_bind_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PORTAGENT_A2A_TOKEN", raising=False)
    code, _, err = run_cli(
        "a2a", "serve", str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), "--host", "0.0.0.0"
    )
    assert code == 2
    assert "refusing to serve on 0.0.0.0 without a token" in err and "Traceback" not in err


def test_short_token_is_refused() -> None:
    code, _, err = run_cli(
        "a2a", "serve", str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), "--token", "short"
    )
    assert code == 2 and "at least 16 characters" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.yaml", "--provider", "openai", "--emulator", str(SCRIPT)], "agent spec not found"),
        (
            [str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), "--base-url", "http://x"],
            "--base-url goes with --live",
        ),
        (
            [str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), "--port", "70000"],
            "--port must be between",
        ),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    code, _, err = run_cli("a2a", "serve", *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_live_without_key_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run_cli("a2a", "serve", str(AGENT), "--provider", "openai", "--live", "--port", "0")
    assert code == 2 and "OPENAI_API_KEY" in err


def test_port_in_use_is_one_message() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        code, _, err = run_cli(
            "a2a", "serve", str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), "--port", str(port)
        )
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err


def test_serve_in_a_subprocess(tmp_path: object) -> None:
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
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while "serving" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        url = match.group(1)
        assert httpx.get(url + ".well-known/agent-card.json").json()["name"] == "support_desk"
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "role": "user",
                    "messageId": "m",
                    "parts": [{"kind": "text", "text": "What is the refund deadline?"}],
                }
            },
        }
        assert httpx.post(url, json=body, timeout=60).json()["result"]["status"]["state"] == "completed"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
