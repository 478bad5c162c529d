"""A shop desk written directly with the Claude Agent SDK: SDK MCP tools, a granted built-in (Read), a
subagent, and options with no portable equivalent (a permission mode, a hook) that ``portagent import``
must list instead of dropping."""

from __future__ import annotations

import json
from typing import Any

from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, HookMatcher, create_sdk_mcp_server, tool
from shop_data import FAQ, ORDERS


def _text(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(value)}]}


@tool(
    "get_order",
    "Read one order: its status and amount.",
    {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order id, like ORD-7."}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
)
async def get_order(args: dict[str, Any]) -> dict[str, Any]:
    order = ORDERS.get(args["order_id"])
    if order is None:
        return {"content": [{"type": "text", "text": f"no order {args['order_id']}"}], "is_error": True}
    return _text({"order_id": args["order_id"], "status": order["status"], "amount_eur": order["amount_eur"]})


@tool("search_faq", "Search the shop's FAQ and return the best matching answer.", {"query": str})
async def search_faq(args: dict[str, Any]) -> dict[str, Any]:
    hits = [text for key, text in FAQ.items() if key in args["query"].lower()]
    return _text({"answer": hits[0] if hits else "No FAQ entry matches."})


async def audit(data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
    return {}


shop = create_sdk_mcp_server("shop", version="1.0.0", tools=[get_order, search_faq])

options = ClaudeAgentOptions(
    system_prompt="You are the shop's front desk. Read orders with get_order before you answer about one; ask "
    "the faq-expert subagent about the FAQ; read local notes with Read when asked.",
    model="claude-sonnet-4-6",
    mcp_servers={"shop": shop},
    tools=["Read"],
    allowed_tools=["mcp__shop__search_faq", "Read"],
    permission_mode="acceptEdits",
    max_turns=8,
    agents={
        "faq-expert": AgentDefinition(
            description="Interprets the FAQ for tricky questions.",
            prompt="You interpret the shop's FAQ. Search it with search_faq and answer in one sentence.",
            tools=["mcp__shop__search_faq"],
        )
    },
    hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[audit])]},
)
