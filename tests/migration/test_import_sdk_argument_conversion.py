"""``portagent import --from openai|adk``: an imported tool gets its arguments as its SDK would pass them.

The gateway hands handlers the JSON arguments; openai-agents validates them with its own
``function_schema`` model first (a pydantic model, an enum, ``*args`` / ``**kwargs`` spread) and ADK's
``FunctionTool`` turns a dict into the pydantic model a parameter names. Each test imports a small native
program, runs the imported spec against the emulator on its own SDK and on another one, and compares what
the handler returned (the trace's ``tool.result``) with what the SDK's own tool call returns natively.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _migration_helpers import import_cli, of, run_exported, run_spec
from _support import run_cli

from portagent.emulator import load_script, serve

OPENAI_SOURCE = '''
from enum import Enum
from typing import Any

from pydantic import BaseModel
from agents import Agent, RunContextWrapper, function_tool


class Size(str, Enum):
    S = "s"
    L = "l"


class Address(BaseModel):
    city: str


@function_tool
def ship(address: Address, size: Size) -> str:
    """Ship a parcel."""
    return f"{address.city}/{size.value}"


@function_tool(strict_mode=False)
def tag(label: str, *extra: str, **opts: int) -> dict:
    """Tag."""
    return {"label": label, "extra": list(extra), "opts": opts}


@function_tool(strict_mode=False)
def note(wrapper: RunContextWrapper[Any], label: str, **opts: int) -> dict:
    """Note something in the run's context."""
    return {"label": label, "opts": opts, "wrapper": type(wrapper).__name__}


@function_tool
def plain(order_id: str, amount: float) -> dict:
    """A tool whose arguments pass through unchanged."""
    return {"order_id": order_id, "amount": amount}


desk = Agent(name="desk", instructions="Ship.", model="gpt-4.1", tools=[ship, tag, note, plain])
'''

ADK_SOURCE = '''
from typing import Optional

from pydantic import BaseModel
from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext


class Item(BaseModel):
    sku: str


def add_item(item: Item) -> dict:
    """Add an item to the cart."""
    return {"sku": item.sku}


def add_items(items: list[Item], gift: Optional[Item] = None) -> dict:
    """Add items to the cart."""
    return {"skus": [i.sku for i in items], "gift": gift.sku if gift else None}


def remember(item: Item, tool_context: ToolContext) -> dict:
    """Remember the last item in the session state."""
    tool_context.state["last"] = item.sku
    return {"sku": item.sku, "state": tool_context.state["last"]}


root = LlmAgent(
    name="cart", model="gemini-2.5-flash", instruction="Add items.", tools=[add_item, add_items, remember]
)
'''

OPENAI_CALLS = {
    "ship": {"address": {"city": "Lyon"}, "size": "l"},
    "tag": {"label": "a", "extra": ["x", "y"], "opts": {"k": 1}},
    "note": {"label": "b", "opts": {"n": 2}},
}
ADK_CALLS = {
    "add_item": {"item": {"sku": "LAMP"}},
    "add_items": {"items": [{"sku": "A"}, {"sku": "B"}], "gift": {"sku": "G"}},
    "remember": {"item": {"sku": "MUG"}},
}


def _script(tmp: Path, calls: dict[str, dict[str, Any]]) -> Path:
    """An emulator script: the user's "call <tool>" makes the model call that tool with these arguments."""
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "argument-conversion",
        "conversations": [
            {
                "name": name,
                "match": {"first_user": f"call {name}"},
                "turns": [{"tool_calls": [{"name": name, "arguments": args}]}, {"text": "done"}],
            }
            for name, args in calls.items()
        ],
    }
    path = tmp / "script.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return path


def _native_module(tmp: Path, stem: str, source: str) -> Any:
    """The native program in a module of its own (a name no other test imports), importable by name."""
    folder = tmp / "native"
    folder.mkdir(exist_ok=True)
    (folder / f"{stem}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    sys.path.insert(0, str(folder))
    import importlib

    return importlib.import_module(stem)


@pytest.fixture
def on_path():
    added: list[str] = []
    yield added
    for folder in added:
        if folder in sys.path:
            sys.path.remove(folder)


def _results(events: list[Any]) -> list[tuple[bool, Any]]:
    return [(e.ok, e.output) for e in of(events, "tool.result")]


def _strip(output: Any) -> Any:
    """What the handler returned, from the trace's observation: less the ledger's bookkeeping fields, and
    a value that is not an object unwrapped from ``{"output": …}``."""
    if isinstance(output, dict):
        output = {k: v for k, v in output.items() if k not in ("ok", "effect_id")}
        if list(output) == ["output"]:
            return output["output"]
    return output


def _native_openai(tool: Any, args: dict[str, Any]) -> Any:
    """What openai-agents' own tool call gives the model for these arguments (on_invoke_tool)."""
    from agents.tool_context import ToolContext

    ctx = ToolContext(
        context=None, tool_name=tool.name, tool_call_id="call_1", tool_arguments=json.dumps(args)
    )
    return asyncio.run(tool.on_invoke_tool(ctx, json.dumps(args)))


def test_openai_tools_get_the_arguments_the_sdk_passes_on_every_provider(tmp_path, on_path):
    native = _native_module(tmp_path, "conv_openai_native", OPENAI_SOURCE)
    on_path.append(str(tmp_path / "native"))
    out = tmp_path / "desk"
    code, _, stderr = import_cli("conv_openai_native:desk", "openai", out)
    assert code == 0, stderr
    # a tool whose arguments the SDK passes through unchanged still points at the original function
    shims = next(out.glob("portagent_shims_*.py")).read_text(encoding="utf-8")
    assert "plain = _src_conv_openai_native.plain.__wrapped__" in shims
    # the RunContextWrapper tool with **opts gets the context shim (it was read in strict mode and missed)
    assert "async def note(portagent_tool_context: ToolContext, **args)" in shims

    expected = {name: _native_openai(getattr(native, name), args) for name, args in OPENAI_CALLS.items()}
    assert expected["ship"] == "Lyon/l"
    assert expected["tag"] == {"label": "a", "extra": ["x", "y"], "opts": {"k": 1}}
    assert expected["note"] == {"label": "b", "opts": {"n": 2}, "wrapper": "ToolContext"}
    with serve(load_script(_script(tmp_path, OPENAI_CALLS))) as emu:
        for provider in ("openai", "adk"):
            for name in OPENAI_CALLS:
                result = run_spec(out / "agent.yaml", provider, f"call {name}", emu, tmp_path, tag=name)
                got = _results(result.events)
                assert [(ok, _strip(o)) for ok, o in got] == [(True, expected[name])], (provider, name, got)


def test_an_openai_tool_gets_a_validation_error_where_the_sdk_refuses_the_arguments(tmp_path, on_path):
    """The SDK's model refuses a size outside the enum (ModelBehaviorError): a validation_error, and the
    function never runs."""
    _native_module(tmp_path, "conv_openai_refuse", OPENAI_SOURCE)
    on_path.append(str(tmp_path / "native"))
    out = tmp_path / "desk"
    assert import_cli("conv_openai_refuse:desk", "openai", out)[0] == 0
    sys.path.insert(0, str(out))
    on_path.append(str(out))
    from portagent.contracts.bundle import load_agent
    from portagent.tools.handlers import resolve
    from portagent.tools.observations import ToolFailure

    ship = resolve(load_agent(out / "agent.yaml").all_tools()["ship"].handler).fn
    with pytest.raises(ToolFailure) as raised:
        asyncio.run(ship(address={"city": "Lyon"}, size="xl"))
    assert raised.value.code == "validation_error" and "size" in raised.value.message


def test_adk_tools_get_pydantic_models_on_adk_on_openai_and_in_the_exported_program(tmp_path, on_path):
    _native_module(tmp_path, "conv_adk_native", ADK_SOURCE)
    on_path.append(str(tmp_path / "native"))
    out = tmp_path / "cart"
    code, _, stderr = import_cli("conv_adk_native:root", "adk", out)
    assert code == 0, stderr
    expected = {
        "add_item": {"sku": "LAMP"},
        "add_items": {"skus": ["A", "B"], "gift": "G"},
        "remember": {"sku": "MUG", "state": "MUG"},
    }
    with serve(load_script(_script(tmp_path, ADK_CALLS))) as emu:
        for provider in ("adk", "openai"):
            for name in ADK_CALLS:
                result = run_spec(out / "agent.yaml", provider, f"call {name}", emu, tmp_path, tag=name)
                got = _results(result.events)
                assert [(ok, _strip(o)) for ok, o in got] == [(True, expected[name])], (provider, name, got)
        program = tmp_path / "cart_adk.py"
        code, _, stderr = run_cli("export", str(out / "agent.yaml"), "--to", "adk", "--out", str(program))
        assert code == 0, stderr
        events = run_exported(program, "adk", "call add_items", emu, tmp_path)
        assert [(ok, _strip(o)) for ok, o in _results(events)] == [(True, expected["add_items"])]


def test_a_renamed_handoff_tool_is_reported(tmp_path, on_path):
    _native_module(
        tmp_path,
        "conv_handoff_native",
        """
        from agents import Agent, handoff

        billing = Agent(name="billing", instructions="Bill.", model="gpt-4.1")
        plain = Agent(name="plain", instructions="Plain.", model="gpt-4.1")
        desk = Agent(
            name="desk",
            instructions="Route.",
            model="gpt-4.1",
            handoffs=[handoff(billing, tool_name_override="escalate_to_accounts"), handoff(plain)],
        )
        """,
    )
    on_path.append(str(tmp_path / "native"))
    out = tmp_path / "desk"
    code, _, stderr = import_cli("conv_handoff_native:desk", "openai", out)
    assert code == 0, stderr
    report = (out / "import-report.md").read_text(encoding="utf-8")
    assert "handoff tool 'escalate_to_accounts' on agent desk" in report
    assert "'transfer_to_billing'" in report
    assert "handoff tool 'transfer_to_plain'" not in report  # the default name is no change
