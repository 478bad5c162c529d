"""A value portagent puts into an MCP server's ``env`` from ``${NAME}`` is a secret, whatever NAME is
called: ``${NAME}`` exists so that no secret is written in the spec. A server echoing it back (here the
test server's forecast) put it into cassette.yaml, mcp.json, transport.jsonl and trace.jsonl, because
only secret-named variables (``*_TOKEN``, …) were protected."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _mcp_helpers import DATA, home, server, write_agent
from _support import run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.agent import McpServerRef
from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest
from portagent.core.secrets import find_secret, mask_text
from portagent.runtime.record import record_run
from portagent.tools.mcp.client import expand_env

Q = "What is the weather in Paris?"


def _agent_path(tmp_path: Path) -> Path:
    """The weather server answers its forecast from ``${WEATHER_AUTH}`` (a name no secret rule knows)."""
    return write_agent(
        tmp_path / "agent",
        [
            server("weather", env={"MCP_TEST_FORECAST": "${WEATHER_AUTH}"}),
            server("glossary", allow=["lookup"]),
        ],
    )


def _files_holding(root: Path, value: str) -> list[str]:
    return [
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and value.encode() in p.read_bytes()
    ]


@pytest.mark.slow  # starts MCP servers and a recording
def test_record_refuses_an_mcp_answer_echoing_an_env_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "Hh7uQ2pLm9" + "Vx4Kz1-record"
    monkeypatch.setenv("WEATHER_AUTH", value)
    agent = load_agent(_agent_path(tmp_path))
    folder = tmp_path / "cass" / "openai" / "r0"

    async def go() -> object:
        from portagent.emulator import load_script, serve

        with serve(load_script(DATA / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-portagent-dummy")
            return await record_run(agent, RunRequest(input=Q, provider="openai", case_id="c1"), folder, ep)

    with home(tmp_path / "home"), pytest.raises(RecordingError) as refused:
        asyncio.run(asyncio.wait_for(go(), 120))
    assert "(value of an API-key variable); nothing was written" in str(refused.value)
    assert not folder.exists()
    assert _files_holding(tmp_path, value) == []


@pytest.mark.slow  # starts MCP servers and a run
def test_run_masks_an_mcp_answer_echoing_an_env_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "Hh7uQ2pLm9" + "Vx4Kz1-run"
    monkeypatch.setenv("WEATHER_AUTH", value)
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "run", str(_agent_path(tmp_path)), "--provider", "openai", "--input", Q,
        "--emulator", str(DATA / "emulator.yaml"), "--out", str(out),
    )  # fmt: skip
    assert code == 0, stdout + err
    assert "[REDACTED:env-value]" in (out / "trace.jsonl").read_text()
    assert _files_holding(tmp_path, value) == [] and value not in stdout + err


def test_expand_env_protects_what_it_puts_in_but_not_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    secret, short, path = "Qm3Lx8Rt" + "Vb2Nw6-expand", "abc123", "/opt/tools" + "/bin-expand"
    monkeypatch.setenv("SERVICE_AUTH_X", secret)
    monkeypatch.setenv("SERVICE_SHORT_X", short)
    monkeypatch.setenv("PATH", path + ":/usr/bin")
    ref = McpServerRef(
        name="svc",
        command=["python", "s.py"],
        env={"AUTH": "Bearer ${SERVICE_AUTH_X}", "SHORT": "${SERVICE_SHORT_X}", "PATH": "${PATH}"},
    )
    assert mask_text(f"echo {secret}") == f"echo {secret}"  # not secret-named: unprotected until put in
    env = expand_env(ref)
    assert env["AUTH"] == f"Bearer {secret}"
    assert mask_text(f"echo {secret}") == "echo [REDACTED:env-value]"
    assert find_secret({"out": f"server said {secret}"}) == "out (value of an API-key variable)"
    assert mask_text(f"echo {short} {path}:/usr/bin") == f"echo {short} {path}:/usr/bin"
