"""Adapter overhead: the same two-tool conversation through portagent vs through the bare SDK.

Both sides run the vendor's real runtime against portagent's emulator (same script, same tools, same
handlers), N times in one process; the ratio of medians is portagent's cost (gateway, policy, trace).
Goals: ≤ 1.15 for openai-agents, google-adk, the anthropic tool runner and LangGraph, ≤ 1.10 for the Claude Agent
SDK (the CLI start dominates). Prints numbers (and peak memory) only; asserts nothing.

    python benchmarks/adapter_overhead.py [--quick] [--providers openai,adk,claude,anthropic,langgraph] [-n N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Both sides share one TLS context per process (building one costs ~15 ms), so the ratio measures
# portagent's own per-run work, not client construction.
import ssl  # noqa: E402

_TLS = ssl.create_default_context()
SUPPORT = REPO / "examples" / "support_desk"
sys.path.insert(0, str(SUPPORT))
sys.path.insert(0, str(REPO / "benchmarks" / "data"))  # bench_handlers.py
BENCH_AGENT = REPO / "benchmarks" / "data" / "bench_agent.yaml"
QUESTION = "Case EXP-42: what is missing and what do the rules say about documents?"


_SPECS: dict[str, Any] = {}


def _tool_specs() -> dict[str, Any]:
    """Loaded once, like the portagent side's bundle: both sides pay only per-run costs."""
    if not _SPECS:
        from portagent.contracts.bundle import load_agent

        _SPECS.update(load_agent(BENCH_AGENT).node.tools)
    return _SPECS


async def bare_openai(base_url: str) -> str:
    import openai
    import support_desk_handlers as h
    from agents import Agent, FunctionTool, OpenAIResponsesModel, Runner, set_trace_processors

    set_trace_processors([])
    specs = _tool_specs()

    def make(name: str, fn: Any) -> FunctionTool:
        async def invoke(ctx: Any, args: str) -> str:
            return json.dumps(fn(**json.loads(args)))

        spec = specs[name]
        return FunctionTool(
            name=name,
            description=spec.model_description(),
            params_json_schema=spec.input_schema,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    client = openai.AsyncOpenAI(
        base_url=base_url + "/v1",
        api_key="sk-bench",
        http_client=openai.DefaultAsyncHttpx2Client(verify=_TLS),
    )
    agent = Agent(
        name="support_desk",
        instructions="bench",
        model=OpenAIResponsesModel("gpt-4.1-mini", client),
        tools=[make("get_student_record", h.get_student_record), make("search_policy", h.search_policy)],
    )
    result = await Runner.run(agent, QUESTION)
    await client.close()
    return str(result.final_output)


async def bare_adk(base_url: str) -> str:
    import support_desk_handlers as h
    from google.adk.agents import LlmAgent
    from google.adk.models import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import BaseTool
    from google.genai import types

    specs = _tool_specs()

    class Tool(BaseTool):
        def __init__(self, name: str, fn: Any) -> None:
            super().__init__(name=name, description=specs[name].model_description())
            self._fn = fn

        def _get_declaration(self) -> Any:
            return types.FunctionDeclaration(
                name=self.name,
                description=self.description,
                parameters_json_schema=specs[self.name].input_schema,
            )

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            return self._fn(**args)

    import httpx

    http = httpx.AsyncClient(verify=_TLS)
    options = types.HttpOptions(
        base_url=base_url,
        httpx_async_client=http,
        client_args={"verify": _TLS},
        async_client_args={"verify": _TLS, "ssl": _TLS},
    )
    gemini = Gemini(
        model="gemini-2.5-flash",
        client_kwargs={"api_key": "bench-dummy-key", "vertexai": False, "http_options": options},
    )
    agent = LlmAgent(
        name="support_desk",
        model=gemini,
        instruction="bench",
        tools=[Tool("get_student_record", h.get_student_record), Tool("search_policy", h.search_policy)],
    )
    sessions = InMemorySessionService()
    runner = Runner(app_name="bench", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="bench", user_id="u")
    final = ""
    async for ev in runner.run_async(
        user_id="u",
        session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text=QUESTION)]),
    ):
        if ev.is_final_response() and ev.content and ev.content.parts:
            final = ev.content.parts[0].text or ""
    await runner.close()
    await http.aclose()
    return final


_BUNDLES: dict[bool, Any] = {}


async def bare_claude(base_url: str) -> str:
    """A bare ``ClaudeSDKClient`` with the same two in-process tools, the same isolation switches."""
    import tempfile

    import support_desk_handlers as h
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        ClaudeSDKClient,
        PermissionResultAllow,
        ResultMessage,
        create_sdk_mcp_server,
        tool,
    )

    specs = _tool_specs()

    def make(name: str, fn: Any) -> Any:
        @tool(name, specs[name].model_description(), specs[name].input_schema)
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": json.dumps(fn(**args))}]}

        return handler

    async def allow(name: str, data: dict[str, Any], ctx: Any) -> Any:
        return PermissionResultAllow()

    home = tempfile.mkdtemp(prefix="bench-claude-")
    server = create_sdk_mcp_server(
        "portagent",
        tools=[make("get_student_record", h.get_student_record), make("search_policy", h.search_policy)],
    )
    options = ClaudeAgentOptions(
        system_prompt="bench",
        model="claude-sonnet-4-6",
        tools=[],
        mcp_servers={"portagent": server},
        permission_mode="default",
        can_use_tool=allow,
        setting_sources=[],
        cwd=home,
        extra_args={"no-session-persistence": None},
        env={
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            "HOME": home,
            "CLAUDE_CONFIG_DIR": home + "/.claude",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
    )
    final = ""
    client = ClaudeSDKClient(options)
    await client.connect()
    try:
        await client.query(QUESTION)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                final = message.result or ""
    finally:
        await client.disconnect()
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    return final


async def bare_anthropic(base_url: str) -> str:
    """The anthropic SDK's tool runner with the same two tools (the loop the anthropic adapter drives)."""
    import anthropic
    import support_desk_handlers as h
    from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool

    specs = _tool_specs()

    class Tool(BetaAsyncBuiltinFunctionTool):
        def __init__(self, name: str, fn: Any) -> None:
            self._name, self._fn = name, fn

        def to_dict(self) -> Any:
            spec = specs[self._name]
            return {
                "name": self._name,
                "description": spec.model_description(),
                "input_schema": spec.input_schema,
            }

        async def call(self, input: object) -> Any:
            return json.dumps(self._fn(**input))  # type: ignore[arg-type]

    client = anthropic.AsyncAnthropic(
        base_url=base_url,
        api_key="sk-ant-bench",
        http_client=anthropic.DefaultAsyncHttpxClient(verify=_TLS),
        # the SDK's own OTel spans off, as on the portagent side (which writes its own trace) and as bare_openai
        # sets no trace processors: on, they are work the portagent side never does (~1% of this side's CPU)
        open_telemetry=False,
    )
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-4-6",
        max_tokens=4096,
        system="bench",
        messages=[{"role": "user", "content": QUESTION}],
        tools=[Tool("get_student_record", h.get_student_record), Tool("search_policy", h.search_policy)],
        thread=False,
    )
    message = await runner.until_done()
    await client.close()
    return "".join(b.text for b in message.content if b.type == "text")


async def bare_langgraph(base_url: str) -> str:
    """The same two-node StateGraph (model, tools) over ChatOpenAI, tools called directly."""
    from typing import Annotated, TypedDict

    import openai
    import support_desk_handlers as h
    from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    specs = _tool_specs()
    fns = {"get_student_record": h.get_student_record, "search_policy": h.search_policy}
    tools = [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": specs[n].model_description(),
                "parameters": specs[n].input_schema,
            },
        }
        for n in fns
    ]
    http = openai.DefaultAsyncHttpx2Client(verify=_TLS)
    model = ChatOpenAI(
        model="gpt-4.1-mini",
        api_key="sk-bench",  # type: ignore[arg-type]
        base_url=base_url + "/v1",
        http_async_client=http,
        use_responses_api=True,
    ).bind_tools(tools)

    # functional form: the graph reads real types (this module's annotations are strings)
    State = TypedDict("State", {"messages": Annotated[list[AnyMessage], add_messages]})  # noqa: UP013

    async def call_model(state: State) -> dict[str, Any]:
        return {"messages": [await model.ainvoke([SystemMessage("bench"), *state["messages"]])]}

    async def call_tools(state: State) -> dict[str, Any]:
        last: Any = state["messages"][-1]
        return {
            "messages": [
                ToolMessage(json.dumps(fns[c["name"]](**c["args"])), tool_call_id=c["id"])
                for c in last.tool_calls
            ]
        }

    graph = StateGraph(State)
    graph.add_node("model", call_model)
    graph.add_node("tools", call_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges(
        "model", lambda s: "tools" if s["messages"][-1].tool_calls else END, {"tools": "tools", END: END}
    )
    graph.add_edge("tools", "model")
    result = await graph.compile().ainvoke({"messages": [HumanMessage(QUESTION)]})
    await http.aclose()
    return str(result["messages"][-1].text)


def peak_rss_mb() -> tuple[float, float]:
    """Peak RSS of this process and of its (finished) children, in MB (the CLI is a child)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


async def through_portagent(provider: str, base_url: str, key: str, *, async_handlers: bool = False) -> str:
    """The agent spec is loaded once (as an application would); each run builds its native agent.

    ``async_handlers``: the same two functions wrapped in ``async def`` (data/bench_handlers.py), the shape the
    bare side's tools have: they run on the event loop, where the spec's sync handlers each hop to a
    worker thread (the hop that lets portagent enforce ``timeout_ms`` on a sync function)."""
    from portagent.adapters.port import Endpoint
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, arun_full

    out = await arun_full(
        _bundle(async_handlers),
        RunRequest(input=QUESTION, provider=provider),  # type: ignore[arg-type]
        RunConfig(endpoint=Endpoint(base_url=base_url, api_key=key)),
    )
    return str(out.result.final_output)


def _bundle(async_handlers: bool) -> Any:
    if async_handlers not in _BUNDLES:
        from portagent.contracts.bundle import load_agent

        bundle = load_agent(BENCH_AGENT)
        if async_handlers:
            tools = bundle.node.tools
            for name, spec in list(tools.items()):
                tools[name] = spec.model_copy(update={"handler": f"bench_handlers:{name}"})
        _BUNDLES[async_handlers] = bundle
    return _BUNDLES[async_handlers]


def paired(sides: list[Any], n: int) -> list[tuple[float, float, list[float]]]:
    """The sides alternate run by run, in a rotating order (bare, portagent, …), so drift on a shared
    machine hits all alike. Returns each side's first (cold) run, its median, and (against side 0, the
    bare SDK) the per-round ratios."""
    times: list[list[float]] = [[] for _ in sides]
    for i in range(n + 1):
        order = list(range(len(sides)))
        order = order[i % len(order) :] + order[: i % len(order)]
        for k in order:
            t0 = time.perf_counter()
            asyncio.run(sides[k]())
            times[k].append(time.perf_counter() - t0)
    base = times[0][1:]
    return [
        (t[0], statistics.median(t[1:]), [x / b for x, b in zip(t[1:], base, strict=True)]) for t in times
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="2 runs per side after a first (CI smoke)")
    ap.add_argument("--providers", default="openai,adk,claude,anthropic,langgraph")
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument(
        "--emulator",
        choices=("subprocess", "thread"),
        default="subprocess",
        help="where the emulator runs: its own process, like a real server (default), or a thread of this "
        "one (its request handling then competes with both sides for this process's GIL)",
    )
    args = ap.parse_args()
    n = 2 if args.quick else args.n
    import os
    import tempfile

    os.environ.setdefault("PORTAGENT_HOME", tempfile.mkdtemp(prefix="portagent-bench-"))
    os.environ.setdefault("GOOGLE_API_KEY", "bench-dummy-key")
    from portagent.emulator import load_script, serve

    keys = {
        "openai": "sk-bench",
        "adk": "bench-dummy-key",
        "claude": "sk-ant-bench",
        "anthropic": "sk-ant-bench",
        "langgraph": "sk-bench",
    }
    bare = {
        "openai": bare_openai,
        "adk": bare_adk,
        "claude": bare_claude,
        "anthropic": bare_anthropic,
        "langgraph": bare_langgraph,
    }
    with serve(load_script(SUPPORT / "emulator.yaml"), mode=args.emulator) as emu:
        for provider in [p.strip() for p in args.providers.split(",") if p.strip()]:
            if provider not in bare:
                print(f"{provider}: no bare baseline in this script")
                continue
            sides = [
                lambda p=provider: bare[p](emu.base_url),
                lambda p=provider: through_portagent(p, emu.base_url, keys[p]),
                lambda p=provider: through_portagent(p, emu.base_url, keys[p], async_handlers=True),
            ]
            labels = ["bare", "portagent", "portagent, async handlers"]
            try:
                results = paired(sides, n)
            except Exception as e:  # an adapter not installed or not working: say so, keep going
                print(f"{provider}: skipped ({type(e).__name__}: {e})")
                continue
            goal = "1.10" if provider == "claude" else "1.15"
            b_med = results[0][1]
            for label, (first, med, ratios) in zip(labels, results, strict=True):
                print(
                    f"{provider:9s} {label:26s} first {first * 1000:7.1f} ms  median {med * 1000:7.2f} ms  (n={n})"
                )
                if label == "bare":
                    continue
                q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
                print(
                    f"{provider:9s} {label:26s} ratio to bare {med / b_med:5.2f}  (goal <= {goal}); per round: "
                    f"median {statistics.median(ratios):.2f}, quartiles {q[0]:.2f}-{q[2]:.2f}"
                )
    me, kids = peak_rss_mb()
    print(f"peak RSS: this process {me:.0f} MB, largest child (the Claude CLI) {kids:.0f} MB")


if __name__ == "__main__":
    main()
