"""Handler modules resolve in their own spec's folder, per folder, and no folder is put on ``sys.path``.

The usual layout is one folder per agent, each with its own ``tools.py`` (``agents/a/tools.py``,
``agents/b/tools.py``). Before, the runner put every spec folder first on ``sys.path`` and cached handlers
by their ``module:function`` string in one process-wide table, so when two such agents ran in one process
(an eval's worker, the pytest plugin, ``mcp serve``, a notebook) the second agent's calls silently ran the
FIRST folder's function; and a ``yaml.py`` or ``colorsys.py`` beside a spec hid that module from everything
the process imported later. The real SDK (openai-agents) runs against the emulator here.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

pytest.importorskip("agents")

TOOLS = """
from helpers import LABEL


def get_order(order_id: str) -> dict:
    import helpers  # imported again at call time, in the worker thread that runs the handler

    return {{"order_id": order_id, "from": "{name}", "label": LABEL, "late": helpers.LATE}}
"""


def _agent(root: Path, name: str, *, extra: dict[str, str] | None = None, module: str = "tools") -> Path:
    folder = root / "agents" / name
    folder.mkdir(parents=True)
    (folder / f"{module}.py").write_text(textwrap.dedent(TOOLS.format(name=name)))
    (folder / "helpers.py").write_text(f"LABEL = 'helper of {name}'\nLATE = 'late helper of {name}'\n")
    for file, text in (extra or {}).items():
        (folder / file).write_text(text)
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": f"desk_{name}",
        "version": "1.0.0",
        "instructions": "Look the order up.",
        "models": {"openai": "gpt-4.1-mini"},
        "tools": [
            {
                "name": "get_order",
                "description": "Look an order up.",
                "effect": "read",
                "input_schema": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string"}},
                    "required": ["order_id"],
                },
                "handler": f"{module}:get_order",
            }
        ],
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": f"desk_{name}",
        "conversations": [
            {
                "name": "lookup",
                "match": {"first_user": "Where is my order?"},
                "turns": [
                    {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "O-1"}}]},
                    {"text": "Found it."},
                ],
            }
        ],
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


def _tool_output(out: Any) -> Any:
    (result,) = [e for e in out.events if e.type == "tool.result"]
    assert result.ok, result
    return result.output


def test_two_agents_with_their_own_tools_py_each_run_their_own_function(tmp_path: Path) -> None:
    a, b = _agent(tmp_path, "a"), _agent(tmp_path, "b")
    path_before = list(sys.path)
    first, second = _run(a, tmp_path / "home-a"), _run(b, tmp_path / "home-b")
    assert first.result.status == "completed" and second.result.status == "completed"
    assert _tool_output(first) == {
        "ok": True,
        "order_id": "O-1",
        "from": "a",
        "label": "helper of a",
        "late": "late helper of a",
    }
    # before: {"from": "a", ...} — b's call ran a's function, no error anywhere
    assert _tool_output(second) == {
        "ok": True,
        "order_id": "O-1",
        "from": "b",
        "label": "helper of b",
        "late": "late helper of b",
    }
    assert _tool_output(_run(a, tmp_path / "home-a2"))["from"] == "a"  # and back, from the cache
    assert sys.path == path_before


def test_a_spec_folder_hides_no_module_from_the_rest_of_the_process(tmp_path: Path) -> None:
    """``yaml.py`` (an installed package's name) and ``colorsys.py`` (the standard library's) beside the
    spec: after a run, the process still finds the real modules (the SDKs import theirs lazily)."""
    shadows = {"yaml.py": "raise ImportError('the spec folder yaml.py')\n", "colorsys.py": "BROKEN = True\n"}
    folder = _agent(tmp_path, "shadows", extra=shadows)
    out = _run(folder, tmp_path / "home")
    assert _tool_output(out)["from"] == "shadows"
    for name in ("yaml", "colorsys"):
        found = importlib.machinery.PathFinder.find_spec(name, sys.path)
        assert found is not None and found.origin is not None
        assert Path(found.origin).parent != folder, f"{name} would be imported from {found.origin}"
    assert str(folder) not in sys.path


def test_a_folder_without_the_module_never_gets_another_folders(tmp_path: Path) -> None:
    """b's handler module was left out: the call fails with one sentence naming the folder the module came
    from — before, b silently ran the module a's run had imported. (A name nothing on ``sys.path`` has:
    here the test folder's ``tools`` package is on it.)"""
    a, b = _agent(tmp_path, "a", module="desk_orders_x"), _agent(tmp_path, "b", module="desk_orders_x")
    (b / "desk_orders_x.py").unlink()
    assert _tool_output(_run(a, tmp_path / "home-a"))["from"] == "a"
    out = _run(b, tmp_path / "home-b")
    (result,) = [e for e in out.events if e.type == "tool.result"]
    assert not result.ok and result.error == "handler_error", result
    message = result.output["message"] if isinstance(result.output, dict) else str(result)
    assert "another spec folder's" in message and str(a) in message, message
    assert "\n" not in message


def test_packages_and_sibling_imports_resolve_in_their_own_folder(tmp_path: Path) -> None:
    """A package beside the spec (relative and absolute sibling imports inside it) and a folder without
    ``__init__.py`` (``shop.orders:get_order``) are the folder's own, per folder."""
    folders = []
    for name in ("p", "q"):
        folder = _agent(tmp_path, name)
        pkg = folder / "desk"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "common.py").write_text(f"WHO = '{name}'\n")
        (pkg / "orders.py").write_text(
            "from .common import WHO\nfrom helpers import LABEL\n\n\n"
            "def get_order(order_id: str) -> dict:\n    return {'from': WHO, 'label': LABEL}\n"
        )
        spec = yaml.safe_load((folder / "agent.yaml").read_text())
        spec["tools"][0]["handler"] = "desk.orders:get_order"
        (folder / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        folders.append(folder)
    for folder in folders:
        output = _tool_output(_run(folder, tmp_path / f"home-{folder.name}"))
        assert output == {"ok": True, "from": folder.name, "label": f"helper of {folder.name}"}


def test_validate_looks_in_the_agents_own_folder(tmp_path: Path) -> None:
    """In a process that ran agent a (its handler module imported), agent b's missing module is a validate
    problem (before: passed, as the module was in ``sys.modules``)."""
    from _support import run_cli

    name = "desk_orders_v"
    a, b = (_agent(tmp_path, n, module=name) for n in "ab")
    (b / f"{name}.py").unlink()
    assert _tool_output(_run(a, tmp_path / "home-a"))["from"] == "a"
    code, out, err = run_cli("validate", str(b / "agent.yaml"))
    assert code == 1 and f"handler module {name!r} of tool 'get_order' not found" in err, out + err


def test_port_check_reads_the_agents_own_handler_module(tmp_path: Path) -> None:
    """In a process that ran agent a, port-check of c reads c's own module (it imports the anthropic SDK),
    not a's (before: the file of the module of that name in ``sys.modules``)."""
    from _support import run_cli

    name = "desk_orders_w"
    a, c = (_agent(tmp_path, n, module=name) for n in "ac")
    (c / f"{name}.py").write_text(
        "import anthropic\n\n\ndef get_order(order_id: str) -> dict:\n    return {}\n"
    )
    assert _tool_output(_run(a, tmp_path / "home-a"))["from"] == "a"
    code, out, err = run_cli("port-check", str(c / "agent.yaml"), "--to", "openai")
    assert f"{name} imports anthropic" in out + err, out + err


def test_circular_imports_between_a_folders_modules_load_once(tmp_path: Path) -> None:
    """``tools`` ↔ ``helpers`` importing each other, in two folders (the second under a private name, the
    first having taken ``tools``): each folder's pair, each module run once."""
    from portagent.tools.handlers import handler_scope, resolve

    for name in ("c1", "c2"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "circ_tools.py").write_text(
            "import circ_helpers\nRUNS = []\nRUNS.append(1)\n\n\n"
            "def get_order() -> dict:\n    return {'from': circ_helpers.WHO, 'runs': len(RUNS)}\n"
        )
        (folder / "circ_helpers.py").write_text(f"import circ_tools\nWHO = '{name}'\n")
        with handler_scope([folder]):
            fn = resolve("circ_tools:get_order").fn
        assert fn() == {"from": name, "runs": 1}


def test_a_standard_library_name_beside_the_spec_says_to_rename_it_in_a_run(tmp_path: Path) -> None:
    from portagent.tools.handlers import HandlerImportError, handler_scope, resolve

    (tmp_path / "email.py").write_text("def get_order() -> dict:\n    return {}\n")
    with handler_scope([tmp_path]), pytest.raises(HandlerImportError) as e:
        resolve("email:get_order")
    assert str(tmp_path / "email.py") in str(e.value) and "rename 'email.py'" in str(e.value)
    assert str(tmp_path) not in sys.path
