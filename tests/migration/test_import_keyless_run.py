"""An imported agent whose program builds an SDK client or a chat model at its top level runs offline.

``ChatOpenAI()``, ``AsyncOpenAI()`` and ``genai.Client()`` raise when built without a key. ``portagent
import`` imported such a program with placeholder keys, but the generated shim module imported it again at
run time without them: an emulator run with no key in the environment (which needs none) completed with
every tool call a ``handler_error`` naming the missing key. The shim now imports the original modules
under the same placeholder context, and the placeholder is gone again before any tool runs or request is
sent."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _migration_helpers import SCRIPT, import_cli, of, run_spec

from portagent.emulator import load_script, serve
from portagent.migration.shims import KEY_VARIABLES, PLACEHOLDER_KEY, placeholder_keys

TEXT = "Summarise order ORD-7."

TOOL = '''
def get_order(order_id: str) -> dict:
    """Read one order: its status."""
    # read at call time: the placeholder must be gone by then (and never reach the trace)
    return {"order_id": order_id, "status": "shipped", "key_at_call": os.environ.get("OPENAI_API_KEY")}
'''

PROGRAMS = {
    "langgraph": (
        "import os\n"
        "import warnings\n"
        "from langchain_core.tools import tool\n"
        "from langchain_openai import ChatOpenAI\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    from langgraph.prebuilt import create_react_agent\n"
        "KEY_AT_IMPORT = os.environ.get('OPENAI_API_KEY')\n"
        "@tool" + TOOL + "\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    desk = create_react_agent(ChatOpenAI(model='gpt-4.1-mini'), [get_order], prompt='Read orders.')\n"
    ),
    "openai": (
        "import os\n"
        "from agents import Agent, function_tool\n"
        "from openai import AsyncOpenAI\n"
        "KEY_AT_IMPORT = os.environ.get('OPENAI_API_KEY')\n"
        "client = AsyncOpenAI()\n"
        "@function_tool" + TOOL + "\n"
        "desk = Agent(name='desk', instructions='Read orders.', tools=[get_order], model='gpt-4.1-mini')\n"
    ),
    "adk": (
        "import os\n"
        "from google import genai\n"
        "from google.adk.agents import Agent\n"
        "KEY_AT_IMPORT = os.environ.get('OPENAI_API_KEY')\n"
        "client = genai.Client()\n" + TOOL + "\n"
        "desk = Agent(name='desk', model='gemini-2.5-flash', instruction='Read orders.', tools=[get_order])\n"
    ),
}


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


def import_program(tmp_path: Path, sdk: str, module: str) -> Path:
    """Write the program and import it; then forget its module, as the separate process of a later
    ``portagent run`` never imported it."""
    (tmp_path / f"{module}.py").write_text(PROGRAMS[sdk], encoding="utf-8")
    out = tmp_path / "desk"
    code, _, stderr = import_cli(f"{tmp_path / module}.py:desk", sdk, out)
    assert code == 0, stderr
    sys.modules.pop(module, None)
    return out


def files_holding(folder: Path, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize("sdk", ["langgraph", "openai", "adk"])
def test_an_imported_program_with_a_top_level_client_runs_on_the_emulator_without_a_key(
    emu, tmp_path, monkeypatch, sdk
):
    for k in KEY_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    module = f"keyless_{sdk}_program"
    out = import_program(tmp_path, sdk, module)
    shim = next(out.glob("portagent_shims_*.py")).read_text(encoding="utf-8")
    assert f"with placeholder_keys():\n    import {module} as _src_{module}\n" in shim

    ours = run_spec(out / "agent.yaml", sdk, TEXT, emu, tmp_path, tag=sdk)
    assert ours.result.status == "completed", ours.result.error
    results = of(ours.events, "tool.result")
    assert results and all(r.ok for r in results), [r.error for r in results]
    assert sys.modules[module].KEY_AT_IMPORT == PLACEHOLDER_KEY  # the client was built with it...
    assert not any(os.environ.get(k) for k in KEY_VARIABLES)  # ...and it is gone after the import
    assert [r.output["key_at_call"] for r in results] == [None]  # the tool ran after it was removed
    assert PLACEHOLDER_KEY not in json.dumps(emu.requests())
    assert files_holding(tmp_path, PLACEHOLDER_KEY) == []  # not in the run folder, trace or workdir
    sys.modules.pop(module, None)


def test_a_key_the_user_set_is_what_the_program_sees_and_keeps(emu, tmp_path, monkeypatch):
    for k in KEY_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own")
    module = "keyed_langgraph_program"
    out = import_program(tmp_path, "langgraph", module)
    ours = run_spec(out / "agent.yaml", "langgraph", TEXT, emu, tmp_path)
    assert ours.result.status == "completed", ours.result.error
    assert all(r.ok for r in of(ours.events, "tool.result"))
    assert sys.modules[module].KEY_AT_IMPORT == "sk-users-own"
    assert os.environ["OPENAI_API_KEY"] == "sk-users-own"
    assert not any(os.environ.get(k) for k in KEY_VARIABLES if k != "OPENAI_API_KEY")
    sys.modules.pop(module, None)


def test_placeholder_keys_sets_only_what_is_unset_and_restores_it(monkeypatch):
    for k in KEY_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own")
    monkeypatch.setenv("GOOGLE_API_KEY", "")  # set but empty: no key, yet the user's setting
    with placeholder_keys():
        assert os.environ["OPENAI_API_KEY"] == "sk-users-own"
        assert os.environ["ANTHROPIC_API_KEY"] == os.environ["GOOGLE_API_KEY"] == PLACEHOLDER_KEY
        os.environ["GEMINI_API_KEY"] = "set-by-the-module"  # e.g. the program's own default
    assert os.environ["OPENAI_API_KEY"] == "sk-users-own"
    assert "ANTHROPIC_API_KEY" not in os.environ
    assert os.environ["GOOGLE_API_KEY"] == ""
    assert os.environ["GEMINI_API_KEY"] == "set-by-the-module"
    with pytest.raises(RuntimeError), placeholder_keys():  # restored when the import raises too
        raise RuntimeError("the module failed")
    assert "ANTHROPIC_API_KEY" not in os.environ
