"""Native programs that `portagent import` once got wrong: tool parameters named like the generated
shims' own helpers' parameters (``target``, ``fn``, ``args``, ``kwargs``, ``self``) on every SDK whose
shim forwards keyword arguments; a LangGraph chat model whose integration fills ``max_tokens`` in from
the model's profile; a LangGraph tool that pauses with ``interrupt()``; a system prompt with blocks a
spec has no field for."""

from __future__ import annotations

import warnings
from typing import Any

from agents import Agent, RunContextWrapper, function_tool
from anthropic import beta_tool
from google.adk.agents import LlmAgent
from google.adk.tools import ToolContext
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_openai import ChatOpenAI
from langgraph.types import interrupt

with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


# --- parameters named like the shims' own ------------------------------------------------------------


@beta_tool
def aim(target: str, fn: str, self: str, args: str, kwargs: str) -> str:
    """Aim at a target."""
    return f"{target}|{fn}|{self}|{args}|{kwargs}"


ANTHROPIC = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "tools": [aim]}


@function_tool
def aim_ctx(ctx: RunContextWrapper[Any], target: str, fn: str, args: str, kwargs: str) -> str:
    """Aim at a target (takes the run context)."""
    return f"{target}|{fn}|{args}|{kwargs}|{ctx.context is not None}"


def aim_context(context: str, target: str, fn: str) -> str:
    """Aim at a target (a parameter named context)."""
    return f"{context}|{target}|{fn}"


OPENAI = Agent(
    name="aimer", instructions="Aim.", model="gpt-4.1-mini", tools=[aim_ctx, function_tool(aim_context)]
)


def aim_adk(target: str, fn: str, args: str, tool_context: ToolContext) -> str:
    """Aim at a target (takes ADK's tool context)."""
    return f"{target}|{fn}|{args}|{tool_context.state.get('n', 0)}"


ADK = LlmAgent(name="aimer", instruction="Aim.", model="gemini-2.5-flash", tools=[aim_adk])


@tool
def aim_lc(target: str, fn: str) -> str:
    """Aim at a target. (LangChain's own StructuredTool cannot take parameters named args, kwargs or
    self: its pydantic model renames the first two, its _run has a self.)"""
    return f"{target}|{fn}"


def _graph(model: Any, tools: list[Any], prompt: Any = "You aim things.") -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, prompt=prompt)


LANGGRAPH = _graph(ChatOpenAI(model="gpt-4.1-mini", api_key="sk-dummy"), [aim_lc])

# --- chat-model settings: the author's, or the integration's ---------------------------------------

ANTHROPIC_DEFAULTS = _graph(ChatAnthropic(model="claude-sonnet-4-6", api_key="sk-ant-dummy"), [aim_lc])
"""langchain-anthropic sets max_tokens from the model's profile (128000 here): not the author's."""
ANTHROPIC_SET = _graph(
    ChatAnthropic(model="claude-sonnet-4-6", api_key="sk-ant-dummy", max_tokens=1000, temperature=0.3),
    [aim_lc],
)
OPENAI_DEFAULTS = _graph(ChatOpenAI(model="gpt-4.1-mini", api_key="sk-dummy"), [aim_lc])
GEMINI_DEFAULTS = _graph(ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="dummy"), [aim_lc])
GEMINI_SET = _graph(
    ChatGoogleGenerativeAI(
        model="gemini-2.5-flash", google_api_key="dummy", max_output_tokens=500, temperature=0.7
    ),
    [aim_lc],
)
"""temperature=0.7 is also the class default: given by the program all the same."""

# --- a tool that pauses the graph -------------------------------------------------------------------


@tool
def book_hotel(hotel_name: str) -> str:
    """Book a hotel after a human reviews it."""
    response = interrupt({"action": "book_hotel", "args": {"hotel_name": hotel_name}})
    return f"Booked {hotel_name}." if response.get("type") == "accept" else "Booking cancelled."


def _ask_human(question: str) -> Any:
    return interrupt(question)


@tool
def refund(order_id: str) -> str:
    """Refund an order after asking a human (through a helper of the program's)."""
    return "refunded" if _ask_human(f"refund {order_id}?") else "kept"


INTERRUPTING = _graph(ChatOpenAI(model="gpt-4.1-mini", api_key="sk-dummy"), [book_hotel, refund, aim_lc])

# --- a system prompt with blocks beside its text -------------------------------------------------------

BLOCKS_PROMPT = _graph(
    ChatAnthropic(model="claude-sonnet-4-6", api_key="sk-ant-dummy", max_tokens=1000),
    [aim_lc],
    prompt=SystemMessage(
        content=[
            {"type": "text", "text": "Long policy handbook.", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/floorplan.png"}},
            {"type": "text", "text": "Answer briefly."},
        ]
    ),
)

# --- what a tool runner's dict holds of one run; a bad output schema; a factory ---------------------

SEEDED = {
    "model": "claude-sonnet-4-6",
    "system": "Desk.",
    "tools": [aim],
    "messages": [
        {"role": "user", "content": "Example: where is ORD-1?"},
        {"role": "assistant", "content": "ORD-1 est livrée. (Always answer in French.)"},
    ],
    "stream": True,
}
BAD_OUTPUT = {
    "model": "claude-sonnet-4-6",
    "system": "Desk.",
    "tools": [aim],
    "output_config": {"format": {"type": "json_schema", "schema": {"type": "objekt"}}},
}


def make_graph() -> Any:
    """A factory: the graph exists only once it is called."""
    return _graph(ChatOpenAI(model="gpt-4.1-mini", api_key="sk-dummy"), [aim_lc])
