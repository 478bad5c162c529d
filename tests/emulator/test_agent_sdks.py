"""The three agent SDKs run real conversations against the emulator, and what each does with a
faulty model turn is pinned (malformed tool-call JSON, a call to a tool the agent lacks).

These are live runs against the emulator on purpose, not cassette replays: they prove the emulator
speaks each SDK's wire protocol well enough to drive its real agent loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _emulator_helpers import (
    DUMMY_ANTHROPIC_KEY,
    DUMMY_GOOGLE_KEY,
    DUMMY_OPENAI_KEY,
    WEATHER,
    WEATHER_TOOL_SCHEMA,
    emulator,
    weather_with_fault,
)

from portagent.emulator import RunningEmulator

Q = "What's the weather in Paris?"

REFUND: dict[str, Any] = {
    "kind": "emulator-script",
    "schema_version": 1,
    "conversations": [
        {
            "name": "refund",
            "match": {"first_user": "I want a refund"},
            "turns": [
                {"handoff": {"agent": "billing", "input": "Process a refund request"}},
                {"text": "Billing: refund issued."},
            ],
        },
        # Claude's sub-agent (and an agent used as a tool) starts a conversation of its own,
        # keyed by the text it is given.
        {
            "name": "billing-sub",
            "match": {"first_user": "Process a refund request"},
            "turns": [{"text": "Refund processed by billing."}],
        },
    ],
}


# -- openai-agents -------------------------------------------------------------------------------


def _openai_agents() -> Any:
    agents = pytest.importorskip("agents")
    agents.set_trace_processors([])  # nothing may be exported to api.openai.com
    agents.set_tracing_disabled(True)
    return agents


def _openai_agent(emu: RunningEmulator, api: str, calls: list[str], **kw: Any) -> Any:
    agents = _openai_agents()
    from openai import AsyncOpenAI

    async def invoke(ctx: Any, args_json: str) -> str:
        calls.append(args_json)
        args = json.loads(args_json)
        return json.dumps({"forecast": f"sunny in {args['city']}"})

    client = AsyncOpenAI(base_url=emu.openai_base_url, api_key=DUMMY_OPENAI_KEY, max_retries=0)
    model = (
        agents.OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client)
        if api == "responses"
        else agents.OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client)
    )
    tool = agents.FunctionTool(
        name="get_weather",
        description="Get the weather for a city",
        params_json_schema=WEATHER_TOOL_SCHEMA,
        on_invoke_tool=invoke,
    )
    return agents.Agent(
        name="weather",
        instructions="Answer weather questions.",
        model=model,
        tools=[tool],
        model_settings=agents.ModelSettings(include_usage=True),
        **kw,
    )


async def _run_openai(agent: Any, prompt: str, streamed: bool) -> Any:
    from agents import Runner

    if streamed:
        result = Runner.run_streamed(agent, prompt)
        async for _ in result.stream_events():
            pass
        return result
    return await Runner.run(agent, prompt)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["responses", "chat"])
def test_openai_agents_two_turn_tool_conversation(api: str, streamed: bool) -> None:
    calls: list[str] = []
    with emulator(WEATHER) as emu:
        result = asyncio.run(_run_openai(_openai_agent(emu, api, calls), Q, streamed))
        log = emu.requests()
    assert result.final_output == "FINAL: sunny in Paris"
    assert calls == ['{"city":"Paris"}']
    usage = result.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (2, 250, 15)
    assert [r["cursor"] for r in log] == [0, 1] and all(r["status"] == 200 for r in log)
    first, second = log[0]["body"], log[1]["body"]
    assert log[0]["headers"]["authorization"] == "Bearer <masked>"
    if api == "responses":
        assert first["instructions"] == "Answer weather questions."
        assert [t["name"] for t in first["tools"]] == ["get_weather"]
        assert second["input"][-1]["output"] == '{"forecast": "sunny in Paris"}'
    else:
        assert first["messages"][0] == {"role": "system", "content": "Answer weather questions."}
        assert second["messages"][-1]["role"] == "tool"


def test_openai_agents_pinned_fault_behaviour() -> None:
    """Malformed argument JSON reaches ``FunctionTool.on_invoke_tool`` unchanged (openai-agents does
    not parse it for a plain FunctionTool); a call to an undeclared tool ends the run with
    ``ModelBehaviorError``."""
    agents = _openai_agents()
    raw: list[str] = []

    async def invoke(ctx: Any, args_json: str) -> str:
        raw.append(args_json)
        return "sunny"

    with emulator(weather_with_fault({"type": "malformed_arguments"})) as emu:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=emu.openai_base_url, api_key=DUMMY_OPENAI_KEY, max_retries=0)
        tool = agents.FunctionTool(
            name="get_weather", description="w", params_json_schema=WEATHER_TOOL_SCHEMA, on_invoke_tool=invoke
        )
        agent = agents.Agent(
            name="weather",
            instructions="x",
            tools=[tool],
            model=agents.OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client),
        )
        result = asyncio.run(agents.Runner.run(agent, Q))
    assert raw == ['{"city":']
    # "sunny" has no .forecast: the script's fallback alternative says the whole result
    assert result.final_output == "FINAL: sunny"
    with emulator(weather_with_fault({"type": "unknown_tool", "name": "delete_everything"})) as emu:
        calls: list[str] = []
        with pytest.raises(agents.exceptions.ModelBehaviorError, match="Tool delete_everything not found"):
            asyncio.run(_run_openai(_openai_agent(emu, "responses", calls), Q, False))
        assert calls == []


def test_openai_agents_handoff_and_agent_as_tool() -> None:
    agents = _openai_agents()
    from openai import AsyncOpenAI

    with emulator(REFUND) as emu:
        client = AsyncOpenAI(base_url=emu.openai_base_url, api_key=DUMMY_OPENAI_KEY, max_retries=0)
        model = agents.OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client)
        billing = agents.Agent(name="billing", instructions="Billing.", model=model)
        triage = agents.Agent(name="triage", instructions="Triage.", model=model, handoffs=[billing])
        result = asyncio.run(agents.Runner.run(triage, "I want a refund"))
        assert (result.last_agent.name, result.final_output) == ("billing", "Billing: refund issued.")
        log = emu.requests()
        assert [t["name"] for t in log[0]["body"]["tools"]] == ["transfer_to_billing"]
        assert log[0]["reply"]["tool_calls"][0]["name"] == "transfer_to_billing"
        assert [r["cursor"] for r in log] == [0, 1]


# -- google-adk ----------------------------------------------------------------------------------


def _adk_run(
    emu: RunningEmulator, prompt: str, *, streaming: bool, agent: Any = None, calls: list[Any] | None = None
) -> list[Any]:
    pytest.importorskip("google.adk")
    os.environ.setdefault("GOOGLE_API_KEY", DUMMY_GOOGLE_KEY)
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types

    class WeatherTool(BaseTool):
        def __init__(self) -> None:
            super().__init__(name="get_weather", description="Get the weather for a city")

        def _get_declaration(self) -> types.FunctionDeclaration:
            return types.FunctionDeclaration(
                name=self.name, description=self.description, parameters_json_schema=WEATHER_TOOL_SCHEMA
            )

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            if calls is not None:
                calls.append(args)
            return {"forecast": f"sunny in {args['city']}"}

    if agent is None:
        agent = LlmAgent(
            name="weather_agent",
            model=Gemini(model="gemini-2.5-flash", base_url=emu.gemini_base_url),
            instruction="Answer weather questions.",
            tools=[WeatherTool()],
        )

    async def run() -> list[Any]:
        sessions = InMemorySessionService()
        runner = Runner(app_name="emu", agent=agent, session_service=sessions)
        session = await sessions.create_session(app_name="emu", user_id="u")
        events = []
        mode = StreamingMode.SSE if streaming else StreamingMode.NONE
        try:
            async for ev in runner.run_async(
                user_id="u",
                session_id=session.id,
                new_message=types.Content(role="user", parts=[types.Part(text=prompt)]),
                run_config=RunConfig(streaming_mode=mode),
            ):
                if not ev.partial:  # SSE mode repeats partial events (SDK_NOTES §6)
                    events.append(ev)
        finally:
            await runner.close()
        return events

    return asyncio.run(run())


def _final_text(events: list[Any]) -> str:
    finals = [e for e in events if e.is_final_response() and e.content and e.content.parts]
    return "".join(p.text or "" for p in finals[-1].content.parts)


@pytest.mark.parametrize("streaming", [False, True], ids=["generateContent", "sse"])
def test_adk_two_turn_tool_conversation(streaming: bool) -> None:
    calls: list[Any] = []
    with emulator(WEATHER) as emu:
        events = _adk_run(emu, Q, streaming=streaming, calls=calls)
        log = emu.requests()
    assert _final_text(events) == "FINAL: sunny in Paris"
    assert calls == [{"city": "Paris"}]
    method = "streamGenerateContent" if streaming else "generateContent"
    assert [(r["path"], r["cursor"]) for r in log] == [
        (f"/v1beta/models/gemini-2.5-flash:{method}", 0),
        (f"/v1beta/models/gemini-2.5-flash:{method}", 1),
    ]
    assert log[0]["query"] == ({"alt": "sse"} if streaming else {})
    assert log[0]["headers"]["x-goog-api-key"] == "<masked>"
    decl = log[0]["body"]["tools"][0]["functionDeclarations"][0]
    assert decl["name"] == "get_weather" and decl["parameters_json_schema"] == WEATHER_TOOL_SCHEMA
    assert log[1]["body"]["contents"][-1]["parts"][0]["functionResponse"]["response"] == {
        "forecast": "sunny in Paris"
    }
    usage = [e.usage_metadata.prompt_token_count for e in events if e.usage_metadata]
    assert usage[0] == 100 and usage[-1] == 150


def test_adk_pinned_fault_behaviour() -> None:
    """Gemini arguments are an object, so the malformed-JSON fault sends a string there: google-genai
    rejects the response while parsing it (pydantic ValidationError, re-raised by the ADK runner) and
    the tool never runs. A call to an undeclared tool is answered by ADK itself with an error
    ``functionResponse`` and the run goes on."""
    from pydantic import ValidationError

    calls: list[Any] = []
    with (
        emulator(weather_with_fault({"type": "malformed_arguments"})) as emu,
        pytest.raises(ValidationError, match=r"functionCall\.args"),
    ):
        _adk_run(emu, Q, streaming=False, calls=calls)
    assert calls == []
    with emulator(weather_with_fault({"type": "unknown_tool", "name": "delete_everything"})) as emu:
        events = _adk_run(emu, Q, streaming=False, calls=calls)
        log = emu.requests()
    responses = [r.response for e in events for r in e.get_function_responses()]
    assert "no tool with that name is available" in responses[0]["error"]
    assert calls == [] and len(log) == 2
    assert _final_text(events).startswith("FINAL: ")


def test_adk_transfer_to_agent() -> None:
    pytest.importorskip("google.adk")
    from google.adk.agents import LlmAgent
    from google.adk.models import Gemini

    with emulator(REFUND) as emu:
        model = lambda: Gemini(model="gemini-2.5-flash", base_url=emu.gemini_base_url)  # noqa: E731
        billing = LlmAgent(
            name="billing", model=model(), instruction="Billing.", description="Billing specialist"
        )
        triage = LlmAgent(name="triage", model=model(), instruction="Triage.", sub_agents=[billing])
        events = _adk_run(emu, "I want a refund", streaming=False, agent=triage)
        log = emu.requests()
    assert [e.author for e in events if e.is_final_response()][-1] == "billing"
    assert _final_text(events) == "Billing: refund issued."
    assert log[0]["reply"]["tool_calls"] == [
        {"name": "transfer_to_agent", "arguments": '{"agent_name":"billing"}'}
    ]
    # billing sees triage's turn relayed as "For context:" user text; the cursor still advances
    assert [r["cursor"] for r in log] == [0, 1]


# -- claude-agent-sdk (bundled CLI) -------------------------------------------------------------


def _claude_options(emu: RunningEmulator, home: Path, **kw: Any) -> Any:
    sdk = pytest.importorskip("claude_agent_sdk")

    async def allow(name: str, tool_input: dict[str, Any], ctx: Any) -> Any:
        return sdk.PermissionResultAllow()

    home.mkdir(parents=True, exist_ok=True)
    return sdk.ClaudeAgentOptions(
        system_prompt="Answer weather questions.",
        model="claude-sonnet-4-6",
        permission_mode="default",
        can_use_tool=allow,
        max_turns=6,
        setting_sources=[],
        cwd=str(home),
        extra_args={"no-session-persistence": None},
        env={
            "ANTHROPIC_BASE_URL": emu.anthropic_base_url,
            "ANTHROPIC_API_KEY": DUMMY_ANTHROPIC_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        },
        **kw,
    )


def _claude_weather_server(calls: list[Any]) -> Any:
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("get_weather", "Get the weather for a city", WEATHER_TOOL_SCHEMA)
    async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": json.dumps({"forecast": f"sunny in {args['city']}"})}]}

    return create_sdk_mcp_server(name="weather", version="1.0.0", tools=[get_weather])


def _claude_run(prompt: str, options: Any) -> list[Any]:
    from claude_agent_sdk import query

    async def run() -> list[Any]:
        return [m async for m in query(prompt=prompt, options=options)]

    return asyncio.run(run())


@pytest.mark.slow
def test_claude_cli_two_turn_tool_conversation(tmp_path: Path) -> None:
    from claude_agent_sdk import AssistantMessage, ResultMessage, ThinkingBlock, ToolUseBlock

    script = json.loads(json.dumps(WEATHER))
    script["conversations"][0]["turns"][0]["thinking"] = "The user wants the weather; call the tool."
    calls: list[Any] = []
    with emulator(script) as emu:
        options = _claude_options(
            emu, tmp_path / "home", tools=[], mcp_servers={"weather": _claude_weather_server(calls)}
        )
        messages = _claude_run(Q, options)
        log = emu.requests()
    result = messages[-1]
    assert (
        isinstance(result, ResultMessage) and result.result == "FINAL: sunny in Paris" and not result.is_error
    )
    blocks = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content]
    assert any(isinstance(b, ThinkingBlock) for b in blocks)  # the CLI enables thinking; we answered with it
    uses = [b for b in blocks if isinstance(b, ToolUseBlock)]
    assert [u.name for u in uses] == ["mcp__weather__get_weather"]  # the declared name, not the script's
    assert calls == [{"city": "Paris"}]
    # what the CLI sent, from the request log
    assert [(r["path"], r["query"], r["cursor"]) for r in log] == [
        ("/v1/messages", {"beta": "true"}, 0),
        ("/v1/messages", {"beta": "true"}, 1),
    ]
    assert log[0]["headers"]["x-api-key"] == "<masked>"
    assert [t["name"] for t in log[0]["body"]["tools"]] == ["mcp__weather__get_weather"]
    assert "Answer weather questions." in json.dumps(log[0]["body"]["system"])
    assert "<system-reminder>" in json.dumps(log[0]["body"]["messages"][0])  # matched despite the reminders


@pytest.mark.slow
def test_claude_cli_pinned_fault_behaviour(tmp_path: Path) -> None:
    """The CLI answers both faults itself with an ``is_error`` tool_result and asks the model again:
    malformed JSON → ``InputValidationError … could not be parsed as JSON`` (the tool never runs);
    an undeclared tool → ``No such tool available: <name>``."""
    from claude_agent_sdk import ResultMessage

    for fault, expected in (
        (({"type": "malformed_arguments"}), "could not be parsed as JSON"),
        ({"type": "unknown_tool", "name": "delete_everything"}, "No such tool available: delete_everything"),
    ):
        calls: list[Any] = []
        with emulator(weather_with_fault(fault)) as emu:
            options = _claude_options(
                emu,
                tmp_path / fault["type"],
                tools=[],
                mcp_servers={"weather": _claude_weather_server(calls)},
            )
            messages = _claude_run(Q, options)
            log = emu.requests()
        assert calls == []
        assert isinstance(messages[-1], ResultMessage)
        result_block = log[1]["body"]["messages"][2]["content"][0]
        assert result_block["type"] == "tool_result" and result_block["is_error"] is True
        assert expected in json.dumps(result_block["content"])
        assert [r["cursor"] for r in log] == [0, 1]


@pytest.mark.slow
def test_claude_cli_handoff_through_agent_tool(tmp_path: Path) -> None:
    from claude_agent_sdk import AgentDefinition, ResultMessage

    with emulator(REFUND) as emu:
        options = _claude_options(
            emu,
            tmp_path / "home",
            tools=["Agent"],
            agents={
                "billing": AgentDefinition(
                    description="Billing specialist", prompt="You handle billing.", tools=[]
                )
            },
        )
        messages = _claude_run("I want a refund", options)
        log = emu.requests()
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Billing: refund issued."
    assert [(r["conversation"], r["cursor"]) for r in log] == [
        ("refund", 0),
        ("billing-sub", 0),
        ("refund", 1),
    ]
    call = log[0]["reply"]["tool_calls"][0]
    assert call["name"] in ("Agent", "Task")
    assert json.loads(call["arguments"])["subagent_type"] == "billing"
