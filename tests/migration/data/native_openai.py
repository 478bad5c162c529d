"""A shop desk written directly with openai-agents: function tools (one needing approval), a handoff to a
specialist, an output type, plus things with no portable equivalent (a hosted tool, a guardrail, a
vendor-only model setting) that ``portagent import`` must list instead of dropping."""

from __future__ import annotations

from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    ModelSettings,
    WebSearchTool,
    function_tool,
    input_guardrail,
)
from pydantic import BaseModel
from shop_data import FAQ, ORDERS, REFUNDS


@function_tool
def get_order(order_id: str) -> dict[str, Any]:
    """Read one order: its status and amount.

    Args:
        order_id: The order id, like ORD-7.
    """
    order = ORDERS.get(order_id)
    if order is None:
        return {"ok": False, "error": "not_found", "message": f"no order {order_id}"}
    return {"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]}


@function_tool
def search_faq(query: str) -> dict[str, Any]:
    """Search the shop's FAQ and return the best matching answer.

    Args:
        query: What to look for.
    """
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return {"answer": hits[0] if hits else "No FAQ entry matches."}


@function_tool(needs_approval=True)
def issue_refund(order_id: str, amount_eur: float) -> dict[str, Any]:
    """Refund an order to the customer's card. Money leaves the shop.

    Args:
        order_id: The order to refund.
        amount_eur: How much, in euros.
    """
    REFUNDS.append({"order_id": order_id, "amount_eur": amount_eur})
    return {"refund_id": f"RF-{order_id}", "status": "refunded"}


@input_guardrail
async def no_insults(ctx: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="idiot" in str(text).lower())


class OrderSummary(BaseModel):
    order_id: str
    status: str


refunds_specialist = Agent(
    name="refunds_specialist",
    handoff_description="Refund disputes and lost parcels.",
    instructions="You handle refund disputes. Read the order with get_order, then answer with the JSON summary.",
    model="gpt-4.1-mini",
    tools=[get_order, issue_refund],
)

desk = Agent(
    name="shop_desk",
    instructions="You are the shop's front desk. Read orders with get_order before you answer about one; use "
    "search_faq for general questions; hand refund disputes to refunds_specialist.",
    model="gpt-4.1-mini",
    model_settings=ModelSettings(parallel_tool_calls=False),
    tools=[get_order, search_faq, WebSearchTool()],
    handoffs=[refunds_specialist],
    output_type=OrderSummary,
    input_guardrails=[no_insults],
)
