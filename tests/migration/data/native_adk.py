"""A shop desk written directly with google-adk: function tools (a plain function and a ``FunctionTool``
that asks for confirmation), an LlmAgent sub-agent, an AgentTool, plus a callback, a built-in tool and
a Gemini-only setting that ``portagent import`` must list instead of dropping."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool, google_search
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.genai import types
from shop_data import FAQ, ORDERS, REFUNDS


def get_order(order_id: str) -> dict[str, Any]:
    """Read one order: its status and amount.

    Args:
      order_id: The order id, like ORD-7.
    """
    order = ORDERS.get(order_id)
    if order is None:
        return {"ok": False, "error": "not_found", "message": f"no order {order_id}"}
    return {"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]}


def search_faq(query: str) -> dict[str, Any]:
    """Search the shop's FAQ and return the best matching answer.

    Args:
      query: What to look for.
    """
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return {"answer": hits[0] if hits else "No FAQ entry matches."}


def issue_refund(order_id: str, amount_eur: float) -> dict[str, Any]:
    """Refund an order to the customer's card. Money leaves the shop.

    Args:
      order_id: The order to refund.
      amount_eur: How much, in euros.
    """
    REFUNDS.append({"order_id": order_id, "amount_eur": amount_eur})
    return {"refund_id": f"RF-{order_id}", "status": "refunded"}


def log_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
    return None


def shout(text):  # type: ignore[no-untyped-def]
    """Shout a text (nobody typed it: no schema can be produced)."""
    return {"text": str(text).upper()}


class StockTool(BaseTool):
    """A hand-written ADK tool: its own declaration, and run_async instead of a function."""

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema={
                "type": "object",
                "properties": {"sku": {"type": "string"}},
                "required": ["sku"],
            },
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        return {"sku": args["sku"], "in_stock": 3}


stock = StockTool(name="check_stock", description="How many units of a product are in stock.")


faq_expert = LlmAgent(
    name="faq_expert",
    model="gemini-2.5-flash",
    description="Interprets the FAQ for tricky questions.",
    instruction="You interpret the shop's FAQ. Search it with search_faq and answer in one sentence.",
    tools=[search_faq],
)

refunds_specialist = LlmAgent(
    name="refunds_specialist",
    model="gemini-2.5-flash",
    description="Refund disputes and lost parcels.",
    instruction="You handle refund disputes. Read the order with get_order, then answer.",
    tools=[get_order, FunctionTool(issue_refund, require_confirmation=True)],
)

desk = LlmAgent(
    name="shop_desk",
    model="gemini-2.5-flash",
    instruction="You are the shop's front desk. Read orders with get_order before you answer about one; ask "
    "faq_expert about the FAQ; transfer refund disputes to refunds_specialist.",
    tools=[get_order, AgentTool(faq_expert), google_search, shout, stock],
    sub_agents=[refunds_specialist],
    before_tool_callback=log_tool,
    generate_content_config=types.GenerateContentConfig(top_k=3),
)
