"""A tools file shared by several agents keeps its handler module beside it: its ``module:function``
references are looked for first in the tools file's folder (``tool_files: [../shared/tools.yaml]``, the
usual monorepo layout), then the agent specs' folders, then ``sys.path`` (ADR 0004).

Before, only the agent specs' folders (and ``sys.path``) were searched: ``validate`` said the module was
not found and every call of such a tool was a ``handler_error``. The real SDK (openai-agents) runs
against the emulator here.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home, run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

pytest.importorskip("agents")

HANDLER = """
from helpers import LABEL


def get_order(order_id: str) -> dict:
    return {{"order_id": order_id, "from": "{name}", "label": LABEL}}
"""


def _tool(name: str, handler: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Look an order up.",
        "effect": "read",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "handler": handler,
    }


def _shared(root: Path, name: str, module: str, tools: list[str]) -> Path:
    """``root/<name>/tools.yaml`` declaring ``tools`` (each ``module:get_order``), ``module.py`` and the
    ``helpers.py`` it imports beside it."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / f"{module}.py").write_text(textwrap.dedent(HANDLER.format(name=name)))
    (folder / "helpers.py").write_text(f"LABEL = 'helper of {name}'\n")
    doc = {"kind": "tools", "schema_version": 1, "tools": [_tool(t, f"{module}:get_order") for t in tools]}
    (folder / "tools.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def _agent(root: Path, name: str, tool_files: list[str], tools: list[str]) -> Path:
    """``root/<name>/agent.yaml`` taking ``tools`` from ``tool_files``, and an emulator script calling
    each tool once."""
    folder = root / name
    folder.mkdir(parents=True)
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": f"desk_{name}",
        "version": "1.0.0",
        "instructions": "Look the order up.",
        "models": {"openai": "gpt-4.1-mini"},
        "tool_files": tool_files,
        "tools": tools,
    }
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": t, "arguments": {"order_id": "O-1"}} for t in tools]},
        {"text": "Found it."},
    ]
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": f"desk_{name}",
        "conversations": [{"name": "lookup", "match": {"first_user": "Where is my order?"}, "turns": turns}],
    }
    (folder / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (folder / "emulator.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    return folder


def _run(folder: Path, home: Path) -> Any:
    with serve(load_script(folder / "emulator.yaml")) as emu, portagent_home(home):
        config = RunConfig(
            endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-portagent-dummy"),
            clock=FixedClock(),
            ids=IdFactory(folder.name),
        )
        return asyncio.run(
            arun_full(
                load_agent(folder / "agent.yaml"),
                RunRequest(input="Where is my order?", provider="openai"),
                config,
            )
        )


def _results(out: Any) -> dict[str, Any]:
    """Tool name → its ``tool.result`` event."""
    return {e.tool: e for e in out.events if e.type == "tool.result"}


def test_validate_finds_the_handler_module_beside_a_shared_tools_file(tmp_path: Path) -> None:
    _shared(tmp_path, "shared", "shared_desk_v", ["get_order"])
    agent = _agent(tmp_path, "agent", ["../shared/tools.yaml"], ["get_order"])
    code, out, err = run_cli("validate", str(agent / "agent.yaml"))
    assert code == 0 and "1 of 1 spec file valid" in out, out + err  # before: module not found

    # missing there too: the message names the tools file's folder it looked in
    (tmp_path / "shared" / "shared_desk_v.py").unlink()
    code, out, err = run_cli("validate", str(agent / "agent.yaml"))
    assert code == 1, out + err
    assert "handler module 'shared_desk_v' of tool 'get_order' not found" in err
    assert f"looked in the tools file's folder {(tmp_path / 'shared').resolve()}" in err


def test_a_run_calls_the_shared_folders_handler(tmp_path: Path) -> None:
    _shared(tmp_path, "shared", "shared_desk_r", ["get_order"])
    agent = _agent(tmp_path, "agent", ["../shared/tools.yaml"], ["get_order"])
    out = _run(agent, tmp_path / "home")
    result = _results(out)["get_order"]
    assert result.ok, result  # before: handler_error, module not found
    assert result.output == {"ok": True, "order_id": "O-1", "from": "shared", "label": "helper of shared"}
    assert out.result.status == "completed"


def test_two_shared_folders_with_the_same_reference_each_run_their_own(tmp_path: Path) -> None:
    """Two agents, each with its own shared tools folder whose tools file says ``shtools:get_order``: one
    process, each run gets its own folder's function (and its folder's ``helpers``)."""
    for name in ("shared_a", "shared_b"):
        _shared(tmp_path, name, "shtools", ["get_order"])
    a = _agent(tmp_path, "a", ["../shared_a/tools.yaml"], ["get_order"])
    b = _agent(tmp_path, "b", ["../shared_b/tools.yaml"], ["get_order"])
    for agent, shared in ((a, "shared_a"), (b, "shared_b"), (a, "shared_a")):
        result = _results(_run(agent, tmp_path / f"home-{agent.name}"))["get_order"]
        assert result.ok, result
        assert result.output["from"] == shared and result.output["label"] == f"helper of {shared}"


def test_one_run_with_two_folders_holding_the_same_reference_says_so(tmp_path: Path) -> None:
    """One agent taking a tool from each of two tools files that both say ``shtools_c:get_order``, each
    folder holding its own ``shtools_c.py``: a run resolves a reference once, so neither tool may silently
    get the other folder's function — validate says so, and both calls fail naming the two folders."""
    folders = [_shared(tmp_path, f"shared_{x}", "shtools_c", [f"get_{x}"]) for x in "ab"]
    agent = _agent(
        tmp_path, "agent", ["../shared_a/tools.yaml", "../shared_b/tools.yaml"], ["get_a", "get_b"]
    )
    code, out, err = run_cli("validate", str(agent / "agent.yaml"))
    assert code == 1, out + err
    assert "'shtools_c:get_order' is named by tools declared in folders that each hold their own" in err
    assert all(str(f.resolve()) in err for f in folders) and "rename one of the modules" in err
    results = _results(_run(agent, tmp_path / "home"))
    assert set(results) == {"get_a", "get_b"}
    for result in results.values():
        assert not result.ok and result.error == "handler_error", result
        assert "rename one of the modules" in str(result.output), result


def test_a_reference_only_one_folder_holds_is_no_clash(tmp_path: Path) -> None:
    """Two tools files saying ``shtools_d:get_order``, only the first folder holding the module: both
    tools run it (the other tools files' folders are looked in too), and validate is content."""
    _shared(tmp_path, "shared_a", "shtools_d", ["get_a"])
    (_shared(tmp_path, "shared_b", "shtools_d", ["get_b"]) / "shtools_d.py").unlink()
    agent = _agent(
        tmp_path, "agent", ["../shared_a/tools.yaml", "../shared_b/tools.yaml"], ["get_a", "get_b"]
    )
    code, out, err = run_cli("validate", str(agent / "agent.yaml"))
    assert code == 0, out + err
    results = _results(_run(agent, tmp_path / "home"))
    assert [r.output["from"] for r in results.values()] == ["shared_a", "shared_a"]


def test_inline_tools_of_two_spec_folders_with_the_same_reference_are_a_clash(tmp_path: Path) -> None:
    """The same class between agent specs: a root and its sub-agent in two folders, each with its own
    ``tools_e.py`` behind an inline ``tools_e:get_order`` (before: the sub-agent's call silently ran the
    root folder's function)."""
    from portagent.tools.handlers import bundle_scope

    for name in ("root", "sub"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "tools_e.py").write_text(textwrap.dedent(HANDLER.format(name=name)))
        spec: dict[str, Any] = {
            "kind": "agent",
            "schema_version": 1,
            "name": name,
            "instructions": "Look the order up.",
            "models": {"openai": "gpt-4.1-mini"},
            "tools": [_tool(f"get_{name}", "tools_e:get_order")],
        }
        if name == "root":
            spec["delegation"] = [{"agent": "../sub/agent.yaml", "kind": "agent_as_tool", "description": "x"}]
        (folder / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    scope = bundle_scope(load_agent(tmp_path / "root" / "agent.yaml"))
    assert scope.clash == {
        "tools_e:get_order": (str((tmp_path / "root").resolve()), str((tmp_path / "sub").resolve()))
    }
