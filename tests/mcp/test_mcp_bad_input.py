"""Bad input around MCP tool sources: each case is one clear message and the documented exit code
(2 configuration, 3 the server failed), before any run starts. Through ``portagent mcp tools`` (which
lists an agent's MCP tools exactly as a run does) and ``portagent run``."""

from __future__ import annotations

import time

import pytest
from _mcp_helpers import DATA, server, write_agent
from _support import run_cli

from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import SpecError


def _tools(tmp_path, *servers) -> tuple[int, str, str]:
    return run_cli("mcp", "tools", str(write_agent(tmp_path / "agent", list(servers))))


def test_the_test_agent_lists_its_mcp_tools(tmp_path):
    code, out, err = _tools(tmp_path, server("weather"), server("glossary", allow=["lookup"]))
    assert code == 0, err
    assert "tool       weather_desk: weather_book_table  external_effect  (mcp:weather)" in out
    assert "tool       weather_desk: glossary_lookup  read  (mcp:glossary)" in out
    assert "glossary_fail" not in out  # not in the allow-list


def test_server_command_not_found(tmp_path):
    bad = {"name": "weather", "command": ["no-such-mcp-server", "--stdio"]}
    code, _, err = _tools(tmp_path, bad)
    assert code == 2
    assert "MCP server 'weather': command 'no-such-mcp-server' not found" in err
    assert "Traceback" not in err


def test_a_missing_script_next_to_the_spec_is_reported_by_the_server_and_exits_3(tmp_path):
    code, _, err = _tools(tmp_path, {"name": "weather", "command": ["python", "missing_server.py"]})
    assert code == 3 and "MCP server 'weather'" in err and "missing_server.py" in err


def test_server_times_out_on_initialize(tmp_path):
    t0 = time.monotonic()
    code, _, err = _tools(tmp_path, server("weather", env={"MCP_TEST_MODE": "hang"}, timeout_s=1))
    assert code == 3
    assert "did not complete initialize within 1 s (mcp_servers[weather].timeout_s)" in err
    assert time.monotonic() - t0 < 20  # the hung server was stopped, not waited for


def test_server_that_exits_at_start_shows_its_stderr(tmp_path):
    code, _, err = _tools(tmp_path, server("weather", env={"MCP_TEST_MODE": "exit"}))
    assert code == 3
    assert "MCP server 'weather'" in err and "cannot open the weather database" in err


def test_a_listed_tool_with_an_invalid_schema(tmp_path):
    code, _, err = _tools(tmp_path, server("weather", env={"MCP_TEST_MODE": "bad_schema"}))
    assert code == 2
    assert "MCP server 'weather' lists tool 'broken' with an invalid inputSchema" in err
    # the spec has no allow-list: the message writes out the one to add
    assert "leave 'broken' out by listing the tools to keep in mcp_servers[weather]: allow: [" in err
    # leaving it out of the allow-list is the fix
    code, out, err = run_cli(
        "mcp",
        "tools",
        str(
            write_agent(
                tmp_path / "fixed",
                [server("weather", env={"MCP_TEST_MODE": "bad_schema"}, allow=["get_forecast"])],
            )
        ),
    )
    assert code == 0, err
    assert "weather_get_forecast" in out


def test_an_allow_list_naming_a_tool_the_server_does_not_have(tmp_path):
    code, _, err = _tools(tmp_path, server("weather", allow=["get_forcast"]))
    assert code == 2
    assert "MCP server 'weather'" in err and "has no tool 'get_forcast' (did you mean 'get_forecast'?)" in err
    assert "mcp_servers[weather].allow" in err


def test_an_effects_override_naming_an_unknown_tool(tmp_path):
    code, _, err = _tools(tmp_path, server("weather", effects={"nope": "read"}))
    assert code == 2 and "has no tool 'nope'" in err and "mcp_servers[weather].effects" in err


def test_two_servers_with_the_same_prefix_collide_loudly(tmp_path):
    code, _, err = _tools(tmp_path, server("weather", prefix="x_"), server("glossary", prefix="x_"))
    assert code == 2
    assert "would be named 'x_get_forecast'" in err and "set a distinct mcp_servers[glossary].prefix" in err


def test_an_unset_environment_variable_in_env(tmp_path, monkeypatch):
    monkeypatch.delenv("MCP_TEST_MISSING", raising=False)
    code, _, err = _tools(tmp_path, server("weather", env={"TOKEN": "${MCP_TEST_MISSING}"}))
    assert code == 2 and "refers to ${MCP_TEST_MISSING}, which is not set" in err


def test_portagent_run_refuses_before_the_run_starts(tmp_path):
    path = write_agent(tmp_path / "agent", [{"name": "weather", "command": ["no-such-mcp-server"]}])
    out_dir = tmp_path / "out"
    code, _, err = run_cli(
        "run",
        str(path),
        "--provider",
        "openai",
        "--input",
        "hi",
        "--emulator",
        str(DATA / "emulator.yaml"),
        "--out",
        str(out_dir),
    )
    assert code == 2 and "command 'no-such-mcp-server' not found" in err
    assert not (out_dir / "trace.jsonl").exists()


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"name": "w", "command": ["x"], "url": "http://127.0.0.1:1/mcp"}, "give exactly one of 'command'"),
        ({"name": "w"}, "give exactly one of 'command'"),
        ({"name": "w", "url": "ftp://x"}, "should match pattern"),
        (
            {"name": "w", "url": "http://127.0.0.1:1/mcp", "env": {"A": "b"}},
            "apply to a stdio 'command' only",
        ),
        ({"name": "w", "command": ["x"], "allow": ["a", "a"]}, "names a tool twice"),
        ({"name": "w", "command": ["x"], "effects": {"a": "reading"}}, "effects"),
        ({"name": "1w", "command": ["x"]}, "name"),
    ],
)
def test_mcp_server_entries_are_checked_by_the_contract(tmp_path, entry, message):
    path = write_agent(tmp_path / "agent", [entry])
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert message in info.value.render()
    code, _, err = run_cli("validate", str(path))
    assert code == 1 and "mcp_servers" in err
