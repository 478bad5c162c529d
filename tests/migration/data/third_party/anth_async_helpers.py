"""An async agent: ``AsyncAnthropic``, the tools built by a helper function, the request settings in a
module-level dict spread into the call, and a parameter-driven prompt the importer cannot read."""

import asyncio

from anthropic import AsyncAnthropic, beta_async_tool

DEFAULT_MODEL = "claude-haiku-4-5"
SETTINGS = {"max_tokens": 2048, "temperature": 0.2}


@beta_async_tool
async def search_docs(query: str, limit: int = 5) -> str:
    """Search the product documentation.

    Args:
        query: Words to look for.
        limit: How many hits to return.
    """
    return f"{limit} hits for {query}"


@beta_async_tool
async def open_ticket(title: str, priority: str) -> str:
    """Open a support ticket.

    Args:
        title: One-line summary.
        priority: low, normal or high.
    """
    return "T-1"


def build_tools():
    return [search_docs, open_ticket]


async def answer(question: str, persona: str) -> str:
    client = AsyncAnthropic()
    runner = client.beta.messages.tool_runner(
        model=DEFAULT_MODEL,
        tools=build_tools(),
        system=f"You are {persona}.",
        messages=[{"role": "user", "content": question}],
        **SETTINGS,
    )
    final = await runner.until_done()
    return final.content[0].text


if __name__ == "__main__":
    asyncio.run(answer("How do I reset my password?", "a support agent"))
