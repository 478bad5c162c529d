"""Native agents that import only in part: an untyped tool (no schema can be produced), a tool taking
the SDK's context, and a tool built by hand; the typed tool must still be imported."""

from __future__ import annotations

from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, function_tool


@function_tool
def guess(x, y):  # type: ignore[no-untyped-def]
    """Combine two things nobody typed."""
    return {"x": x, "y": y}


@function_tool
def lookup(ctx: RunContextWrapper[Any], order_id: str) -> dict[str, Any]:
    """Look an order up (takes the SDK's run context).

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "context_given": ctx is not None}


@function_tool
def ping(text: str) -> dict[str, Any]:
    """Echo a text.

    Args:
        text: What to echo.
    """
    return {"echo": text}


async def _raw(ctx: Any, args: str) -> str:
    return args


handmade = FunctionTool(
    name="handmade",
    description="Built by hand.",
    params_json_schema={
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    on_invoke_tool=_raw,
)

partial = Agent(
    name="partial", instructions="Use the tools.", model="gpt-4.1-mini", tools=[guess, lookup, ping, handmade]
)
not_an_agent = {"name": "just a dict"}
