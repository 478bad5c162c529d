"""A loop running two tools that take one dict: ``lookup`` in a worker thread
(``asyncio.to_thread(TOOLS[block.name], block.input)``: it is called with the input dict), ``define`` found
by name with ``getattr`` on the module (no call of it the import can follow: how it is called cannot be
known)."""

import asyncio
import sys

from anthropic import AsyncAnthropic

client = AsyncAnthropic()

tools = [
    {
        "name": "lookup",
        "description": "Look a word up.",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
    {
        "name": "define",
        "description": "Define a word.",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
]


def lookup(payload):
    return payload["word"].upper()


def define(payload):
    return f"{payload['word']}: a word"


TOOLS = {"lookup": lookup}


async def main(question: str) -> None:
    messages = [{"role": "user", "content": question}]
    while True:
        response = await client.messages.create(
            model="claude-haiku-4-5", max_tokens=300, system="Define words.", tools=tools, messages=messages
        )
        if response.stop_reason != "tool_use":
            return
        messages.append({"role": "assistant", "content": response.content})
        results = []
        for block in response.content:
            if block.type == "tool_use" and block.name in TOOLS:
                output = await asyncio.to_thread(TOOLS[block.name], block.input)
            elif block.type == "tool_use":
                output = getattr(sys.modules[__name__], block.name)(block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})
