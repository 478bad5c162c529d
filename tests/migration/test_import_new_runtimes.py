"""``portagent import --from anthropic|langgraph``: the realistic, well-defined subset (a tool runner's
keyword arguments; a ``create_react_agent`` graph) becomes specs that validate, and a portagent run of
them against the emulator makes the same tool calls as the native program itself; everything else is
refused through the CLI with one message naming what was found, and nothing is written."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
import yaml
from _migration_helpers import DUMMY_KEYS, SCRIPT, import_cli, of, run_spec
from _support import run_cli

from portagent.emulator import load_script, serve
from portagent.runtime.validate import check_paths

TEXT = "Summarise order ORD-7."


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


def report(out) -> str:
    return (out / "import-report.md").read_text(encoding="utf-8")


def calls(events) -> list[tuple[str, dict]]:
    return [(e.tool, e.args) for e in of(events, "tool.call")]


# --- anthropic -------------------------------------------------------------------------------------


def native_anthropic_run(emu, text: str) -> tuple[list[tuple[str, dict]], str]:
    """The source program itself: the SDK's tool runner over AGENT, its own tools run natively."""
    import anthropic
    import native_anthropic as native

    client = anthropic.Anthropic(base_url=emu.base_url, api_key=DUMMY_KEYS["anthropic"])
    seen: list[tuple[str, dict]] = []
    last = None
    # thread=False: the emulator holds no server-side thread, so every request carries the conversation
    runner = client.beta.messages.tool_runner(
        **native.AGENT, messages=[{"role": "user", "content": text}], thread=False
    )
    for message in runner:
        seen += [(b.name, b.input) for b in message.content if b.type == "tool_use"]
        last = message
    client.close()
    return seen, "".join(b.text for b in last.content if b.type == "text")


def test_an_anthropic_tool_runner_imports_and_runs_like_the_source(emu, tmp_path):
    import native_anthropic as native

    out = tmp_path / "desk"
    code, stdout, stderr = import_cli("native_anthropic:AGENT", "anthropic", out, "--name", "shop_desk")
    assert code == 0, stderr
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))  # what `portagent validate` says
    spec = yaml.safe_load((out / "agent.yaml").read_text(encoding="utf-8"))
    assert spec["instructions"] == native.SYSTEM and spec["models"]["anthropic"] == native.MODEL
    assert spec["output_schema"] == native.SUMMARY and spec["models"]["max_tokens"] == 1024
    tools = yaml.safe_load((out / "tools.yaml").read_text(encoding="utf-8"))
    docs = tools if isinstance(tools, list) else tools.get("tools", tools)
    by_name = {t["name"]: t for t in docs}
    assert by_name["get_order"]["input_schema"] == native.get_order.input_schema  # the SDK's own schema
    shim = (out / (by_name["get_order"]["handler"].partition(":")[0] + ".py")).read_text(encoding="utf-8")
    # the original tool, unchanged, called through the SDK's own entry point (its arguments converted)
    assert "call_anthropic_tool(_src_native_anthropic.get_order, **args)" in shim
    text = report(out)
    assert "web_search" in text and "tool_choice" in text  # listed, not dropped

    source_calls, source_final = native_anthropic_run(emu, TEXT)
    ours = run_spec(out / "agent.yaml", "anthropic", TEXT, emu, tmp_path)
    assert ours.result.status == "completed" and ours.result.output_valid, ours.result.error
    assert calls(ours.events) == source_calls == [("get_order", {"order_id": "ORD-7"})]
    assert ours.result.final_output == json.loads(source_final)
    assert of(ours.events, "tool.result")[0].ok  # the imported handler (the original function) ran


def test_async_tools_text_results_and_tool_errors_convert(tmp_path):
    """An @beta_async_tool: the shim awaits the original; plain text stays text; ToolError is a handler error."""
    import native_anthropic as native

    from portagent.contracts.bundle import load_agent
    from portagent.tools.handlers import resolve
    from portagent.tools.observations import ToolFailure

    out = tmp_path / "tracker"
    code, _, stderr = import_cli("native_anthropic:ASYNC_AGENT", "anthropic", out, "--name", "tracker")
    assert code == 0, stderr
    bundle = load_agent(out / "agent.yaml")
    assert bundle.agents["tracker"].spec.instructions == native.SYSTEM  # text blocks joined
    tool = bundle.all_tools()["track_parcel"]
    assert tool.input_schema == native.track_parcel.input_schema
    sys.path.insert(0, str(out))
    try:
        fn = resolve(tool.handler).fn
        assert asyncio.run(fn(order_id="ORD-7")) == "ORD-7 is delivered"
        with pytest.raises(ToolFailure, match="no order ORD-9"):
            asyncio.run(fn(order_id="ORD-9"))
    finally:
        sys.path.remove(str(out))


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "native_anthropic:client_factory",
            "is a builtins.str; --from anthropic reads the keyword arguments",
        ),
        ("native_anthropic:SUMMARY", "is a dict with additionalProperties, properties, required, type"),
        ("native_anthropic:get_order", "BetaFunctionTool; --from anthropic reads"),
    ],
)
def test_anything_else_is_refused_for_anthropic(tmp_path, target, expected):
    out = tmp_path / "x"
    code, _, err = run_cli("import", target, "--from", "anthropic", "--out", str(out))
    assert code == 2 and expected in err and "Traceback" not in err, err
    assert not out.exists()


# --- langgraph -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def native_lg(emu):
    import os

    before = os.environ.get("SHOP_LLM_BASE_URL")
    os.environ["SHOP_LLM_BASE_URL"] = emu.openai_base_url
    try:
        import importlib
        import sys

        # imported afresh: another test of this worker may have imported it without SHOP_LLM_BASE_URL, and
        # its model would then call the real API (test_sdk_examples.py imports it too)
        sys.modules.pop("native_langgraph", None)
        yield importlib.import_module("native_langgraph")
    finally:
        if before is None:
            os.environ.pop("SHOP_LLM_BASE_URL", None)
        else:
            os.environ["SHOP_LLM_BASE_URL"] = before


def test_a_create_react_agent_graph_imports_and_runs_like_the_source(emu, native_lg, tmp_path):
    out = tmp_path / "desk"
    code, _, stderr = import_cli("native_langgraph:desk", "langgraph", out)
    assert code == 0, stderr
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))
    spec = yaml.safe_load((out / "agent.yaml").read_text(encoding="utf-8"))
    assert spec["name"] == "shop_desk" and spec["instructions"].startswith("You are the shop's front desk.")
    assert spec["models"]["langgraph"] == "openai:gpt-4.1-mini" and spec["models"]["openai"] == "gpt-4.1-mini"
    assert spec["models"]["temperature"] == 0.2 and spec["models"]["openai_api"] == "chat_completions"
    assert spec["tools"] == ["get_order", "search_faq"]
    tools = yaml.safe_load((out / "tools.yaml").read_text(encoding="utf-8"))
    docs = tools if isinstance(tools, list) else tools.get("tools", tools)
    shim = (out / (docs[0]["handler"].partition(":")[0] + ".py")).read_text(encoding="utf-8")
    # the original tools, called as the graph's tool node calls them (ainvoke: args_schema converts)
    assert "call_langchain_tool(_src_native_langgraph.get_order, args)" in shim
    assert "call_langchain_tool(_src_native_langgraph.search_faq, args)" in shim

    async def source():
        state = await native_lg.desk.ainvoke({"messages": [("user", TEXT)]})
        return [(c["name"], c["args"]) for m in state["messages"] for c in getattr(m, "tool_calls", [])]

    source_calls = asyncio.run(source())
    ours = run_spec(out / "agent.yaml", "langgraph", TEXT, emu, tmp_path)
    assert ours.result.status == "completed", ours.result.error
    assert calls(ours.events) == source_calls == [("get_order", {"order_id": "ORD-7"})]
    assert of(ours.events, "tool.result")[0].ok


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("native_langgraph:custom", "is a compiled graph with nodes shout; --from langgraph reads"),
        ("native_langgraph:model", "ChatOpenAI; --from langgraph reads a compiled graph made by"),
        ("native_anthropic:AGENT", "is a builtins.dict; --from langgraph reads"),
    ],
)
def test_anything_else_is_refused_for_langgraph(native_lg, tmp_path, target, expected):
    out = tmp_path / "x"
    code, _, err = run_cli("import", target, "--from", "langgraph", "--out", str(out))
    assert code == 2 and expected in err and "Traceback" not in err, err
    assert not out.exists()


# --- tool shapes real programs have ------------------------------------------------------------------


def _handlers(out):
    """The imported tools' handlers, resolved as a run resolves them (name -> callable)."""
    from portagent.contracts.bundle import load_agent
    from portagent.tools.handlers import resolve

    bundle = load_agent(out / "agent.yaml")
    return {name: resolve(spec.handler).fn for name, spec in bundle.all_tools().items()}


@pytest.mark.parametrize("sdk", ["anthropic", "langgraph"])
def test_tool_names_a_module_cannot_hold_still_get_their_own_function(tmp_path, sdk):
    """A keyword (`import`), names differing only by `-`/`_` and a name the shim module imports: the
    generated module compiles and each tool calls its own function (the spec validates too)."""
    import tricky_tools as native

    out = tmp_path / sdk
    code, _, stderr = import_cli(
        "tricky_tools:AGENT" if sdk == "anthropic" else "tricky_tools:graph", sdk, out
    )
    assert code == 0, stderr
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))
    sys.path.insert(0, str(out))
    try:
        fns = _handlers(out)
        if sdk == "anthropic":
            assert asyncio.run(fns["import"](path="a.csv")) == "imported a.csv"
            assert asyncio.run(fns["get-order"](order_id="O1")) == "v1 O1"
            assert asyncio.run(fns["get_order"](order_id="O1")) == "v2 O1"
            assert asyncio.run(fns["call_original"](x=1)) == native.shadowing.call({"x": 1}) == 2
        else:
            assert asyncio.run(fns["import"](path="a.csv")) == "imported a.csv"
            assert asyncio.run(fns["get-forecast"](city="Oslo")) == "v1 Oslo"
            assert asyncio.run(fns["get_forecast"](city="Oslo")) == "v2 Oslo"
    finally:
        sys.path.remove(str(out))


@pytest.mark.parametrize("sdk", ["anthropic", "langgraph"])
def test_arguments_are_converted_as_the_sdk_converts_them(tmp_path, sdk):
    """A pydantic-model and a date parameter get a model and a date, as the SDK's own call gives them
    (the gateway hands handlers JSON values); a LangChain parameter named `context` is an argument."""
    import tricky_tools as native

    out = tmp_path / sdk
    code, _, stderr = import_cli(
        "tricky_tools:AGENT" if sdk == "anthropic" else "tricky_tools:graph", sdk, out
    )
    assert code == 0, stderr
    args = {"ticket": {"title": "refund", "priority": 1}, "due": "2026-12-04"}
    sys.path.insert(0, str(out))
    try:
        fns = _handlers(out)
        if sdk == "anthropic":
            expected = native.open_ticket.call(args)
            assert asyncio.run(fns["open_ticket"](**args)) == expected
        else:
            expected = native.register.invoke(args)
            assert asyncio.run(fns["register"](**args)) == expected
            grade = {"question": "Oslo weather?", "context": "It rains in Oslo."}
            assert asyncio.run(fns["grade_answer"](**grade)) == native.grade_answer.invoke(grade)
        assert expected == {"title": "REFUND", "priority": 1, "weekday": 5}
    finally:
        sys.path.remove(str(out))


def test_a_tool_with_graph_injected_parameters_is_left_out_and_reported(tmp_path):
    """`user_id: Annotated[str, InjectedToolArg]` is never sent by the model: the tool cannot run as a
    portable tool, so it is not imported, and the report names the parameter."""
    out = tmp_path / "lg"
    code, _, stderr = import_cli("tricky_tools:graph", "langgraph", out)
    assert code == 0, stderr
    assert "escalate" not in _handlers(out)
    text = report(out)
    assert "escalate" in text and "user_id" in text and "injected by the graph" in text


def test_anthropic_settings_beside_the_tools_are_imported_or_reported(tmp_path):
    """output_format (a pydantic class) becomes the output_schema the SDK sends for it; a tool option
    (strict) and a plain function in tools are reported; an empty system block adds nothing."""
    import tricky_tools as native
    from anthropic.lib._parse._transform import to_json_output_format

    out = tmp_path / "settings"
    code, stdout, stderr = run_cli(
        "import", "tricky_tools:SETTINGS", "--from", "anthropic", "--out", str(out)
    )
    assert code == 0, stderr
    spec = yaml.safe_load((out / "agent.yaml").read_text(encoding="utf-8"))
    assert spec["output_schema"] == to_json_output_format(native.Verdict)["schema"]
    assert spec["instructions"] == "You refund orders."
    text = report(out)
    assert "strict=True on tool 'refund'" in text
    lam = next(line for line in text.splitlines() if "'<lambda>'" in line)
    assert "tool function '<lambda>', " in lam and "tricky_tools.py:" in lam  # named, with where it is
    assert "next: portagent validate" in stdout


@pytest.mark.parametrize(
    ("graph", "expect"),
    [
        ("SYSTEM_MESSAGE_GRAPH", "instructions: You are Tier-1 support."),
        ("DYNAMIC_PROMPT_GRAPH", "prompt of agent settings (_dynamic_prompt, "),
        ("PAUSED_GRAPH", "interrupt_before=['tools'] of agent settings"),
    ],
)
def test_langgraph_settings_beside_the_tools_are_imported_or_reported(tmp_path, graph, expect):
    """A SystemMessage prompt is read; a prompt function is reported as computed at run time (not as no
    prompt); the model's other settings, a dict tool, a checkpointer and a pause before the tool node
    are reported — the pause as requires_approval on every tool."""
    out = tmp_path / graph.lower()
    code, _, stderr = run_cli("import", f"tricky_tools:{graph}", "--from", "langgraph", "--out", str(out))
    assert code == 0, stderr
    text = report(out) + (out / "agent.yaml").read_text(encoding="utf-8")
    assert expect in text
    assert "ChatOpenAI.top_p=0.5" in text and "ChatOpenAI.seed=7" in text
    assert "tool definition 'noop' (type function)" in text
    if graph == "PAUSED_GRAPH":
        tools = yaml.safe_load((out / "tools.yaml").read_text(encoding="utf-8"))
        docs = tools if isinstance(tools, list) else tools.get("tools", tools)
        assert [t.get("requires_approval") for t in docs] == [True]
        assert "checkpointer InMemorySaver" in text


def test_an_imported_folder_has_the_permissions_of_any_new_folder(tmp_path):
    """The written folder is renamed into place from a staging folder: it is created like any folder
    (0777 less the umask), not 0700 as a temporary folder is."""
    import os

    out = tmp_path / "perm"
    code, _, stderr = run_cli("import", "native_anthropic:AGENT", "--from", "anthropic", "--out", str(out))
    assert code == 0, stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    assert os.stat(out).st_mode & 0o777 == os.stat(plain).st_mode & 0o777


def test_port_check_follows_the_generated_handler_module_from_any_folder(tmp_path, monkeypatch):
    """The handler module import writes puts the program's folder on sys.path itself: port-check finds
    the LangChain/LangGraph imports behind it from any working folder."""
    out = tmp_path / "lg"
    code, _, stderr = run_cli("import", "tricky_tools:graph", "--from", "langgraph", "--out", str(out))
    assert code == 0, stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, stdout, stderr = run_cli("port-check", str(out / "agent.yaml"), "--to", "openai")
    assert "tricky_tools imports langgraph" in stdout + stderr or "imports langchain" in stdout + stderr, (
        stdout
    )
