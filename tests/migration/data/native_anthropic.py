"""A shop desk written directly on the anthropic SDK's tool runner: ``@beta_tool`` functions, a system
prompt and a model constant, kept as the runner's keyword arguments (``AGENT``), plus things with no
portable equivalent (a server tool, an Anthropic-only setting) that ``portagent import`` must list."""

from __future__ import annotations

import json

from anthropic import beta_async_tool, beta_tool
from anthropic.lib.tools import ToolError
from shop_data import FAQ, ORDERS

MODEL = "claude-sonnet-4-6"
SYSTEM = (
    "You are the shop's front desk. Read orders with get_order before you answer about one; use "
    "search_faq for general questions. Answer with the JSON summary."
)


@beta_tool
def get_order(order_id: str) -> str:
    """Read one order: its status and amount.

    Args:
        order_id: The order id, like ORD-7.
    """
    order = ORDERS.get(order_id)
    if order is None:
        return json.dumps({"ok": False, "error": "not_found", "message": f"no order {order_id}"})
    return json.dumps({"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]})


@beta_tool
def search_faq(query: str) -> str:
    """Search the shop's FAQ and return the best matching answer.

    Args:
        query: What to look for.
    """
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return json.dumps({"answer": hits[0] if hits else "No FAQ entry matches."})


SUMMARY = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string"}},
    "required": ["order_id", "status"],
    "additionalProperties": False,
}

AGENT = dict(
    model=MODEL,
    system=SYSTEM,
    max_tokens=1024,
    tools=[get_order, search_faq, {"type": "web_search_20250305", "name": "web_search"}],
    output_config={"format": {"type": "json_schema", "schema": SUMMARY}},
    tool_choice={"type": "auto"},
)
"""Used as ``client.beta.messages.tool_runner(**AGENT, messages=[...])``."""

client_factory = "not an agent"  # what the refusal test points at


@beta_async_tool
async def track_parcel(order_id: str) -> str:
    """Where a parcel is now (plain text, not JSON).

    Args:
        order_id: The order id, like ORD-7.
    """
    if order_id not in ORDERS:
        raise ToolError(f"no order {order_id}")
    return f"{order_id} is {ORDERS[order_id]['status']}"


ASYNC_AGENT = {"model": MODEL, "system": [{"type": "text", "text": SYSTEM}], "tools": [track_parcel]}
"""An async program's runner arguments (``AsyncAnthropic``): an async tool, the system prompt as text blocks."""
