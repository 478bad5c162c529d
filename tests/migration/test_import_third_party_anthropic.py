"""``portagent import --from anthropic prog.py``: programs in the shapes people write on the anthropic SDK
(tests/migration/data/third_party/anth_*.py) — a tool runner built inside ``main()``, a hand-written
``messages.create`` loop with dict tools dispatched by name, an async runner with helper-built tools —
give a spec ``validate`` accepts and a report naming, with ``file:line``, what could not be read; bad
input gets one message and exit 2."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from _support import run_cli
from _third_party import DATA, import_program, refused_import, report, spec, tools


def imported(tmp_path: Path, target: str, *extra: str) -> Path:
    return import_program(tmp_path, "anthropic", target, *extra)


def refused(tmp_path: Path, target: str, *expected: str) -> None:
    refused_import(tmp_path, "anthropic", target, *expected)


def test_a_tool_runner_built_inside_main_is_read_from_its_call(tmp_path):
    out = imported(tmp_path, "anth_runner_script.py")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-sonnet-4-5" and s["models"]["max_tokens"] == 1024
    assert (
        s["instructions"] == "You are a concise weather assistant.\n\nAlways give temperatures in both units."
    )
    t = tools(out)
    assert set(t) == {"get_weather", "get_time"}
    weather = t["get_weather"]["input_schema"]
    assert weather["required"] == ["location"] and weather["properties"]["unit"]["default"] == "fahrenheit"
    assert weather["properties"]["location"]["description"].startswith("The city and state")
    assert t["get_weather"]["description"] == "Get the current weather in a given location."
    text = report(out)
    assert (
        "ANTHROPIC_MODEL (" in text and "anth_runner_script.py:11)" in text
    )  # the model came from the environment
    assert "anth_runner_script.py:38" in text  # where the agent was read


def test_a_messages_create_loop_with_dict_tools_dispatched_by_name(tmp_path):
    out = imported(tmp_path, "anth_create_loop.py")
    s = spec(out)
    # the follow-up call inside the loop leaves system out: the first call's prompt is the agent's
    assert s["instructions"].startswith("You are a customer support agent for Acme.")
    assert s["models"]["anthropic"] == "claude-3-5-sonnet-20241022"
    t = tools(out)
    # a tool without arguments may leave "properties" out of its schema
    assert set(t) == {"get_customer_info", "get_order_details", "cancel_order", "get_store_hours"}
    assert "handler anth_create_loop:lookup_order: the program's dispatch dict" in report(
        out
    )  # TOOL_FUNCTIONS
    assert t["cancel_order"]["input_schema"]["required"] == ["order_id"]
    assert t["get_customer_info"]["description"].startswith("Retrieves customer information")
    text = report(out)
    assert "'web_search' (type web_search_20250305" in text
    shim_module, _, shim = t["get_order_details"]["handler"].partition(":")
    sys.path.insert(0, str(out))
    try:
        called = getattr(importlib.import_module(shim_module), shim)(order_id="O1")
    finally:
        sys.path.remove(str(out))
    assert called == {"id": "O1", "status": "Shipped"}


def test_an_async_runner_with_helper_built_tools_and_spread_settings(tmp_path):
    out = imported(tmp_path, "anth_async_helpers.py")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-haiku-4-5"
    assert s["models"]["max_tokens"] == 2048 and s["models"]["temperature"] == 0.2
    assert set(tools(out)) == {"search_docs", "open_ticket"}  # returned by build_tools()
    assert tools(out)["open_ticket"]["input_schema"]["required"] == ["title", "priority"]
    assert s["instructions"].startswith("[instructions to write]")
    assert 'system=f"You are {persona}." (' in report(out) and "anth_async_helpers.py:43)" in report(out)


def test_what_a_class_based_loop_computes_at_run_time_is_named_with_its_line(tmp_path):
    out = imported(tmp_path, "anth_class_based.py")
    s = spec(out)
    assert s["budget"]["max_turns"] == 8  # max_iterations
    text = report(out)
    assert 'tools=[t for t in ALL if t.name != "x"] (' in text and "anth_class_based.py:31)" in text
    assert "system=self.system_prompt() (" in text and "anth_class_based.py:30)" in text
    assert s["instructions"].startswith("[instructions to write]")


def test_two_agents_in_one_file_are_refused_until_one_is_chosen(tmp_path):
    refused(
        tmp_path,
        str(DATA / "anth_two_agents.py"),
        "2 agents found",
        "anth_two_agents:triage (",
        "anth_two_agents.py:31); anth_two_agents:billing (",
        "anth_two_agents.py:41)",
    )
    out = imported(tmp_path, "anth_two_agents.py:billing")
    assert spec(out)["models"]["anthropic"] == "claude-sonnet-4-5"
    assert set(tools(out)) == {"refund"} and spec(out)["instructions"] == "Handle refunds."


def test_the_function_holding_the_loop_can_be_named_as_a_module_object(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    out = tmp_path / "out"
    code, _, stderr = run_cli(
        "import", "anth_create_loop:chatbot_interaction", "--from", "anthropic", "--out", str(out)
    )
    assert code == 0, stderr
    assert set(tools(out)) == {"get_customer_info", "get_order_details", "cancel_order", "get_store_hours"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "anth_unreadable_model.py",
            ("anth_unreadable_model.py:10 cannot be read", "MODELS[tier], tier: a parameter"),
        ),
        ("no_agent.py", ("no agent found in", "messages.create")),
    ],
)
def test_no_agent_or_an_unreadable_model_is_one_clear_refusal(tmp_path, target, expected):
    refused(tmp_path, str(DATA / target), *expected)


def test_bad_files_are_one_clear_refusal(tmp_path):
    bad = tmp_path / "broken_prog.py"
    bad.write_text("this is not python\n  {{\n", encoding="utf-8")
    refused(tmp_path, str(bad), "importing module 'broken_prog' failed", "Error")
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n", encoding="utf-8")
    refused(tmp_path, str(notes), "not a Python file")
    refused(tmp_path, str(tmp_path / "missing.py"), "missing.py: no such file")
    folder = tmp_path / "pkg.py"
    folder.mkdir()
    refused(tmp_path, str(folder), "is a folder")
    dashed = tmp_path / "my-prog.py"
    dashed.write_text("x = 1\n", encoding="utf-8")
    refused(tmp_path, str(dashed), "my-prog.py cannot be imported as one")
    shadow = tmp_path / "shadow" / "json.py"
    shadow.parent.mkdir()
    shadow.write_text("x = 1\n", encoding="utf-8")
    refused(tmp_path, str(shadow), "module name 'json' is also", "rename the file")


def test_a_main_block_loop_with_pydantic_schemas_reads_each_tool_on_its_own(tmp_path):
    out = imported(tmp_path, "anth_main_block.py")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-opus-4-1" and s["instructions"] == "You are a stock assistant."
    t = tools(out)
    assert set(t) == {"get_stock_price"}  # its schema from GetStockPrice.model_json_schema()
    assert t["get_stock_price"]["input_schema"]["required"] == ["ticker"]
    text = report(out)
    # the elements that cannot be read are named one by one, with their lines; the others are imported
    assert "tool *[{" in text and "anth_main_block.py:31)" in text
    assert 'tool make_tool("lookup") (' in text and "anth_main_block.py:32)" in text
    assert "tool_choice={'type': 'any'}" in text


def test_an_agent_class_keeping_its_settings_on_self_is_read_through_init(tmp_path):
    out = imported(tmp_path, "anth_agent_class.py")
    s = spec(out)
    # self.model = model (default MODEL), self.system = system, self.tools = tools or TOOLS (ToolParam)
    assert s["models"]["anthropic"] == "claude-3-5-haiku-latest" and s["models"]["max_tokens"] == 1024
    assert s["instructions"] == "You are a careful assistant."
    t = tools(out)
    assert set(t) == {"calculator", "word_count"} and t["calculator"]["input_schema"]["required"] == [
        "expression"
    ]
    text = report(out)
    assert "the parameter model (" in text and "imported as its default 'claude-3-5-haiku-latest'" in text


def test_an_enum_model_a_nested_call_and_a_spread_dict_in_the_call(tmp_path):
    out = imported(tmp_path, "anth_odd_shapes.py:answer")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-haiku-4-5"  # Model.FAST, written as its value
    assert s["models"]["max_tokens"] == 100 and s["models"]["temperature"] == 0.5  # from **{**BASE, ...}
    assert set(tools(out)) == {"lookup"}  # the call is in answer's nested ask()
    text = report(out)
    assert "system=system (" in text and "a parameter of the function" in text


def test_an_import_leaves_sys_path_as_it_was_refused_or_not(tmp_path):
    """The program's folder is on ``sys.path`` only while it is imported and read: left in front, a folder
    holding a ``json.py`` (refused: it shadows the standard library's) broke every later import in the
    process and every process started with its ``sys.path``."""
    from portagent.contracts.errors import UsageError
    from portagent.migration.importing import import_native

    before = sys.path[:]
    shadow = tmp_path / "shadow" / "json.py"
    shadow.parent.mkdir()
    shadow.write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(UsageError, match="rename the file"):
        import_native(str(shadow), "anthropic")
    assert sys.path == before
    program = tmp_path / "prog" / "anth_copy_prog.py"
    program.parent.mkdir()
    program.write_text((DATA / "anth_runner_script.py").read_text(encoding="utf-8"), encoding="utf-8")
    try:
        draft = import_native(str(program), "anthropic")
    finally:
        sys.modules.pop("anth_copy_prog", None)
    assert draft.root.models.get("anthropic") == "claude-sonnet-4-5"
    assert sys.path == before


def _call_shim(out: Path, tool: dict, **args: object) -> object:
    import asyncio

    shim_module, _, shim = tool["handler"].partition(":")
    sys.path.insert(0, str(out))
    try:
        fn = getattr(importlib.import_module(shim_module), shim)
        result = fn(**args)
        return asyncio.run(result) if asyncio.iscoroutine(result) else result
    finally:
        sys.path.remove(str(out))


def test_tools_called_with_the_whole_input_dict_get_a_shim(tmp_path):
    """``TOOL_HANDLERS[block.name](block.input)`` in an ``AsyncAnthropic`` ``while True`` loop, the tools in a
    module of their own: each function takes the input dict as one argument (it was left out: 'takes no
    parameter city'); a shim passes the arguments as that dict."""
    out = imported(tmp_path, "anth_async_loop.py")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-sonnet-4-5-20250929"
    assert s["instructions"] == (
        "You are a travel helper for Globex.\n\nUse the tools for weather and money questions; never guess numbers."
    )
    t = tools(out)
    assert set(t) == {"get_weather", "convert_currency"}
    assert (
        _call_shim(out, t["get_weather"], city="Oslo", unit="fahrenheit") == "18 degrees fahrenheit in Oslo"
    )
    assert _call_shim(out, t["convert_currency"], amount=10, from_currency="EUR", to_currency="USD") == 11.0
    text = report(out)
    assert "the program calls it with the tool_use block's whole input dict as one argument (" in text
    assert "anth_async_loop.py:41)" in text and "cache_control" in text


def test_each_call_site_tells_how_its_tool_is_called(tmp_path):
    """``fn = handlers.get(tool_use.name); fn(tool_use.input)`` (a dict written in the function), a helper
    ``execute_tool(name, args)`` given ``tool_use.input`` calling ``{...}[name](args)``, and
    ``KEYWORD_TOOLS[name](**args)``: two dict-taking tools through shims, one keyword tool as it is."""
    out = imported(tmp_path, "anth_input_dict.py")
    t = tools(out)
    assert set(t) == {"calculator", "word_count", "reverse"}
    assert _call_shim(out, t["reverse"], text="abc") == "cba"  # the function itself, called with keywords
    assert _call_shim(out, t["calculator"], expression="2+3") == "5"
    assert _call_shim(out, t["word_count"], text="a b c") == 3
    text = report(out)
    assert "anth_input_dict.py:70)" in text and "anth_input_dict.py:59)" in text  # the calls that told
    assert "as keywords, as the program does (" in text and "anth_input_dict.py:58)" in text


def test_a_tool_whose_calling_style_cannot_be_known_stays_reported(tmp_path):
    """``asyncio.to_thread(TOOLS[block.name], block.input)`` is a call with the input dict; a function
    reached through ``getattr(module, name)`` shows no call: it is left out, the report says why."""
    out = imported(tmp_path, "anth_unknown_style.py")
    assert set(tools(out)) == {"lookup"}
    text = report(out)
    assert "tool definition 'define' (" in text and "anth_unknown_style.py:31)" in text
    assert "how it is called cannot be known" in text


def test_a_beta_tool_runner_with_tools_from_another_module(tmp_path):
    out = imported(tmp_path, "anth_runner_module.py")
    s = spec(out)
    assert s["models"]["anthropic"] == "claude-sonnet-4-5" and s["instructions"].startswith("[instructions")
    t = tools(out)
    assert set(t) == {"get_weather", "calculate"}
    assert t["get_weather"]["input_schema"]["required"] == ["location"]
    assert "anth_beta_tools_mod:get_weather" in report(out)


def test_an_async_tool_runner_with_a_cached_system_block(tmp_path):
    out = imported(tmp_path, "anth_async_runner.py")
    s = spec(out)
    assert s["instructions"] == "You are a research assistant. Fetch sources before you summarize them."
    assert s["models"]["anthropic"] == "claude-opus-4-1" and s["models"]["max_tokens"] == 4096
    t = tools(out)
    assert set(t) == {"fetch_page", "summarize"}
    assert _call_shim(out, t["summarize"], text="abcdef", max_words=3) == "abc"


def test_a_tools_module_used_through_its_name_is_searched_for_the_dispatch_dict(tmp_path):
    """``import anth_shop_tools`` … ``anth_shop_tools.TOOL_HANDLERS[block.name](block.input)``: the dict is
    found in the program's own module it imports (it was 'no function of the program could be found')."""
    out = imported(tmp_path, "anth_module_attr.py")
    t = tools(out)
    assert set(t) == {"get_weather", "convert_currency"}
    assert _call_shim(out, t["get_weather"], city="Rome") == "18 degrees celsius in Rome"
