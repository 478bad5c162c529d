"""An async chat loop on ``AsyncAnthropic`` as blog posts write it: the tools in a module of their own
(anth_shop_tools.py), the system prompt as text blocks with ``cache_control``, a ``while True`` loop that
stops when ``stop_reason`` is not ``tool_use``, and each tool called with the block's whole ``input`` dict."""

import asyncio
import json
import os

from anth_shop_tools import TOOL_HANDLERS, TOOLS
from anthropic import AsyncAnthropic

client = AsyncAnthropic(api_key=os.environ.get("ANTHROPIC_API_KEY"))
MODEL = "claude-sonnet-4-5-20250929"

SYSTEM = [
    {"type": "text", "text": "You are a travel helper for Globex."},
    {
        "type": "text",
        "text": "Use the tools for weather and money questions; never guess numbers.",
        "cache_control": {"type": "ephemeral"},
    },
]


async def run(question: str) -> str:
    messages = [{"role": "user", "content": question}]
    while True:
        response = await client.messages.create(
            model=MODEL,
            max_tokens=1024,
            system=SYSTEM,
            tools=TOOLS,
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            break
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = TOOL_HANDLERS[block.name](block.input)
                results.append(
                    {"type": "tool_result", "tool_use_id": block.id, "content": json.dumps(output)}
                )
        messages.append({"role": "user", "content": results})
    return "".join(b.text for b in response.content if b.type == "text")


if __name__ == "__main__":
    print(asyncio.run(run("Weather in Paris?")))
