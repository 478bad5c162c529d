"""The MCP listing memory (``$PORTAGENT_HOME/mcp_listings.json``) and the messages about tool names,
with real stdio MCP servers (data/tools_server.py, data/named_tools_server.py) started by
``portagent mcp tools`` and by runs against the emulator.

- Two specs naming the same server name and command in one folder but with different ``env`` are
  different servers to the memory: neither reports the other's tools as removed (it used to, and a run
  recorded a false ``McpToolRemoved`` error). ``env`` values are stored hashed, never in plain text.
- A listing the run refuses (an invalid schema, a colliding name) is not remembered.
- A name collision between two tools of one server suggests an allow-list (a prefix cannot help), and
  a spec without ``allow:`` is shown how to write one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _mcp_helpers import DATA, home, of_type, run_agent, server, write_agent
from _support import run_cli

from portagent.contracts.bundle import load_agent

pytestmark = pytest.mark.slow  # every test starts MCP server processes

NAMED = DATA / "named_tools_server.py"
SECRET = "s3cret-token-value-42"


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


def _named(folder: Path, names: list[str], **extra: Any) -> Path:
    """An agent using named_tools_server.py as server ``t``, listing ``names``."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "named",
        "instructions": "x",
        "mcp_servers": [
            {
                "name": "t",
                "command": [sys.executable, str(NAMED)],
                "env": {"MCP_TEST_TOOL_NAMES": json.dumps(names)},
                **extra,
            }
        ],
    }
    path = folder / "named.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _listings(home_dir: Path) -> dict[str, Any]:
    path = home_dir / "mcp_listings.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def test_specs_differing_only_in_env_keep_listings_of_their_own(tmp_path):
    folder = tmp_path / "agent"
    both = server("weather", env={"MCP_TEST_TOOLS": "get_forecast,add_note", "API_TOKEN": SECRET})
    one = server("weather", env={"MCP_TEST_TOOLS": "get_forecast", "API_TOKEN": SECRET})
    ref = write_agent(folder, [both], name="ref_desk")
    other = write_agent(folder, [one], name="other_desk")
    with home(tmp_path / "home"):
        for spec in (ref, other, ref):
            code, out, err = run_cli("mcp", "tools", str(spec))
            assert code == 0, err
            assert "removed" not in out, out
    memory = _listings(tmp_path / "home")
    assert sorted(entry["tools"] for entry in memory.values()) == [
        ["add_note", "get_forecast"],
        ["get_forecast"],
    ]
    text = (tmp_path / "home" / "mcp_listings.json").read_text(encoding="utf-8")
    assert SECRET not in text and "get_forecast,add_note" not in text


def test_a_tool_gone_from_the_same_server_is_still_reported(tmp_path):
    """The same spec (same env as written) listing fewer tools: that is a removal."""
    path = write_agent(tmp_path / "agent", [server("weather", env={"MCP_TEST_TOOLS": "${MCP_TEST_TOOLS}"})])
    with home(tmp_path / "home"), pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCP_TEST_TOOLS", "get_forecast,add_note")
        assert run_cli("mcp", "tools", str(path))[0] == 0
        mp.setenv("MCP_TEST_TOOLS", "get_forecast")
        code, out, err = run_cli("mcp", "tools", str(path))
    assert code == 0, err
    assert "removed    weather: add_note" in out


def test_a_run_with_another_env_records_no_false_removal(emu, tmp_path):
    folder = tmp_path / "agent"
    ref = write_agent(
        folder, [server("weather", env={"MCP_TEST_TOOLS": "get_forecast,add_note"})], name="ref_desk"
    )
    other = write_agent(
        folder, [server("weather", env={"MCP_TEST_TOOLS": "get_forecast"})], name="other_desk"
    )
    run_agent(load_agent(ref), "openai", "What is the weather in Paris?", emu, tmp_path)
    second = run_agent(load_agent(other), "openai", "What is the weather in Paris?", emu, tmp_path)
    # (the script's second turn calls a glossary server these specs lack: the runs end failed after it)
    assert [c.tool for c in of_type(second.events, "tool.call")][:1] == ["weather_get_forecast"]
    assert [e for e in of_type(second.events, "error") if e.error_type == "McpToolRemoved"] == []
    assert "removed_since_last_run" not in second.events[0].provider_details["mcp"]["weather"]


def test_a_refused_listing_is_not_remembered(tmp_path):
    good = write_agent(tmp_path / "agent", [server("weather", env={"MCP_TEST_MODE": "${MCP_TEST_MODE}"})])
    with home(tmp_path / "home"), pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCP_TEST_MODE", "bad_schema")  # lists 'broken' with an invalid inputSchema: refused
        code, _, err = run_cli("mcp", "tools", str(good))
        assert code == 2 and "'broken'" in err
        assert _listings(tmp_path / "home") == {}
        mp.setenv("MCP_TEST_MODE", "")
        code, out, err = run_cli("mcp", "tools", str(good))
        assert code == 0, err
        assert "removed" not in out  # 'broken' was never part of an accepted listing
    assert [e["tools"] for e in _listings(tmp_path / "home").values()] == [
        ["add_note", "book_table", "crash", "fail", "get_forecast", "lookup"]
    ]


def test_two_tools_of_one_server_colliding_are_told_to_use_allow(tmp_path):
    spec = _named(tmp_path / "agent", ["dot.name", "dot_name", "other"], prefix="other_")
    with home(tmp_path / "home"):
        code, out, err = run_cli("mcp", "tools", str(spec))
        assert code == 2 and out == ""
        assert "tool 'dot.name' of MCP server 't' already uses;" in err
        assert "set a distinct" not in err
        assert 'allow: ["dot.name", "other"]' in err
        assert "Traceback" not in err
        assert _listings(tmp_path / "home") == {}
        # The allow-list the message suggests works.
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
        data["mcp_servers"][0]["allow"] = ["dot.name", "other"]
        spec.write_text(yaml.safe_dump(data), encoding="utf-8")
        code, out, err = run_cli("mcp", "tools", str(spec))
    assert code == 0, err
    assert "other_dot_name" in out


def test_with_an_allow_list_the_colliding_tool_is_to_be_left_out_of_it(tmp_path):
    spec = _named(tmp_path / "agent", ["dot.name", "dot_name"], allow=["dot.name", "dot_name"])
    with home(tmp_path / "home"):
        code, _, err = run_cli("mcp", "tools", str(spec))
    assert code == 2
    assert "leave 'dot_name' out of mcp_servers[t].allow" in err


def test_a_collision_with_another_server_still_suggests_a_prefix(tmp_path):
    folder = tmp_path / "agent"
    path = write_agent(
        folder,
        [server("weather", env={"MCP_TEST_TOOLS": "lookup"}), server("w", env={"MCP_TEST_TOOLS": "lookup"})],
    )
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["mcp_servers"][1]["prefix"] = "weather_"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with home(tmp_path / "home"):
        code, _, err = run_cli("mcp", "tools", str(path))
    assert code == 2
    assert "tool 'lookup' of MCP server 'weather' already uses; set a distinct mcp_servers[w].prefix" in err


def test_an_overlong_name_without_allow_shows_the_allow_list_to_write(tmp_path):
    long = "x" * 70
    spec = _named(tmp_path / "agent", ["short", long])
    with home(tmp_path / "home"):
        code, _, err = run_cli("mcp", "tools", str(spec))
    assert code == 2
    assert "not a valid tool name" in err
    assert "out of 'allow'" not in err
    assert f'leave {long!r} out by listing the tools to keep in mcp_servers[t]: allow: ["short"]' in err
