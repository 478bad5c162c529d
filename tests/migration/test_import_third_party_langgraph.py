"""``portagent import --from langgraph prog.py``: programs in the shapes people write on LangGraph
(tests/migration/data/third_party/lg_*.py) — ``create_react_agent`` with ``Annotated`` / ``args_schema`` /
``StructuredTool`` tools and an approval pause, a hand-built ``StateGraph`` with a ``ToolNode``, a
supervisor whose sub-agents are tools, a ``response_format`` — give a spec ``validate`` accepts and a
report naming, with ``file:line``, what could not be read; bad input gets one message and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import run_cli
from _third_party import DATA, import_program, refused_import, report, spec, tools


def imported(tmp_path: Path, target: str, *extra: str) -> Path:
    return import_program(tmp_path, "langgraph", target, *extra)


def refused(tmp_path: Path, target: str, *expected: str) -> None:
    refused_import(tmp_path, "langgraph", target, *expected)


def test_a_react_agent_file_is_found_and_read_without_an_api_key(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # ChatOpenAI() at the top level needs one
    out = imported(tmp_path, "lg_react_tools.py")
    s = spec(out)
    assert s["name"] == "travel_agent" and s["instructions"].startswith("You are a travel assistant.")
    assert s["models"]["langgraph"] == "openai:gpt-4o-mini" and s["models"]["temperature"] == 0
    t = tools(out)
    assert set(t) == {"search_flights", "book_flight", "convert_currency"}
    flights = t["search_flights"]["input_schema"]
    assert flights["required"] == ["origin", "destination"]
    assert flights["properties"]["origin"]["description"] == "IATA code of the departure airport"
    booking = t["book_flight"]["input_schema"]  # the args_schema model, not the function's signature
    assert booking["properties"]["seat_class"]["enum"] == ["economy", "business"]
    assert booking["properties"]["passengers"]["maximum"] == 9 and booking["required"] == [
        "flight_id",
        "passengers",
    ]
    assert all(x.get("requires_approval") for x in t.values())  # interrupt_before=["tools"]
    assert "openai_api_base" in report(out) and "checkpointer InMemorySaver" in report(out)


def test_a_hand_built_state_graph_with_a_tool_node_is_read(tmp_path):
    out = imported(tmp_path, "lg_stategraph.py")
    s = spec(out)
    assert s["instructions"] == "You are a math tutor. Use the calculator for any arithmetic."
    assert s["models"]["langgraph"] == "anthropic:claude-sonnet-4-5" and s["models"]["max_tokens"] == 2048
    t = tools(out)
    assert set(t) == {"multiply", "add"} and all(x.get("requires_approval") for x in t.values())
    # @tool without parse_docstring: the model is sent the whole docstring, and untitled arguments
    assert t["multiply"]["description"].startswith("Multiply two numbers.")
    assert t["multiply"]["input_schema"]["required"] == ["a", "b"]
    text = report(out)
    assert "node 'log' of agent graph (" in text and "lg_stategraph.py:39)" in text


def test_the_same_graph_named_as_module_object(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))
    out = tmp_path / "out"
    code, _, stderr = run_cli("import", "lg_stategraph:graph", "--from", "langgraph", "--out", str(out))
    assert code == 0, stderr
    assert set(tools(out)) == {"multiply", "add"}


def test_a_supervisor_is_chosen_over_its_sub_agents_and_their_tools_are_flagged(tmp_path):
    out = imported(tmp_path, "lg_supervisor.py")
    assert spec(out)["name"] == "supervisor"
    assert set(tools(out)) == {"ask_researcher", "ask_mathematician"}  # send_report calls interrupt()
    text = report(out)
    assert "runs the LangGraph graph(s) research_agent (a sub-agent wrapped as a tool)" in text
    assert "lg_supervisor:research_agent" in text
    assert "tool 'send_report' (" in text and "interrupt()" in text


def test_response_format_becomes_the_output_schema(tmp_path):
    out = imported(tmp_path, "lg_response_format.py")
    s = spec(out)
    assert s["models"]["langgraph"] == "google_genai:gemini-2.5-flash"
    assert set(s["output_schema"]["properties"]) == {"city", "temperature_c", "conditions"}
    assert s["output_schema"]["required"] == ["city", "temperature_c", "conditions"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "lg_two_graphs.py",
            ("2 agent graphs found", "lg_two_graphs:echo_agent", "lg_two_graphs:shout_agent"),
        ),
        ("lg_factory.py", ("no agent found in", "it is built inside build_agent (", "lg_factory.py:14)")),
        ("no_agent.py", ("no agent found in",)),
    ],
)
def test_no_graph_or_two_without_a_choice_is_one_clear_refusal(tmp_path, target, expected):
    refused(tmp_path, str(DATA / target), *expected)


def test_a_chosen_graph_of_two_is_read(tmp_path):
    out = imported(tmp_path, "lg_two_graphs.py:shout_agent")
    assert spec(out)["instructions"] == "Shout."


def test_a_prompt_template_chain_in_an_async_node_is_read(tmp_path):
    out = imported(tmp_path, "lg_prompt_chain.py")
    s = spec(out)
    assert s["instructions"] == "You are a librarian. Search the catalog before answering."
    assert s["models"]["langgraph"] == "openai:gpt-4.1" and s["models"]["temperature"] == 0.1
    assert set(tools(out)) == {"search_catalog"}  # the ToolNode is named "action"
    assert tools(out)["search_catalog"]["input_schema"]["required"] == ["title"]
    text = report(out)
    assert "routing from node 'agent' (should_continue, " in text and "lg_prompt_chain.py:32)" in text


def test_plain_functions_given_as_tools_are_imported_and_callable(tmp_path):
    import asyncio
    import importlib
    import sys

    out = imported(tmp_path, "lg_plain_functions.py")
    assert spec(out)["instructions"] == "You are a helpful assistant"
    t = tools(out)
    assert set(t) == {"get_weather", "get_population"}
    assert t["get_population"]["input_schema"]["required"] == ["city"]
    shim_module, _, shim = t["get_population"]["handler"].partition(":")
    sys.path.insert(0, str(out))
    try:
        called = asyncio.run(getattr(importlib.import_module(shim_module), shim)(city="Paris"))
    finally:
        sys.path.remove(str(out))
    assert called == 1000


def test_a_human_review_node_that_interrupts_before_the_tools_becomes_approval(tmp_path):
    out = imported(tmp_path, "lg_human_review.py")
    s = spec(out)
    assert s["instructions"] == "You manage the user's calendar. Always confirm the time zone."
    t = tools(out)
    assert set(t) == {"create_event"} and t["create_event"]["requires_approval"] is True
    text = report(out)
    assert "node 'human_review' of agent graph (human_review, " in text
    assert "imported as requires_approval: true on every tool" in text


def test_a_model_node_that_is_an_object_is_read_from_its_attributes(tmp_path, monkeypatch):
    """``add_node("agent", Agent(tools))``: the tool-bound model and the prompt are on ``self``, the code is
    ``Agent.__call__`` — read as a node function is (it was refused: 'names no chat model')."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = imported(tmp_path, "lg_class_node.py")
    s = spec(out)
    assert s["instructions"] == "You are a financial research assistant. Cite your sources."  # self.system
    assert s["models"]["langgraph"] == "openai:gpt-4o" and s["models"]["temperature"] == 0
    assert set(tools(out)) == {"search_web", "get_stock_price"}  # from lg_shared_tools.py
    text = report(out)
    assert "model node 'agent' (Agent.__call__, " in text and "lg_class_node.py:23)" in text
    # the MessagesState subclass's own field and the checkpointer are named, not dropped silently
    assert "state fields summary of agent graph (State, " in text and "lg_class_node.py:14)" in text
    assert "checkpointer InMemorySaver" in text


def test_a_model_node_that_is_a_bound_method_is_read_from_its_object(tmp_path):
    """``add_node("assistant", assistant.call_model)`` with ``self.chain = self.prompt | model.bind_tools``:
    the class's prompt template and the object's chain are read; the pause before the tools is approval."""
    out = imported(tmp_path, "lg_bound_method.py")
    s = spec(out)
    assert s["instructions"] == "You are a hotel booking assistant. Confirm before cancelling anything."
    assert (
        s["models"]["langgraph"] == "anthropic:claude-3-5-haiku-latest" and s["models"]["temperature"] == 0.3
    )
    t = tools(out)
    assert set(t) == {"lookup_booking", "cancel_booking"} and all(x["requires_approval"] for x in t.values())
    assert "model node 'assistant' (HotelAssistant.call_model, " in report(out)


def test_a_partial_node_and_a_chain_node_are_read(tmp_path):
    """``functools.partial(agent_node, llm=..., system=...)``: the fixed arguments are the node's model and
    prompt; a ``prompt | model`` chain given as the node itself is read as a chain a node calls."""
    refused(tmp_path, str(DATA / "lg_partial_chain.py"), "2 agent graphs found")
    out = imported(tmp_path, "lg_partial_chain.py:graph")
    assert spec(out)["instructions"] == "You ping." and spec(out)["models"]["openai"] == "gpt-4o-mini"
    chain = import_program(tmp_path / "chain", "langgraph", "lg_partial_chain.py:chain_graph")
    assert spec(chain)["instructions"] == "You are a network bot." and set(tools(chain)) == {"ping"}


def test_a_prompt_function_with_a_fixed_system_message_is_read(tmp_path):
    """``create_react_agent(prompt=fn)`` where ``fn`` puts ``SystemMessage(content=SYSTEM_PROMPT)`` in front:
    read as a model node's prompt is (it was a placeholder: 'computed at run time'); the custom state's
    field, the checkpointer and the pause before the tools are reported."""
    out = imported(tmp_path, "lg_react_prompt_fn.py")
    s = spec(out)
    assert s["name"] == "markets_analyst"
    assert s["instructions"] == "You are a markets analyst. Check the latest price before giving an opinion."
    t = tools(out)
    assert set(t) == {"search_web", "get_stock_price"} and all(x["requires_approval"] for x in t.values())
    text = report(out)
    assert "the prompt= function prompt puts in front of the messages (" in text
    assert "state fields user_name of agent markets_analyst (CustomState, " in text


def test_a_prompt_function_computing_its_text_per_run_stays_a_placeholder(tmp_path):
    out = imported(tmp_path, "lg_react_personal_prompt.py")
    assert spec(out)["instructions"].startswith("[instructions to write]")
    text = report(out)
    assert "prompt of agent agent (prompt, " in text and "lg_react_personal_prompt.py:15)" in text
    assert "builds its system message at run time" in text


def test_a_string_model_without_langchain_is_one_clear_refusal(tmp_path):
    """``create_react_agent(model="openai:gpt-4o")`` needs ``langchain``'s ``init_chat_model``, which is
    not installed here: the program cannot be imported, said in one line."""
    import importlib.util

    if importlib.util.find_spec("langchain") is not None:
        pytest.skip("langchain is installed: the string model is built and read like any other")
    refused(
        tmp_path, str(DATA / "lg_string_model.py"), "importing module 'lg_string_model' failed", "langchain"
    )


def test_a_prompt_template_given_as_prompt_is_read(tmp_path):
    """``prompt=ChatPromptTemplate.from_messages([("system", TEXT), ("placeholder", "{messages}")])``: its
    fixed system text (it was a placeholder: 'computed at run time')."""
    out = imported(tmp_path, "lg_template_prompt.py")
    assert spec(out)["instructions"] == "You are a network bot."
    assert "read from the ChatPromptTemplate given as prompt=" in report(out)
