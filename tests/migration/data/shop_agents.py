"""The shop desk of the migration walkthrough (docs/migration.md), written with openai-agents: two read
tools, a refund specialist reached by a handoff, and a refund that needs approval."""

from __future__ import annotations

from typing import Any

from agents import Agent, function_tool
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


refunds = Agent(
    name="refunds",
    handoff_description="Refund disputes and lost parcels.",
    instructions="You handle refunds. Read the order with get_order, refund it with issue_refund, then say what you did.",
    model="gpt-4.1-mini",
    tools=[get_order, issue_refund],
)

desk = Agent(
    name="shop_desk",
    instructions="You are the shop's front desk. Read orders with get_order before you answer about one; use "
    "search_faq for general questions; pass refunds to the refunds specialist.",
    model="gpt-4.1-mini",
    tools=[get_order, search_faq],
    handoffs=[refunds],
)
