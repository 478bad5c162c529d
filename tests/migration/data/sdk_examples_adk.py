"""A google-adk agent written the way ADK's own samples write them: tools taking ``tool_context`` and
writing ``tool_context.state``, a tool returning a pydantic model, one using ``tool_context.actions``
(no portable equivalent), a ``before_tool_callback``, and an ``output_schema`` model."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import ToolContext
from pydantic import BaseModel

PRICES = {"mug": 12.5, "tee": 20.0}


class CartTotal(BaseModel):
    count: int
    total_eur: float
    items: list[str]


class CartAnswer(BaseModel):
    count: int
    total_eur: float


def add_to_cart(item: str, tool_context: ToolContext) -> dict[str, Any]:
    """Add an item to the shopping cart kept in session state.

    Args:
        item: The item to add (mug or tee).
    """
    cart = list(tool_context.state.get("cart", []))
    cart.append(item)
    tool_context.state["cart"] = cart
    return {"status": "added", "count": len(cart), "agent": tool_context.agent_name}


def cart_total(tool_context: ToolContext) -> CartTotal:
    """Total of the cart kept in session state."""
    cart = list(tool_context.state.get("cart", []))
    return CartTotal(count=len(cart), total_eur=sum(PRICES.get(i, 0.0) for i in cart), items=cart)


def escalate(reason: str, tool_context: ToolContext) -> dict[str, str]:
    """Hand the conversation to a person.

    Args:
        reason: Why.
    """
    tool_context.actions.escalate = True
    return {"status": "escalated", "reason": reason}


def audit(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
    return None


cart_agent = LlmAgent(
    name="cart_agent",
    model="gemini-2.5-flash",
    description="Keeps the shopping cart.",
    instruction="Add what the customer asks for with add_to_cart, then read cart_total and answer.",
    tools=[add_to_cart, cart_total, escalate],
    before_tool_callback=audit,
    output_schema=CartAnswer,
)
