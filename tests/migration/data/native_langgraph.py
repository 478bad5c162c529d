"""A shop desk written directly with LangGraph's prebuilt ReAct agent: ``@tool`` functions, a prompt and a
ChatOpenAI model (pointed at ``SHOP_LLM_BASE_URL`` when set, e.g. the emulator), plus a hand-written graph
that ``portagent import`` must refuse."""

from __future__ import annotations

import os
import warnings
from typing import Any, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from shop_data import FAQ, ORDERS

with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
def get_order(order_id: str) -> dict[str, Any]:
    """Read one order: its status and amount."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"ok": False, "error": "not_found", "message": f"no order {order_id}"}
    return {"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]}


@tool
async def search_faq(query: str) -> dict[str, Any]:
    """Search the shop's FAQ and return the best matching answer."""
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return {"answer": hits[0] if hits else "No FAQ entry matches."}


model = ChatOpenAI(
    model="gpt-4.1-mini",
    base_url=os.environ.get("SHOP_LLM_BASE_URL"),
    api_key=os.environ.get("OPENAI_API_KEY") or "sk-portagent-dummy",
    temperature=0.2,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    desk = create_react_agent(
        model,
        [get_order, search_faq],
        prompt="You are the shop's front desk. Read orders with get_order before you answer about one; "
        "use search_faq for general questions.",
        name="shop_desk",
    )


class _State(TypedDict):
    text: str


def _shout(state: _State) -> dict[str, str]:
    return {"text": state["text"].upper()}


_graph = StateGraph(_State)
_graph.add_node("shout", _shout)
_graph.add_edge(START, "shout")
_graph.add_edge("shout", END)
custom = _graph.compile()
"""A hand-written graph: its node is arbitrary code."""
